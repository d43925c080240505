// Instance secrets at rest, against the real server on one database that is restarted three times:
// without APP_ENCRYPTION_KEY (PostgreSQL only), with key A, then with a different key B (spec: "A changed
// APP_ENCRYPTION_KEY makes stored secrets fail to decrypt" — the server starts, and the secret must be
// entered again). Values are never answered, logged or stored in plain text.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import postgres from 'postgres';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { TEST_DB, onlyOn, serverDbEnv } from '../helpers/db.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

const KEY_A = randomBytes(32).toString('base64');
const KEY_B = randomBytes(32).toString('base64');
const VALUE_1 = `xoxb-first-${randomBytes(12).toString('hex')}`;
const VALUE_2 = `xoxb-second-${randomBytes(12).toString('hex')}`;
const SECRET_NAMES = ['chat.bot_token', 'codehost.app_private_key', 'codehost.webhook_secret'];

let dbEnv: Record<string, string>;
let dropDb: () => Promise<void>;
let server: RunningServer | undefined;
let adminToken = '';
/** Every response body any test saw, to check that no secret value was ever answered. */
const seen: string[] = [];
/** Every server's log output, to check no secret value was ever logged. */
const logs: string[] = [];

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

async function call(path: string, init: { method?: string; json?: unknown; token?: string | null; raw?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  const token = init.token === undefined ? adminToken : init.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (init.json !== undefined) body = JSON.stringify(init.json);
  if (init.raw !== undefined) body = init.raw;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(server!.url + path, { method: init.method ?? 'GET', headers, body });
  const text = await res.text();
  seen.push(text);
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return { status: res.status, body: parsed, text };
}

const secret = (list: Answer, name = 'chat.bot_token') => list.body.secrets.find((s: { name: string }) => s.name === name);

async function restart(env: Record<string, string>, admin = false) {
  if (server) {
    logs.push(server.output());
    assert.is(await server.stop(), 0, 'the previous server stopped cleanly');
    await server.cleanup();
  }
  server = await startServer({ dbEnv, env, admin });
  if (admin) adminToken = server.admin.token;
}

/** The stored row, read straight from the database (PGlite: only while no server holds it). */
async function storedRows(): Promise<{ name: string; ciphertext: string }[]> {
  if (TEST_DB === 'postgres') {
    const db = postgres(dbEnv.DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      return [...(await db`select name, ciphertext from instance_secrets order by name`)] as unknown as { name: string; ciphertext: string }[];
    } finally {
      await db.end();
    }
  }
  const db = await openPglite(dbEnv.PGLITE_DATA_DIR);
  try {
    return await db.query<{ name: string; ciphertext: string }>(sql`select name, ciphertext from instance_secrets order by name`);
  } finally {
    await db.close();
  }
}

/** A non-admin user with a password and a personal API token, made through the API. */
async function makeUser(email: string) {
  const made = await call('/api/users', { method: 'POST', json: { email, name: 'Plain User' } });
  assert.is(made.status, 201, made.text);
  assert.is(made.body.user.instanceAdmin, false);
  const linkToken = /#\/set-password\?token=([\w-]+)/.exec(made.body.passwordSetUrl)![1];
  const password = `plain-user-pw-${randomBytes(4).toString('hex')}`;
  const set = await call('/api/password', { method: 'POST', json: { token: linkToken, password }, token: null });
  assert.is(set.status, 200, set.text);
  const signIn = await fetch(`${server!.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  assert.is(signIn.status, 200);
  const { csrfToken } = await signIn.json();
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  const tok = await fetch(`${server!.url}/api/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
    body: JSON.stringify({ name: 'plain' }),
  });
  assert.is(tok.status, 201);
  return { id: made.body.user.id as string, token: (await tok.json()).token as string, cookie, csrfToken: csrfToken as string };
}

test.before(async () => {
  const fresh = await serverDbEnv();
  dbEnv = fresh.env;
  dropDb = fresh.cleanup;
});

