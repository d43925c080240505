// Signed one-time action links against the real server (issue #40 part 2; docs/notifications.md,
// "Action links"): a pull request of svc's agents whose checks pass makes a pr.ready notification; each
// admin reads their own Approve link from GET /api/notifications, and the Slack and Telegram pushes carry
// the channel's link as URL buttons. Refused — each changing nothing (no command reaches the runner, no
// audit record): a forged signature, another user's link, an API token, a user who lost the role, a
// link used twice, an expired link. A good link sends pr.approve to the runner and is audited via link.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serverDbEnv } from '../helpers/db.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { chatFake } from '../fakes/chat.ts';
import type { ChatFake } from '../fakes/chat.ts';
import { KEY, makeProject, waitFor } from '../triggers/_harness.ts';
import { act, signIn, tokenOf } from './_harness.ts';
import type { Session } from './_harness.ts';

let server: RunningServer;
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let fake: ChatFake;
let ws: Client;
let project = '';
let runnerId = '';
const u: Record<'a1' | 'a2' | 'demoted', TestUser> = {} as never;
const s: Record<'a1' | 'a2' | 'demoted', Session> = {} as never;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
const PR_URL = 'https://github.com/acme/app/pull/5';
type Action = { kind: string; label: string; url: string; expiresAt: string };
type N = { id: string; kind: string; data: Record<string, any>; actions: Action[] };

const commandsSent = () => ws.frames.filter((f) => f.type === 'command').length;
const audits = async () => (await call('/api/audit?action=pr.approve')).body.records as { diff: Record<string, unknown>; actorLabel: string; targetId: string }[];
const linkOf = async (who: TestUser, number: number): Promise<string> => {
  const n = await waitFor(`pr.ready #${number} for ${who.email}`, async () =>
    ((await call('/api/notifications', { token: who.token })).body.notifications as N[]).find((x) => x.kind === 'pr.ready' && x.data.pr?.number === number));
  assert.equal(n.actions.map((a) => [a.kind, a.label]), [['pr.approve', 'Approve']]);
  assert.ok(n.actions[0].url.startsWith(`${server.url}/#/act/`), n.actions[0].url);
  return tokenOf(n.actions[0].url);
};

/** Nothing changed: no command reached the runner, no audit record. */
async function unchanged(before: number, what: string) {
  assert.is(commandsSent(), before, `${what}: no command was sent`);
  assert.is((await audits()).length, 0, `${what}: nothing audited`);
}

const now = () => new Date().toISOString();
const prEvents = (number: number) => [
  { id: `gh.${project}.${number}.1.opened`, source: `project:${project}`, kind: 'pr.opened', ts: now(), payload: { project, slot: 'w1', issue: 7, data: { pr: { number, url: PR_URL }, title: 'Fix the login', branch: `svc/w1/issue-${number}` } } },
  { id: `gh.${project}.${number}.1.checks.1`, source: `project:${project}`, kind: 'pr.checks_changed', ts: now(), payload: { project, data: { pr: { number, url: PR_URL }, state: 'passed', summary: '3 passed', sha: 'c'.repeat(40) } } },
];

test.before(async () => {
  fake = await chatFake();
  dbEnv = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  assert.is((await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } })).status, 200);
  assert.is((await call('/api/notifications/channels', { method: 'POST', json: { type: 'slack', name: 'ops', webhookUrl: fake.slackUrl } })).status, 201);
  assert.is((await call('/api/notifications/channels', { method: 'POST', json: { type: 'telegram', botToken: fake.telegramToken, chatId: '-1001', apiBaseUrl: fake.url } })).status, 201);
  const r = await pairRunner(server.api, server.url, 'act-box');
  runnerId = r.runnerId;
  project = await makeProject(server, r.runnerId);
  for (const key of ['a1', 'a2', 'demoted'] as const) {
    u[key] = await makeUser(server, key);
    assert.is((await call(`/api/projects/${project}/members/${u[key].id}`, { method: 'PUT', json: { role: 'admin' } })).status, 200);
    s[key] = await signIn(server, u[key].email, u[key].password);
  }
  ws = connect(server.url, r.token);
  await ws.next('welcome');
  ws.send({ type: 'events', events: [...prEvents(5), ...prEvents(6)] });
  await ws.next('ack');
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
  await dbEnv?.cleanup();
  await fake?.close();
});

