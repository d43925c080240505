// The notifications API against the real server: read state per user, who sees what, marking read,
// the chat channel admin API (encrypted, audited, guarded), and pushes from a runner's events to the
// Slack and Telegram fakes through the server's own webhook worker.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import { chatFake } from '../fakes/chat.ts';
import type { ChatFake } from '../fakes/chat.ts';
import { waitFor } from '../triggers/_harness.ts';

let server: RunningServer;
let fake: ChatFake;
let projectA = '';
let projectB = '';
let runnerToken = '';
const u: Record<'a1' | 'a2' | 'b', TestUser> = {} as never;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
type N = { id: string; kind: string; projectId: string | null; read: boolean; data: Record<string, unknown> };
const list = async (token?: string) => (await call('/api/notifications', { token })).body as { notifications: N[]; unread: number };

test.before(async () => {
  fake = await chatFake();
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: randomBytes(32).toString('base64') } });
  const r = await pairRunner(server.api, server.url, 'notify-box');
  runnerToken = r.token;
  projectA = (await call('/api/projects', { method: 'POST', json: { name: 'Alpha', repo: 'acme/a', runnerId: r.runnerId, rootPath: '/srv/a' } })).body.id;
  projectB = (await call('/api/projects', { method: 'POST', json: { name: 'Beta', repo: 'acme/b', runnerId: r.runnerId, rootPath: '/srv/b' } })).body.id;
  for (const [key, project] of [['a1', projectA], ['a2', projectA], ['b', projectB]] as const) {
    u[key] = await makeUser(server, key);
    assert.is((await call(`/api/projects/${project}/members/${u[key].id}`, { method: 'PUT', json: { role: 'admin' } })).status, 200);
  }
});
test.after(async () => {
  await server?.cleanup();
  await fake?.close();
});

test('chat channels: validated, guarded, stored encrypted, never shown, audited', async () => {
  const bad = await call('/api/notifications/channels', { method: 'POST', json: { type: 'telegram', botToken: 'nope', chatId: '1', apiBaseUrl: fake.url } });
  assert.is(bad.status, 400);
  assert.match(JSON.stringify(bad.body), 'botToken');
  const missing = await call('/api/notifications/channels', { method: 'POST', json: { type: 'telegram', botToken: fake.telegramToken } });
  assert.equal([missing.status, Object.keys(missing.body.error.fields ?? {})], [400, ['chatId']]);
  const mixed = await call('/api/notifications/channels', { method: 'POST', json: { type: 'slack', webhookUrl: 'https://hooks.example.com/services/x', chatId: '1' } });
  assert.equal([mixed.status, Object.keys(mixed.body.error.fields ?? {})], [400, ['chatId']]);
  const refused = await call('/api/notifications/channels', { method: 'POST', json: { type: 'slack', webhookUrl: fake.slackUrl } });
  assert.is(refused.status, 400, 'a loopback receiver is refused while the allowlist does not name it');
  assert.match(JSON.stringify(refused.body), 'webhookUrl');
  assert.is((await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } })).status, 200);
  const slack = await call('/api/notifications/channels', { method: 'POST', json: { type: 'slack', name: 'ops', webhookUrl: fake.slackUrl } });
  assert.is(slack.status, 201);
  assert.equal([slack.body.type, slack.body.name, slack.body.url, slack.body.circuit], ['slack', 'ops', `${fake.url}/…`, 'closed']);
  const tg = await call('/api/notifications/channels', { method: 'POST', json: { type: 'telegram', botToken: fake.telegramToken, chatId: '-1001', apiBaseUrl: fake.url } });
  assert.is(tg.status, 201);
  const listed = await call('/api/notifications/channels');
  assert.equal(listed.body.channels.map((c: { type: string }) => c.type), ['slack', 'telegram']);
  const text = JSON.stringify(listed.body);
  assert.not.match(text, fake.telegramToken);
  assert.not.match(text, new URL(fake.slackUrl).pathname);
  assert.equal((await call('/api/webhooks')).body.webhooks, [], 'channels are not webhooks');
  const audit = JSON.stringify((await call('/api/audit')).body);
  assert.match(audit, 'notification_channel.create');
  assert.not.match(audit, fake.telegramToken);
});