test.after(async () => {
  if (server) {
    await server.cleanup();
  }
  await dropDb?.();
});

// Without a key only with DATABASE_URL: on the embedded database a key file is generated instead
// (test/settings/encryption-key.test.ts).
onlyOn('postgres', test, 2, () => {
  test('without APP_ENCRYPTION_KEY: PUT → 409 encryption_key_missing, nothing stored, GET shows it not configured', async () => {
    await restart({}, true);
    assert.match(server!.output(), /WARN APP_ENCRYPTION_KEY is not set/);
    const put = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: VALUE_1 } });
    assert.is(put.status, 409);
    assert.is(put.body.error.code, 'encryption_key_missing');
    assert.match(put.body.error.message, /APP_ENCRYPTION_KEY/);

    const list = await call('/api/secrets');
    assert.is(list.status, 200);
    assert.is(list.body.encryptionKeySet, false);
    assert.equal(list.body.secrets.map((s: { name: string }) => s.name).sort(), SECRET_NAMES);
    for (const s of list.body.secrets) {
      assert.is(s.configured, false, s.name);
      assert.is(s.decryptable, null, s.name);
      assert.is(s.problem, null, s.name);
      assert.is(s.updatedAt, null, s.name);
      assert.not.ok('value' in s, 'no value field');
    }
    // The refused PUT left no audit record either.
    const audit = await call('/api/audit?action=secret.set');
    assert.is(audit.status, 200);
    assert.equal(audit.body.records, []);
  });

  test('without a key, a DELETE of a secret that is not set → 404, still nothing stored', async () => {
    const del = await call('/api/secrets/chat.bot_token', { method: 'DELETE' });
    assert.is(del.status, 404);
    assert.is(del.body.error.code, 'not_found');
  });
});

test('with a key: PUT → 200 configured, decryptable; the value is never answered and is stored encrypted', async () => {
  await restart({ APP_ENCRYPTION_KEY: KEY_A }, !server); // the first start on PGlite
  assert.not.match(server!.output(), /APP_ENCRYPTION_KEY is not set|generated an encryption key/);
  const before = await call('/api/secrets');
  assert.is(before.body.encryptionKeySet, true);
  assert.is(secret(before).configured, false);

  const put = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: VALUE_1 } });
  assert.is(put.status, 200, put.text);
  assert.is(put.body.name, 'chat.bot_token');
  assert.is(put.body.configured, true);
  assert.is(put.body.decryptable, true);
  assert.is(put.body.problem, null);
  assert.ok(Math.abs(Date.parse(put.body.updatedAt) - Date.now()) < 60_000, 'updatedAt is now');
  assert.not.ok(put.text.includes(VALUE_1), 'the PUT answer does not echo the value');

  const list = await call('/api/secrets');
  assert.is(list.status, 200);
  assert.not.ok(list.text.includes(VALUE_1), 'GET /api/secrets does not carry the value');
  assert.equal(secret(list), put.body);
  for (const name of ['codehost.app_private_key', 'codehost.webhook_secret']) {
    assert.is(secret(list, name).configured, false, `${name} untouched`);
  }

  // Audited, without the value.
  const audit = await call('/api/audit?action=secret.set');
  assert.is(audit.body.records.length, 1);
  assert.is(audit.body.records[0].targetId, 'chat.bot_token');
  assert.not.ok(audit.text.includes(VALUE_1), 'the audit record does not carry the value');
});

test('unknown secret name → 400 naming `name`; nothing stored under it', async () => {
  const put = await call('/api/secrets/chat.other_token', { method: 'PUT', json: { value: VALUE_2 } });
  assert.is(put.status, 400);
  assert.is(put.body.error.code, 'invalid_path');
  assert.ok(put.body.error.fields.name, 'names the path parameter `name`');
  assert.match(put.body.error.fields.name, /chat\.bot_token/, 'says which names are allowed');
  assert.equal(Object.keys(put.body.error.fields), ['name']);
  const del = await call('/api/secrets/nope', { method: 'DELETE' });
  assert.is(del.status, 400);
  assert.ok(del.body.error.fields.name);
  const list = await call('/api/secrets');
  assert.equal(list.body.secrets.map((s: { name: string }) => s.name).sort(), SECRET_NAMES);
  assert.is(secret(list).decryptable, true);
});