test('pr.ready: the chat pushes show the channel link as URL buttons (Slack blocks, Telegram inline keyboard), the text keeps it', async () => {
  const slack = await waitFor('the Slack push', async () => fake.slack.find((m) => String(m.body.text).includes('#5 is ready for review')));
  const blocks = slack.body.blocks as any[];
  assert.is(blocks[0].type, 'section');
  assert.match(blocks[0].text.text, '#5 is ready for review');
  const actions = blocks.find((b) => b.type === 'actions');
  assert.is(actions.elements.length, 1);
  const button = actions.elements[0];
  assert.equal([button.type, button.text.type, button.text.text], ['button', 'plain_text', 'Approve']);
  assert.match(button.url, new RegExp(`^${server.url}/#/act/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$`));
  assert.ok(String(slack.body.text).includes(`Approve: ${button.url}`), 'the fallback text keeps the link');

  const tg = await waitFor('the Telegram push', async () => fake.telegram.find((m) => String(m.body.text).includes('#5 is ready for review')));
  const keyboard = (tg.body.reply_markup as any).inline_keyboard;
  assert.equal(keyboard, [[{ text: 'Approve', url: button.url }]]);
  assert.ok(String(tg.body.text).includes(button.url));
  assert.is(tg.body.chat_id, '-1001');
});

test('each admin reads a link of their own', async () => {
  assert.is.not(await linkOf(u.a1, 5), await linkOf(u.a2, 5));
  assert.is(await linkOf(u.a1, 5), await linkOf(u.a1, 5), 'the same link on every read');
});