test('runner events become notifications: visibility per project, read state per user, pushes to Slack and Telegram', async () => {
  const ws = connect(server.url, runnerToken);
  await ws.next('welcome');
  const now = new Date().toISOString();
  ws.send({
    type: 'events',
    events: [
      { id: 'n-1', source: `project:${projectA}`, kind: 'person.needed', ts: now, payload: { project: projectA, data: { question: 'Merge now?' } } },
      { id: 'n-2', source: `project:${projectB}`, kind: 'pane.quota_hit', ts: now, payload: { project: projectB, provider: 'anthropic', session: 's' } },
    ],
  });
  await ws.next('ack');
  ws.ws.close();

  const admin = await list();
  assert.equal(admin.notifications.map((n) => [n.kind, n.projectId, n.read]), [['pane.quota_hit', projectB, false], ['person.needed', projectA, false]]);
  assert.is(admin.unread, 2);
  const a1 = await list(u.a1.token);
  assert.equal(a1.notifications.map((n) => n.kind), ['person.needed'], "a project admin sees only its projects'");
  assert.is(a1.unread, 1);
  const forB = await list(u.b.token);
  assert.equal(forB.notifications.map((n) => n.kind), ['pane.quota_hit']);
  const idA = a1.notifications[0].id;
  const idB = forB.notifications[0].id;

  // Another project's notification is ignored, not marked (and not revealed).
  assert.equal((await call('/api/notifications/read', { method: 'POST', json: { ids: [idB] }, token: u.a1.token })).body, { marked: 0, unread: 1 });
  assert.equal((await call('/api/notifications/read', { method: 'POST', json: { ids: [idA] }, token: u.a1.token })).body, { marked: 1, unread: 0 });
  assert.equal((await call('/api/notifications/read', { method: 'POST', json: { ids: [idA] }, token: u.a1.token })).body, { marked: 0, unread: 0 }, 'twice is once');
  assert.is((await list(u.a1.token)).notifications[0].read, true);
  const a2 = await list(u.a2.token);
  assert.equal([a2.unread, a2.notifications[0].read], [1, false], 'read state is per user');
  assert.is((await list(u.b.token)).unread, 1);
  assert.equal((await call('/api/notifications/read', { method: 'POST', json: { all: true } })).body, { marked: 2, unread: 0 });
  assert.is((await list(u.a2.token)).unread, 1, "the admin's marks are the admin's");

  const both = await call('/api/notifications/read', { method: 'POST', json: { ids: [idA], all: true }, token: u.a2.token });
  assert.is(both.status, 400);
  const invalid = await call('/api/notifications/read', { method: 'POST', json: { ids: ['x'] }, token: u.a2.token });
  assert.is(invalid.status, 400);
  assert.match(JSON.stringify(invalid.body), 'ids');

  await waitFor('both pushes on both channels', async () => fake.slack.length === 2 && fake.telegram.length === 2);
  const texts = fake.slack.map((m) => m.body.text).sort();
  assert.equal(texts, ['A person is needed [Alpha]: Merge now?', 'Quota hit [Beta]: a session of anthropic reached its usage limit']);
  assert.equal(fake.telegram.map((m) => m.body.chat_id), ['-1001', '-1001']);
});

// Without a key only with DATABASE_URL: the embedded database generates one (test/settings/encryption-key.test.ts).
onlyOn('postgres', test, 1, () => {
 test('without APP_ENCRYPTION_KEY a chat channel cannot be stored: 409 encryption_key_missing', async () => {
  const bare = await startServer({ admin: true });
  try {
    const res = await bare.api('/api/notifications/channels', { method: 'POST', json: { type: 'slack', webhookUrl: 'https://hooks.example.com/services/T/B/X' } });
    assert.is(res.status, 409);
    assert.match(await res.text(), 'encryption_key_missing');
  } finally {
    await bare.cleanup();
  }
 });
});

test.run();