test('unknown or bad body field → 400 naming it; the stored secret is unchanged', async () => {
  const before = secret(await call('/api/secrets'));
  const extra = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: VALUE_2, colour: 'red' } });
  assert.is(extra.status, 400);
  assert.is(extra.body.error.code, 'invalid_body');
  assert.is(extra.body.error.fields.colour, 'unknown field');
  assert.not.ok(extra.text.includes(VALUE_2), 'the 400 does not echo the value');

  const empty = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: '' } });
  assert.is(empty.status, 400);
  assert.ok(empty.body.error.fields.value, 'names `value`');
  const missing = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: {} });
  assert.is(missing.status, 400);
  assert.ok(missing.body.error.fields.value, 'names the missing `value`');
  const notString = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: 42 } });
  assert.is(notString.status, 400);
  assert.ok(notString.body.error.fields.value);

  const after = secret(await call('/api/secrets'));
  assert.equal(after, before, 'nothing changed (same updatedAt)');
  const audit = await call('/api/audit?action=secret.set');
  assert.is(audit.body.records.length, 1, 'no audit record for refused writes');
});

let plain: Awaited<ReturnType<typeof makeUser>>;

test('a non-admin user gets 403 on GET, PUT and DELETE of secrets; nothing changes', async () => {
  const before = secret(await call('/api/secrets'));
  plain = await makeUser('plain@example.test');
  const list = await call('/api/secrets', { token: plain.token });
  assert.is(list.status, 403);
  assert.is(list.body.error.code, 'forbidden');
  assert.not.ok('secrets' in (list.body ?? {}));
  const put = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: VALUE_2 }, token: plain.token });
  assert.is(put.status, 403);
  assert.is(put.body.error.code, 'forbidden');
  const del = await call('/api/secrets/chat.bot_token', { method: 'DELETE', token: plain.token });
  assert.is(del.status, 403);
  // With a browser session (cookie + CSRF) as well.
  const viaCookie = await fetch(`${server!.url}/api/secrets/chat.bot_token`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', cookie: plain.cookie, 'x-csrf-token': plain.csrfToken },
    body: JSON.stringify({ value: VALUE_2 }),
  });
  assert.is(viaCookie.status, 403);
  // Anonymous: 401.
  const anon = await call('/api/secrets', { token: null });
  assert.is(anon.status, 401);
  const anonPut = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: VALUE_2 }, token: null });
  assert.is(anonPut.status, 401);

  const after = secret(await call('/api/secrets'));
  assert.equal(after, before, 'still the admin’s value, same updatedAt');
  assert.is(after.decryptable, true);
});

let cookieUnderKeyA = '';