test('a forged signature, a tampered payload, a token of the wrong shape: refused, nothing changes', async () => {
  const good = await linkOf(u.a1, 5);
  const before = commandsSent();
  const [payload, mac] = good.split('.');
  const forgedMac = `${payload}.${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const tampered = `${Buffer.from(JSON.stringify({ ...claims, u: u.a2.id })).toString('base64url')}.${mac}`;
  for (const t of [forgedMac, tampered]) {
    for (const method of ['GET', 'POST'] as const) assert.equal((await act(server, method, t, s.a1)).body.error.code, 'not_found', `${method} ${t.slice(0, 20)}`);
    assert.is((await act(server, 'POST', t, s.a2)).status, 404);
  }
  assert.is((await act(server, 'POST', 'not-a-token', s.a1)).status, 400, 'the path is checked by its schema');
  await unchanged(before, 'forged');
});

test("another user's link, an API token, nobody signed in: refused, nothing changes", async () => {
  const mine = await linkOf(u.a1, 5);
  const before = commandsSent();
  for (const method of ['GET', 'POST'] as const) {
    const other = await act(server, method, mine, s.a2);
    assert.is(other.status, 403, `${method} by another user`);
    assert.match(other.body.error.message, 'another user');
    assert.is((await act(server, method, mine, { bearer: u.a1.token })).status, 403, `${method} with an API token`);
    assert.is((await act(server, method, mine, null)).status, 401, `${method} signed out`);
  }
  await unchanged(before, "another user's");
});

test('a user who lost the role since the link was made: 403, nothing changes', async () => {
  const link = await linkOf(u.demoted, 5);
  assert.is((await call(`/api/projects/${project}/members/${u.demoted.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  const before = commandsSent();
  for (const method of ['GET', 'POST'] as const) {
    const r = await act(server, method, link, s.demoted);
    assert.is(r.status, 403, method);
    assert.match(r.body.error.message, 'operator');
  }
  await unchanged(before, 'demoted');
});

test('a good link: GET describes it through pr.inspect, POST sends pr.approve and audits it via link; a second use is 409', async () => {
  const link = await linkOf(u.a1, 5);
  const described = act(server, 'GET', link, s.a1);
  const inspect = await ws.next('command');
  assert.equal([inspect.name, inspect.args], ['pr.inspect', { projectId: project, number: 5 }]);
  ws.send({ type: 'result', requestId: inspect.requestId, ok: true, data: { number: 5, title: 'Fix the login (live)', url: PR_URL, state: 'open', additions: 12, deletions: 3, files: [{}, {}], checks: { state: 'passed', summary: '3 passed' } } });
  const d = await described;
  assert.is(d.status, 200, JSON.stringify(d.body));
  assert.equal([d.body.kind, d.body.source, d.body.personal, d.body.facts.title, d.body.facts.additions, d.body.facts.files, d.body.facts.checks], ['pr.approve', 'runner', true, 'Fix the login (live)', 12, 2, 'passed']);

  const done = act(server, 'POST', link, s.a1);
  const approve = await ws.next('command');
  assert.equal([approve.name, approve.args], ['pr.approve', { projectId: project, number: 5 }]);
  ws.send({ type: 'result', requestId: approve.requestId, ok: true, data: { approved: true } });
  const r = await done;
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.equal([r.body.kind, r.body.outcome], ['pr.approve', 'Pull request #5 approved']);
  const [record] = await audits();
  assert.equal([record.diff.via, record.diff.target, record.targetId], ['link', { projectId: project, number: 5 }, project]);

  const before = commandsSent();
  for (const method of ['GET', 'POST'] as const) assert.is((await act(server, method, link, s.a1)).status, 409, `${method} again`);
  assert.is((await act(server, 'POST', await linkOf(u.a2, 5), s.a2)).status, 409, "another admin's link to the same decision");
  const channel = tokenOf(String(fake.slack.find((m) => String(m.body.text).includes('#5 is ready'))!.body.text).split('Approve: ')[1]);
  assert.is((await act(server, 'POST', channel, s.a2)).status, 409, "the channel's link to the same decision");
  assert.is(commandsSent(), before, 'no second command');
  assert.is((await audits()).length, 1, 'one audit record');
});

test("a channel's link acts as whoever is signed in, with their role then", async () => {
  const msg = await waitFor('the Slack push of #6', async () => fake.slack.find((m) => String(m.body.text).includes('#6 is ready')));
  const channel = tokenOf(String(msg.body.text).split('Approve: ')[1]);
  assert.is((await act(server, 'POST', channel, s.demoted)).status, 403, 'a viewer');
  const runnerOffline = (() => {
    ws.ws.close();
    return ws.closed;
  })();
  await runnerOffline;
  // The socket's close is the server's to take in: until it has, a command waits for the runner to answer.
  await waitFor('the runner read offline', async () => (await call(`/api/runners/${runnerId}`)).body.status === 'offline');
  const d = await act(server, 'GET', channel, s.a2);
  assert.is(d.status, 200, JSON.stringify(d.body));
  assert.equal([d.body.personal, d.body.source, d.body.facts.title, d.body.facts.checks], [false, 'stored', 'Fix the login', 'passed']);
  assert.match(d.body.note, 'offline');
  const p = await act(server, 'POST', channel, s.a2);
  assert.equal([p.status, p.body.error.code], [503, 'runner_offline']);
  assert.is((await audits()).length, 1, 'a failed attempt is not audited…');
  assert.is((await act(server, 'GET', channel, s.a2)).status, 200, '…and does not use the link up');
});

test('an expired link (the server 25 hours later): 410, nothing changes', async () => {
  const link = await linkOf(u.a2, 6);
  await server.stop();
  server = await startServer({ dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', TEST_CLOCK_OFFSET_SECONDS: String(25 * 3600) } });
  const session = await signIn(server, u.a2.email, u.a2.password);
  for (const method of ['GET', 'POST'] as const) assert.equal((await act(server, method, link, session)).body.error?.code, 'link_expired', method);
  const admin = await signIn(server, ADMIN_EMAIL, ADMIN_PASSWORD);
  const res = await fetch(`${server.url}/api/audit?action=pr.approve`, { headers: { cookie: admin.cookie } });
  assert.is((await res.json()).records.length, 1);
});

test.run();
