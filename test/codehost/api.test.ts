// Admin API of GitHub Apps (docs/github-app.md), against the real server: register (webhook secret in
// that answer only, private key stored encrypted and never shown), list/get without secrets, bad fields
// named, edit, rotate (old secret refused at once), delete (URL 404), audit records, instance admins
// only, and 409 encryption_key_missing without a key.
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { postGithub, pushEvent } from './_github.ts';

const KEY = Buffer.alloc(32, 7).toString('base64');
const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
let server: RunningServer;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY } });
});
test.after(async () => server?.cleanup());

test('register: 201 with appPublicId, webhook URL and secret (this answer only); list and get show neither secret; the key is stored', async () => {
  const made = await call('/api/github-apps', { method: 'POST', json: { name: 'acme bot', githubAppId: 123456, privateKey: PEM } });
  assert.is(made.status, 201, JSON.stringify(made.body));
  assert.match(made.body.appPublicId, /^[A-Za-z0-9_-]{24}$/);
  assert.is(made.body.webhookUrl, `${server.url}/hooks/github/${made.body.appPublicId}`);
  assert.match(made.body.webhookSecret, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(
    [made.body.app.name, made.body.app.githubAppId, made.body.app.privateKeySet, made.body.app.webhookSecretProblem, made.body.app.privateKeyProblem],
    ['acme bot', 123456, true, null, null],
  );
  const list = await call('/api/github-apps');
  const get = await call(`/api/github-apps/${made.body.app.id}`);
  assert.is(list.status, 200);
  assert.equal(list.body.apps, [get.body]);
  for (const text of [JSON.stringify(list.body), JSON.stringify(get.body)]) {
    assert.not.ok(text.includes(made.body.webhookSecret), 'the webhook secret is never shown again');
    assert.not.ok(text.includes('PRIVATE KEY'), 'the private key is never shown');
  }
  // The secret it answered is the one the hook verifies with.
  const hook = await postGithub(made.body.webhookUrl, made.body.webhookSecret, 'ping', { zen: 'Keep it logically awesome.', hook_id: 1 });
  assert.is(hook.status, 202);
  const audit = await call('/api/audit?action=github_app.create');
  assert.is(audit.body.records[0].targetId, made.body.app.id);
  assert.not.ok(JSON.stringify(audit.body).includes('PRIVATE KEY'), 'no key in the audit diff');
});

test('bad fields are refused with 400 naming each one; nothing is stored', async () => {
  const before = (await call('/api/github-apps')).body.apps.length;
  const cases: [unknown, string[]][] = [
    [{ name: '' }, ['name']],
    [{ name: 'x', privateKey: 'not a key' }, ['privateKey']],
    [{ name: 'x', privateKey: '-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n' }, ['privateKey']],
    [{ name: 'x', githubAppId: -1 }, ['githubAppId']],
    [{ name: 'x', webhookSecret: 'mine' }, ['webhookSecret']],
    [{}, ['name']],
  ];
  for (const [json, fields] of cases) {
    const res = await call('/api/github-apps', { method: 'POST', json });
    assert.is(res.status, 400, JSON.stringify(json));
    assert.equal(Object.keys(res.body.error.fields ?? {}), fields, JSON.stringify(res.body));
    assert.not.ok(JSON.stringify(res.body).includes('AAAA'), 'the key text is not echoed');
  }
  assert.is((await call('/api/github-apps')).body.apps.length, before);
  assert.is((await call('/api/github-apps/no-such-app')).status, 404);
});

test('edit, rotate and delete: rotating refuses the old secret at once; deleting makes the URL 404; each is audited', async () => {
  const made = (await call('/api/github-apps', { method: 'POST', json: { name: 'rotating' } })).body;
  assert.is(made.app.privateKeySet, false);
  const edited = await call(`/api/github-apps/${made.app.id}`, { method: 'PATCH', json: { name: 'renamed', privateKey: PEM, githubAppId: 7 } });
  assert.equal([edited.status, edited.body.name, edited.body.privateKeySet, edited.body.githubAppId], [200, 'renamed', true, 7]);
  const removed = await call(`/api/github-apps/${made.app.id}`, { method: 'PATCH', json: { privateKey: null } });
  assert.equal([removed.body.name, removed.body.privateKeySet], ['renamed', false]);
  const rotated = await call(`/api/github-apps/${made.app.id}/rotate`, { method: 'POST' });
  assert.is(rotated.status, 200);
  assert.is.not(rotated.body.webhookSecret, made.webhookSecret);
  assert.is((await postGithub(made.webhookUrl, made.webhookSecret, 'push', pushEvent('acme/x'))).status, 401, 'the old secret no longer verifies');
  assert.is((await postGithub(made.webhookUrl, rotated.body.webhookSecret, 'push', pushEvent('acme/x'))).status, 202);
  assert.is((await call(`/api/github-apps/${made.app.id}`, { method: 'DELETE' })).status, 204);
  assert.is((await postGithub(made.webhookUrl, rotated.body.webhookSecret, 'push', pushEvent('acme/x'))).status, 404);
  assert.is((await call(`/api/github-apps/${made.app.id}`)).status, 404);
  const actions = (await call(`/api/audit?targetId=${made.app.id}`)).body.records.map((r: { action: string }) => r.action);
  assert.equal(actions, ['github_app.delete', 'github_app.rotate', 'github_app.update', 'github_app.update', 'github_app.create']);
});

test('a user who is not an instance admin is refused every operation (403) and changes nothing', async () => {
  const app = (await call('/api/github-apps', { method: 'POST', json: { name: 'guarded' } })).body.app;
  const user = await makeUser(server, 'member');
  const before = (await call('/api/github-apps')).body;
  const ops: [string, string, unknown?][] = [
    ['GET', '/api/github-apps'],
    ['POST', '/api/github-apps', { name: 'mine' }],
    ['GET', `/api/github-apps/${app.id}`],
    ['PATCH', `/api/github-apps/${app.id}`, { name: 'mine' }],
    ['POST', `/api/github-apps/${app.id}/rotate`],
    ['DELETE', `/api/github-apps/${app.id}`],
    ['GET', `/api/github-apps/${app.id}/deliveries`],
  ];
  for (const [method, path, json] of ops) {
    const res = await call(path, { method, json, token: user.token });
    assert.is(res.status, 403, `${method} ${path}`);
  }
  assert.equal((await call('/api/github-apps')).body, before);
});

// Without a key only with DATABASE_URL: the embedded database generates one (test/settings/encryption-key.test.ts).
onlyOn('postgres', test, 1, () => {
  test('without APP_ENCRYPTION_KEY: register, rotate and a new private key → 409 encryption_key_missing', async () => {
    const bare = await startServer({ admin: true });
    try {
      const made = await callAs(bare, '/api/github-apps', { method: 'POST', json: { name: 'no key' } });
      assert.equal([made.status, made.body.error.code], [409, 'encryption_key_missing']);
      assert.equal((await callAs(bare, '/api/github-apps')).body.apps, [], 'nothing stored');
    } finally {
      await bare.cleanup();
    }
  });
});

test.run();