test('a browser session made under key A works under key A', async () => {
  const signIn = await fetch(`${server!.url}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
  });
  assert.is(signIn.status, 200);
  cookieUnderKeyA = signIn.headers.get('set-cookie')!.split(';')[0];
  const list = await fetch(`${server!.url}/api/secrets`, { headers: { cookie: cookieUnderKeyA } });
  assert.is(list.status, 200);
  seen.push(await list.text());
});

test('the stored row holds a ciphertext, not the value', async () => {
  logs.push(server!.output());
  if (TEST_DB === 'pglite') {
    assert.is(await server!.stop(), 0);
    await server!.cleanup();
    server = undefined;
  }
  const rows = await storedRows();
  assert.equal(rows.map((r) => r.name), ['chat.bot_token']);
  assert.match(rows[0].ciphertext, /^v1\.[0-9a-f]{16}\.[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.not.ok(rows[0].ciphertext.includes(VALUE_1));
  assert.not.ok(rows[0].ciphertext.includes(Buffer.from(VALUE_1).toString('base64url')));
});

test('restart with a DIFFERENT key: the server starts; the secret shows decryptable false with "enter it again"', async () => {
  await restart({ APP_ENCRYPTION_KEY: KEY_B });
  const warned = server!.output().split('\n').filter((l) => /cannot be decrypted with the current encryption key/.test(l));
  assert.is(warned.length, 1, 'one WARN line per kind that has any, with the count');
  assert.match(warned[0], /WARN 1 of 1 stored instance secrets cannot be decrypted .* kind="instance secrets" count=1/);
  const health = await fetch(`${server!.url}/health`);
  assert.is(health.status, 200);
  assert.is((await health.json()).status, 'ok');

  // The admin created on the first start signs in with its API token on this server.
  const list = await call('/api/secrets');
  assert.is(list.status, 200, list.text);
  assert.is(list.body.encryptionKeySet, true);
  const s = secret(list);
  assert.is(s.configured, true);
  assert.is(s.decryptable, false);
  assert.type(s.problem, 'string');
  assert.match(s.problem, /different APP_ENCRYPTION_KEY/);
  assert.match(s.problem, /enter it again/);
  assert.not.ok(list.text.includes(VALUE_1));
  assert.is(secret(list, 'codehost.webhook_secret').decryptable, null, 'unset ones are not reported as broken');

  // Other data survived the restart: the non-admin user is still there and still not an admin.
  const denied = await call('/api/secrets', { token: plain.token });
  assert.is(denied.status, 403);
  // Session cookies are keyed by APP_ENCRYPTION_KEY: the one made under key A no longer signs in.
  const withOldCookie = await fetch(`${server!.url}/api/secrets`, { headers: { cookie: cookieUnderKeyA } });
  assert.is(withOldCookie.status, 401);
});

test('after the key change, PUT again → decryptable true with the new key', async () => {
  const before = secret(await call('/api/secrets'));
  await new Promise((r) => setTimeout(r, 20));
  const put = await call('/api/secrets/chat.bot_token', { method: 'PUT', json: { value: VALUE_2 } });
  assert.is(put.status, 200, put.text);
  assert.is(put.body.configured, true);
  assert.is(put.body.decryptable, true);
  assert.is(put.body.problem, null);
  assert.ok(Date.parse(put.body.updatedAt) > Date.parse(before.updatedAt), 'updatedAt moved on');
  assert.not.ok(put.text.includes(VALUE_2));
  const list = await call('/api/secrets');
  assert.equal(secret(list), put.body);
  assert.not.ok(list.text.includes(VALUE_2));
});

test('DELETE removes the secret: 204, then not configured; a second DELETE → 404', async () => {
  const del = await call('/api/secrets/chat.bot_token', { method: 'DELETE' });
  assert.is(del.status, 204);
  const s = secret(await call('/api/secrets'));
  assert.equal([s.configured, s.decryptable, s.problem, s.updatedAt], [false, null, null, null]);
  const again = await call('/api/secrets/chat.bot_token', { method: 'DELETE' });
  assert.is(again.status, 404);
  const audit = await call('/api/audit?action=secret.delete');
  assert.is(audit.body.records.length, 1, 'only the successful DELETE is audited');
});

test('no answer and no log line ever carried a secret value', async () => {
  logs.push(server!.output());
  assert.ok(seen.length > 20, `checked ${seen.length} answers`);
  for (const text of seen) {
    assert.not.ok(text.includes(VALUE_1), 'first value in an answer');
    assert.not.ok(text.includes(VALUE_2), 'second value in an answer');
  }
  const allLogs = logs.join('\n');
  assert.ok(allLogs.includes('listening'), 'the logs were captured');
  assert.not.ok(allLogs.includes(VALUE_1), 'first value in a log');
  assert.not.ok(allLogs.includes(VALUE_2), 'second value in a log');
  assert.not.ok(allLogs.includes(KEY_A) || allLogs.includes(KEY_B), 'a key in a log');
});

test.run();
