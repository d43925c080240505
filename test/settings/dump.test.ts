// Spec (What to back up): "A dump without the key does not reveal secrets". A real plain-text pg_dump
// of a PostgreSQL database that holds a stored secret, personal API tokens, a password and password
// links must not contain any of them, while ordinary data (e-mail addresses) is in it.
// needs: pg_dump
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TEST_DB, onlyOn, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

onlyOn('postgres', test, 4, () => {
  const KEY = randomBytes(32).toString('base64');
  const SECRET_VALUE = `123456:dump-sentinel-bot-token-${randomBytes(16).toString('hex')}`;
  const USER_EMAIL = `dumped-user-${randomBytes(4).toString('hex')}@example.test`;
  const USER_PASSWORD = `dump-sentinel-password-${randomBytes(8).toString('hex')}`;

  let dbEnv: Record<string, string>;
  let drop: () => Promise<void>;
  let server: RunningServer;
  const secrets: Record<string, string> = {};
  let dump = '';

  test.before(async () => {
    const fresh = await serverDbEnv();
    dbEnv = fresh.env;
    drop = fresh.cleanup;
    server = await startServer({ dbEnv, admin: true, env: { APP_ENCRYPTION_KEY: KEY } });
  });
  test.after(async () => {
    await server?.cleanup();
    await drop?.();
  });

  test('store a secret, make API tokens, set a password (all through the API)', async () => {
    // A chat channel's bot token (given) and a webhook's signing secret (made by the server), both stored encrypted.
    const channel = await server.api('/api/notifications/channels', { method: 'POST', json: { type: 'telegram', botToken: SECRET_VALUE, chatId: '-1001' } });
    assert.is(channel.status, 201);
    const hook = await server.api('/api/webhooks', { method: 'POST', json: { url: 'https://hooks.example/dump', events: ['pr.merged'] } });
    assert.is(hook.status, 201);
    secrets.webhookSecret = (await hook.json()).secret;

    const tok = await server.api('/api/tokens', { method: 'POST', json: { name: 'dump-check' } });
    assert.is(tok.status, 201);
    secrets.apiToken = (await tok.json()).token;
    assert.match(secrets.apiToken, /^svc_pat_/);
    secrets.adminToken = server.admin.token;
    secrets.adminPassword = server.admin.password;

    const made = await server.api('/api/users', { method: 'POST', json: { email: USER_EMAIL, name: 'Dumped User' } });
    assert.is(made.status, 201);
    const link = /token=([\w-]+)/.exec((await made.json()).passwordSetUrl)![1];
    secrets.usedLink = link;
    const set = await fetch(`${server.url}/api/password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: link, password: USER_PASSWORD }) });
    assert.is(set.status, 200);
    secrets.userPassword = USER_PASSWORD;
    // An outstanding (unused) reset link, too.
    const userId = (await (await server.api('/api/users')).json()).users.find((u: { email: string }) => u.email === USER_EMAIL).id;
    const reset = await server.api(`/api/users/${userId}/password-link`, { method: 'POST' });
    assert.is(reset.status, 201);
    secrets.openLink = /token=([\w-]+)/.exec((await reset.json()).passwordSetUrl)![1];

    // The user can sign in, so the password really is stored.
    const signIn = await fetch(`${server.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: USER_EMAIL, password: USER_PASSWORD }) });
    assert.is(signIn.status, 200);
    // The token works, so it really is stored.
    assert.is((await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${secrets.apiToken}` } })).status, 200);
  });

  test('pg_dump (plain) of the database runs and is a real dump of this data', async () => {
    const out = spawnSync('pg_dump', ['--dbname', dbEnv.DATABASE_URL], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    assert.is(out.status, 0, out.stderr);
    dump = out.stdout;
    assert.match(dump, /PostgreSQL database dump/);
    assert.ok(dump.includes(USER_EMAIL), "the user's e-mail is in the dump");
    assert.ok(dump.includes('admin@example.test'), "the admin's e-mail is in the dump");
    assert.match(dump, /COPY public\.webhooks /, 'the webhooks and chat channels are dumped');
    assert.ok((dump.match(/\tv1\.[0-9a-f]{16}\./g)?.length ?? 0) >= 2, 'their secrets are there, as ciphertexts');
    assert.match(dump, /COPY public\.api_tokens /);
    // Tokens are there as SHA-256 only.
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    assert.ok(dump.includes(sha(secrets.apiToken)), 'the API token row is in the dump (as its hash)');
  });

  test('the dump contains no secret value, API token, password or link token — in any common encoding', async () => {
    assert.ok(dump.length > 1000);
    const encodings = (s: string) => [s, Buffer.from(s).toString('base64'), Buffer.from(s).toString('base64url'), Buffer.from(s).toString('hex')];
    for (const [what, value] of Object.entries({ secretValue: SECRET_VALUE, ...secrets })) {
      for (const form of encodings(value)) {
        assert.not.ok(dump.includes(form), `${what} appears in the dump`);
      }
    }
    // Not even the distinctive part of a token (without its svc_pat_ prefix).
    assert.not.ok(dump.includes(secrets.apiToken.slice('svc_pat_'.length)), 'the token body appears in the dump');
    assert.not.ok(dump.includes(secrets.adminToken.slice('svc_pat_'.length)), 'the admin token body appears in the dump');
    // Nor the key that would decrypt the secrets.
    assert.not.ok(dump.includes(KEY), 'APP_ENCRYPTION_KEY appears in the dump');
    assert.not.ok(dump.includes(Buffer.from(KEY, 'base64').toString('hex')), 'APP_ENCRYPTION_KEY (hex) appears in the dump');
  });

  test('the server log does not contain them either', async () => {
    const out = server.output();
    for (const [what, value] of Object.entries({ secretValue: SECRET_VALUE, ...secrets })) {
      assert.not.ok(out.includes(value), `${what} appears in the server log`);
    }
  });
});

test.run();
