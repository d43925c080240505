import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../functions/lib/config.ts';
import { startServer } from '../helpers/server.ts';

const problems = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

test('defaults: PGlite in ./data/pglite, port 8080, retention per the spec', () => {
  const c = loadConfig({});
  assert.is(c.DATABASE_DRIVER, 'pglite');
  assert.is(c.PGLITE_DATA_DIR, './data/pglite');
  assert.is(c.PORT, 8080);
  assert.is(c.ACTIVITY_RETENTION_DAYS, 180);
  assert.is(c.ACTIVITY_RETENTION_CRON, '30 4 * * *');
  assert.is(c.DELIVERY_RETENTION_CRON, '45 4 * * *');
  assert.is(c.CODEHOST_DELIVERY_RETENTION_CRON, '50 4 * * *');
  assert.is(c.AUDIT_VERIFY_CRON, '0 3 * * *');
  assert.is(c.WEBHOOKS_WORKER_ENABLED, true);
  assert.is(c.APP_ENCRYPTION_KEY, undefined);
});

test('driver inferred from DATABASE_URL; neon selectable; empty values count as unset', () => {
  assert.is(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).DATABASE_DRIVER, 'postgres');
  assert.is(loadConfig({ DATABASE_URL: 'postgres://u@ep-x.eu-central-1.aws.neon.tech/db' }).DATABASE_DRIVER, 'neon');
  assert.is(loadConfig({ DATABASE_URL: 'postgres://u@h/db', DATABASE_DRIVER: 'neon' }).DATABASE_DRIVER, 'neon');
  assert.is(loadConfig({ DATABASE_URL: '', PORT: '' }).DATABASE_DRIVER, 'pglite');
  assert.equal(problems({ DATABASE_DRIVER: 'postgres' }), ['DATABASE_URL is required when DATABASE_DRIVER=postgres']);
});

test('each bad value names its variable', () => {
  const bad = problems({
    PORT: 'eighty',
    ACTIVITY_RETENTION_DAYS: '0',
    AUDIT_VERIFY_CRON: 'every night',
    WEBHOOKS_WORKER_ENABLED: 'maybe',
    DATABASE_URL: 'mysql://x',
    PUBLIC_URL: 'ftp://x',
  });
  for (const name of ['PORT', 'ACTIVITY_RETENTION_DAYS', 'AUDIT_VERIFY_CRON', 'WEBHOOKS_WORKER_ENABLED', 'DATABASE_URL', 'PUBLIC_URL']) {
    assert.ok(bad.some((p) => p.startsWith(name + ' ')), `${name} named in ${JSON.stringify(bad)}`);
  }
});

test('LIVE_MAX_SOCKETS_PER_USER: 20 by default, a whole number from 1 to 10000', () => {
  assert.is(loadConfig({}).LIVE_MAX_SOCKETS_PER_USER, 20);
  assert.is(loadConfig({ LIVE_MAX_SOCKETS_PER_USER: '3' }).LIVE_MAX_SOCKETS_PER_USER, 3);
  for (const bad of ['0', '10001', 'many', '2.5']) {
    const p = problems({ LIVE_MAX_SOCKETS_PER_USER: bad });
    assert.ok(p.some((x) => x.startsWith('LIVE_MAX_SOCKETS_PER_USER ')), `${bad}: ${JSON.stringify(p)}`);
  }
});

test('HOST: IP literals and host names are taken as they are', () => {
  for (const host of ['0.0.0.0', '127.0.0.1', '::', '::1', 'fd00::5', 'localhost', 'svc-host.internal', 'a.b-c.example']) {
    assert.is(loadConfig({ HOST: host }).HOST, host);
  }
});

for (const host of ['http://0.0.0.0', '0.0.0.0:8080', '[::1]', 'my host', 'under_score.example', '-lead.example', 'a..b']) {
  test(`HOST ${JSON.stringify(host)} → refused naming HOST, with what it must be`, () => {
    assert.equal(problems({ HOST: host }), ['HOST must be an IP address or a host name (e.g. 0.0.0.0, 127.0.0.1, ::)']);
  });
}

test('PUBLIC_URL: http(s) with or without a path prefix; trailing slashes dropped', () => {
  assert.is(loadConfig({ PUBLIC_URL: 'https://svc.example.com/' }).PUBLIC_URL, 'https://svc.example.com');
  assert.is(loadConfig({ PUBLIC_URL: 'https://svc.example.com' }).PUBLIC_URL, 'https://svc.example.com');
  assert.is(loadConfig({ PUBLIC_URL: 'http://10.0.0.5:8080/tools/svc/' }).PUBLIC_URL, 'http://10.0.0.5:8080/tools/svc');
});

for (const url of ['ftp://svc.example.com/', 'https://user:pw@svc.example.com/', 'https://user@svc.example.com/', 'https://svc.example.com/?x=1', 'https://svc.example.com/?', 'https://svc.example.com/#top', 'svc.example.com']) {
  test(`PUBLIC_URL ${JSON.stringify(url)} → refused naming PUBLIC_URL, the value not echoed`, () => {
    const bad = problems({ PUBLIC_URL: url });
    assert.equal(bad, ['PUBLIC_URL must be an http(s) URL without credentials, query or fragment (a path prefix is allowed)']);
  });
}

test('an enum setting says its choices in plain words', () => {
  assert.equal(problems({ LOG_LEVEL: 'loud' }), ['LOG_LEVEL must be one of debug, info, warn, error']);
});

test('WEBHOOKS_WORKER_ENABLED=false is parsed as false', () => {
  assert.is(loadConfig({ WEBHOOKS_WORKER_ENABLED: 'false' }).WEBHOOKS_WORKER_ENABLED, false);
  assert.is(loadConfig({ WEBHOOKS_WORKER_ENABLED: '0' }).WEBHOOKS_WORKER_ENABLED, false);
});

test('APP_ENCRYPTION_KEY must be 32 bytes of base64; the message never contains the value', () => {
  const good = Buffer.alloc(32, 7).toString('base64');
  assert.is(loadConfig({ APP_ENCRYPTION_KEY: good }).APP_ENCRYPTION_KEY, good);
  const secret = 'my-secret-but-too-short-key';
  const bad = problems({ APP_ENCRYPTION_KEY: secret });
  assert.is(bad.length, 1);
  assert.ok(bad[0].startsWith('APP_ENCRYPTION_KEY '));
  assert.not.ok(bad.join(' ').includes(secret));
});

test('server with a bad setting exits 1, names the variable, never serves /health', async () => {
  const secret = 'c2hvcnQ-but-secret-value';
  const s = await startServer({ env: { PORT: '70000', APP_ENCRYPTION_KEY: secret }, expectExit: true });
  try {
    assert.is(await s.exited, 1);
    assert.match(s.output(), /PORT must be at most 65535/);
    assert.match(s.output(), /APP_ENCRYPTION_KEY must be 32 random bytes/);
    assert.not.ok(s.output().includes(secret), 'secret value not printed');
    assert.not.match(s.output(), /listening/);
  } finally {
    await s.cleanup();
  }
});

test.run();
