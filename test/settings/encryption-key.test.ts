// Where the encryption key of stored secrets comes from (issue 12, item 3), against the real server.
// Embedded database without APP_ENCRYPTION_KEY: the first start generates `encryption.key` beside the
// data directory (0600, never inside it), logs its path and fingerprint once, and a webhook can be made
// at once; later starts reuse it silently; APP_ENCRYPTION_KEY set wins (a disagreeing file → WARN).
// With DATABASE_URL and no key: still 409 encryption_key_missing. The key is never logged or answered.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { keyId } from '../../functions/lib/crypto.ts';
import { onlyOn, serverDbEnv } from '../helpers/db.ts';
import { ADMIN_EMAIL, adminCli, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

const HOOK = { url: 'https://hooks.example/in', events: ['pr.merged'] };
const GENERATED = /WARN APP_ENCRYPTION_KEY unset: generated an encryption key/;
/* eslint-disable @typescript-eslint/no-explicit-any */
const call = async (s: RunningServer, path: string, init: RequestInit & { json?: unknown } = {}) => {
  const res = await s.api(path, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
};

onlyOn('pglite', test, 6, () => {
  let dbEnv: Record<string, string>;
  let drop: () => Promise<void>;
  let keyFile: string;
  let fingerprint: string;
  let token = '';
  const answers: string[] = [];
  const logs: string[] = [];

  test.before(async () => {
    ({ env: dbEnv, cleanup: drop } = await serverDbEnv());
    keyFile = join(dirname(dbEnv.PGLITE_DATA_DIR), 'encryption.key');
  });
  test.after(async () => drop?.());

  test('first start without APP_ENCRYPTION_KEY: encryption.key beside the data dir (0600), path and fingerprint logged once, Add webhook → 201 at once', async () => {
    assert.not.ok(existsSync(keyFile));
    const s = await startServer({ dbEnv, admin: true });
    try {
      token = s.admin.token;
      assert.is(statSync(keyFile).mode & 0o777, 0o600, 'only the owner may read the key file');
      assert.not.ok(keyFile.startsWith(dbEnv.PGLITE_DATA_DIR + '/'), 'not inside the database directory');
      const key = Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
      assert.is(key.length, 32);
      fingerprint = keyId(key);
      const lines = s.output().split('\n').filter((l) => GENERATED.test(l));
      assert.is(lines.length, 1, 'one loud line');
      const line = lines[0];
      assert.ok(line.includes(`file=${keyFile}`), line);
      assert.ok(line.includes(`fingerprint=${fingerprint}`), line);
      assert.match(line, /back this file up separately/);

      const made = await call(s, '/api/webhooks', { method: 'POST', json: HOOK });
      assert.is(made.status, 201, made.text);
      assert.is(made.body.secretProblem, null);
      const status = await call(s, '/api/settings/encryption-key');
      assert.equal(status.body, { set: true, source: 'file', path: keyFile, fingerprint, backup: status.body.backup });
      assert.match(status.body.backup, /^back this file up separately/);
      answers.push(made.text, status.text);
    } finally {
      logs.push(s.output());
      assert.is(await s.stop(), 0);
      await s.cleanup();
    }
  });

  test('second start reuses the file: same fingerprint, no new log line, the webhook secret still decrypts', async () => {
    const before = readFileSync(keyFile, 'utf8');
    const s = await startServer({ dbEnv });
    try {
      const auth = { authorization: `Bearer ${token}` };
      assert.not.match(s.output(), /generated an encryption key/);
      assert.not.match(s.output(), /cannot be decrypted/);
      assert.is(readFileSync(keyFile, 'utf8'), before, 'the file is unchanged');
      const status = await (await fetch(`${s.url}/api/settings/encryption-key`, { headers: auth })).json();
      assert.is(status.fingerprint, fingerprint);
      const hooks = await (await fetch(`${s.url}/api/webhooks`, { headers: auth })).json();
      assert.is(hooks.webhooks[0].secretProblem, null);
      answers.push(JSON.stringify([status, hooks]));
    } finally {
      logs.push(s.output());
      assert.is(await s.stop(), 0);
      await s.cleanup();
    }
  });

  test('the admin CLI uses the generated key too: its audit record carries the MAC and the chain still verifies', async () => {
    const r = adminCli(dbEnv, ['password-link', '--email', ADMIN_EMAIL]);
    assert.is(r.status, 0, r.stdout + r.stderr);
    assert.not.match(r.stdout + r.stderr, /generated an encryption key/, 'only the server generates and announces it');
    const s = await startServer({ dbEnv });
    try {
      const auth = { authorization: `Bearer ${token}` };
      const [rec] = (await (await fetch(`${s.url}/api/audit?action=user.password_link&limit=1`, { headers: auth })).json()).records;
      assert.ok(rec, 'the CLI wrote its record');
      assert.is((await fetch(`${s.url}/api/schedules/audit.verify/run`, { method: 'POST', headers: auth })).status, 202);
      type V = { ok: boolean; scope: string; problem: string | null } | null;
      let v: V = null;
      for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((ok) => setTimeout(ok, 50))) {
        v = (await (await fetch(`${s.url}/api/audit/verification`, { headers: auth })).json()).verification as V;
        if (v?.scope === 'full') break;
      }
      assert.is(v?.scope, 'full', 'the whole chain was walked');
      assert.is(v!.ok, true, JSON.stringify(v));
    } finally {
      logs.push(s.output());
      assert.is(await s.stop(), 0);
      await s.cleanup();
    }
  });

  test('APP_ENCRYPTION_KEY set wins over a file that disagrees: WARN naming both fingerprints, source environment, file untouched', async () => {
    const env = randomBytes(32).toString('base64');
    const before = readFileSync(keyFile, 'utf8');
    const s = await startServer({ dbEnv, env: { APP_ENCRYPTION_KEY: env } });
    try {
      const line = s.output().split('\n').find((l) => /APP_ENCRYPTION_KEY differs from the key in the encryption key file/.test(l));
      assert.ok(line, s.output());
      assert.ok(line!.includes(`fingerprint=${keyId(Buffer.from(env, 'base64'))}`) && line!.includes(`fileFingerprint=${fingerprint}`), line);
      assert.match(s.output(), /WARN 1 of 1 stored webhook secrets cannot be decrypted/, 'the webhook made under the file key');
      const status = await (await fetch(`${s.url}/api/settings/encryption-key`, { headers: { authorization: `Bearer ${token}` } })).json();
      assert.equal([status.source, status.path, status.fingerprint], ['environment', null, keyId(Buffer.from(env, 'base64'))]);
      assert.is(readFileSync(keyFile, 'utf8'), before);
      answers.push(JSON.stringify(status));
      logs.push(s.output().replaceAll(env, '')); // the env key is checked separately below
      assert.not.ok(s.output().includes(env), 'the environment key is never logged');
    } finally {
      assert.is(await s.stop(), 0);
      await s.cleanup();
    }
  });

  test('the key (base64 or hex) never appears in a log line or an answer', () => {
    const key = readFileSync(keyFile, 'utf8').trim();
    const hex = Buffer.from(key, 'base64').toString('hex');
    for (const text of [...logs, ...answers]) {
      assert.not.ok(text.includes(key), 'base64 key leaked');
      assert.not.ok(text.includes(hex), 'hex key leaked');
    }
  });

  test('a key file that does not hold 32 base64 bytes: exit 1 naming the file, never listening, the file untouched', async () => {
    const fresh = await serverDbEnv();
    try {
      const file = join(dirname(fresh.env.PGLITE_DATA_DIR), 'encryption.key');
      writeFileSync(file, 'not a key\n', { mode: 0o600 });
      const s = await startServer({ dbEnv: fresh.env, expectExit: true });
      assert.is(await s.exited, 1);
      assert.ok(s.output().includes(`the encryption key file ${file} does not hold 32 base64-encoded bytes`), s.output());
      assert.not.match(s.output(), /listening/);
      assert.is(readFileSync(file, 'utf8'), 'not a key\n');
    } finally {
      await fresh.cleanup();
    }
  });
});

onlyOn('postgres', test, 1, () => {
  test('with DATABASE_URL and no key: no file is made, the key status says not set, Add webhook → 409 encryption_key_missing', async () => {
    const s = await startServer({ admin: true });
    try {
      assert.not.match(s.output(), /generated an encryption key/);
      assert.match(s.output(), /WARN APP_ENCRYPTION_KEY is not set/);
      const status = await call(s, '/api/settings/encryption-key');
      assert.equal(status.body, { set: false, source: 'none', path: null, fingerprint: null, backup: null });
      const made = await call(s, '/api/webhooks', { method: 'POST', json: HOOK });
      assert.equal([made.status, made.body.error.code], [409, 'encryption_key_missing']);
      assert.equal((await call(s, '/api/webhooks')).body.webhooks, []);
    } finally {
      await s.cleanup();
    }
  });
});

test.run();
