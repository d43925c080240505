// GET /api/projects/:projectId/queue: the issue queue the server keeps (functions/codehost/queue.ts) from
// its three sources — an `issues` App delivery changes the row at once with no runner at all (opened,
// labeled, closed, deleted; one older than the row changes nothing); a runner's `codehost.queue` event
// replaces the open set (truncated keeps the rest; a re-sent or older one changes nothing); an
// `issues.refresh` answer replaces it too — with the slot working on each issue, and a live `fleet` notice to the project's viewers.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openLive, signIn } from '../helpers/live.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { send } from '../helpers/usage-events.ts';
import type { Ev } from '../helpers/usage-events.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { createRequire } from 'node:module';
import { waitFor } from '../triggers/_harness.ts';
import { postGithub, webhookBody } from './_github.ts';

let server: RunningServer;
let ws: Client;
let app: { webhookUrl: string; webhookSecret: string };
let runnerId = '';
let offlineRunner = '';
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);

async function project(runner: string): Promise<{ id: string; repo: string }> {
  const name = `q-${randomBytes(3).toString('hex')}`;
  const repo = `Acme/${name}`;
  const made = await call('/api/projects', { method: 'POST', json: { name, repo, runnerId: runner, rootPath: `/srv/${name}` } });
  assert.is(made.status, 201);
  return { id: made.body.id, repo };
}

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') } });
  const runner = await pairRunner(server.api, server.url, 'queue-runner');
  runnerId = runner.runnerId;
  ws = connect(server.url, runner.token);
  await ws.next('welcome');
  offlineRunner = (await call('/api/runners', { method: 'POST', json: { name: 'never-connected' } })).body.runner.id;
  const made = (await call('/api/github-apps', { method: 'POST', json: { name: 'queue tests' } })).body;
  app = { webhookUrl: made.webhookUrl, webhookSecret: made.webhookSecret };
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

const queue = async (projectId: string) => {
  const res = await call(`/api/projects/${projectId}/queue`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body as { issues: Record<string, any>[]; refreshedAt: string | null };
};
const issue = (n: number, title: string, labels: string[] = []) => ({ number: n, title, url: `https://github.com/acme/x/issues/${n}`, labels });
let clock = Date.now() - 600_000;
let seq = 0;
const runnerEvent = (projectId: string, kind: string, payload: Record<string, unknown>, at?: number): Ev => ({
  id: `gh.${projectId}.queue.${++seq}`,
  source: `project:${projectId}`,
  kind,
  ts: new Date(at ?? (clock += 1000)).toISOString(),
  payload: { project: projectId, ...payload },
});
const queueEvent = (projectId: string, issues: ReturnType<typeof issue>[], truncated = false, at?: number) =>
  runnerEvent(projectId, 'codehost.queue', { repo: 'acme/x', count: issues.length, issues, truncated }, at);
const issuesDelivery = (repo: string, action: string, edit: (b: any) => void) => postGithub(app.webhookUrl, app.webhookSecret, 'issues', webhookBody('issues.opened', repo, (b) => ((b.action = action), edit(b))));

test('an `issues` delivery puts the row in the queue at once, with no runner online; labeled, closed, an older delivery, deleted', async () => {
  const p = await project(offlineRunner);
  assert.equal(await queue(p.id), { issues: [], refreshedAt: null });
  const live = openLive(server.url, { token: server.admin.token });
  await live.next((n) => n.type === 'ready');
  const opened = await postGithub(app.webhookUrl, app.webhookSecret, 'issues', webhookBody('issues.opened', p.repo.toLowerCase(), (b) => (b.issue.number = 41)));
  assert.is(opened.status, 202, opened.text);
  let q = await queue(p.id);
  assert.equal(q.issues, [
    { number: 41, title: 'Spelling error in the README file', url: `https://github.com/${p.repo.toLowerCase()}/issues/1`, labels: ['bug'], state: 'open', slot: null, updatedAt: '2019-05-15T15:20:18.000Z' },
  ]);
  assert.is(q.refreshedAt, null, 'a delivery is one row, not a read of the whole queue');
  await live.next((n) => n.type === 'fleet' && n.projectId === p.id && n.kind === 'codehost.queue', 10_000);
  live.close();

  await issuesDelivery(p.repo, 'labeled', (b) => Object.assign(b.issue, { number: 41, updated_at: '2019-05-15T15:30:00Z', labels: [{ name: 'bug' }, { name: 'svc' }] }));
  assert.equal((await queue(p.id)).issues[0].labels, ['bug', 'svc']);
  await issuesDelivery(p.repo, 'closed', (b) => Object.assign(b.issue, { number: 41, state: 'closed', updated_at: '2019-05-15T16:00:00Z' }));
  q = await queue(p.id);
  assert.equal([q.issues[0].state, q.issues[0].updatedAt], ['closed', '2019-05-15T16:00:00.000Z']);
  // Delivered late (GitHub does not promise order): older than the row, so nothing changes.
  await issuesDelivery(p.repo, 'edited', (b) => Object.assign(b.issue, { number: 41, title: 'old title', updated_at: '2019-05-15T15:40:00Z' }));
  q = await queue(p.id);
  assert.equal([q.issues[0].state, q.issues[0].title], ['closed', 'Spelling error in the README file']);
  await issuesDelivery(p.repo, 'deleted', (b) => Object.assign(b.issue, { number: 41, updated_at: '2019-05-15T17:00:00Z' }));
  assert.equal((await queue(p.id)).issues, []);
});

test('an `issue_comment` delivery (GitHub\'s recorded body) refreshes a queued issue from its `issue`; it never adds one, nor acts on a pull request\'s comment', async () => {
  const p = await project(offlineRunner);
  const comment = (number: number, edit: (issue: any) => void = () => {}) => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as { name: string; examples: any[] }[]; // eslint-disable-line @typescript-eslint/no-explicit-any
    const body = structuredClone(examples.find((e) => e.name === 'issue_comment')!.examples.find((e) => e.action === 'created' && !e.issue.pull_request));
    body.repository.full_name = p.repo;
    Object.assign(body.issue, { number, updated_at: '2019-05-15T16:00:00Z' });
    edit(body.issue);
    return postGithub(app.webhookUrl, app.webhookSecret, 'issue_comment', body);
  };
  assert.is((await issuesDelivery(p.repo, 'opened', (b) => (b.issue.number = 42))).status, 202);
  assert.is((await comment(42, (i) => Object.assign(i, { title: 'Spelling error, discussed', labels: [{ name: 'bug' }, { name: 'needs-info' }] }))).status, 202);
  let q = await queue(p.id);
  assert.equal([q.issues.length, q.issues[0].title, q.issues[0].labels, q.issues[0].updatedAt], [1, 'Spelling error, discussed', ['bug', 'needs-info'], '2019-05-15T16:00:00.000Z']);
  // A comment on an issue the queue does not hold, and one on a pull request: nothing added, nothing changed.
  assert.is((await comment(43)).status, 202);
  assert.is((await comment(42, (i) => Object.assign(i, { title: 'a pull request', updated_at: '2019-05-15T17:00:00Z', pull_request: { url: `https://api.github.com/repos/${p.repo}/pulls/42` } }))).status, 202);
  q = await queue(p.id);
  assert.equal(q.issues.map((i) => [i.number, i.title]), [[42, 'Spelling error, discussed']]);
});

test('a runner `codehost.queue` event replaces the open set; truncated keeps the others; a re-sent or older one changes nothing; a fleet notice', async () => {
  const p = await project(runnerId);
  const viewer = await makeUser(server, `viewer-${randomBytes(2).toString('hex')}`);
  assert.is((await call(`/api/projects/${p.id}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  const { cookie } = await signIn(server.url, viewer.email, viewer.password);
  const live = openLive(server.url, { cookie });
  await live.next((n) => n.type === 'ready');
  const first = queueEvent(p.id, [issue(1, 'one', ['a']), issue(2, 'two'), issue(3, 'three')]);
  await send(ws, [first]);
  await live.next((n) => n.type === 'fleet' && n.projectId === p.id && n.kind === 'codehost.queue', 10_000);
  live.close();
  let q = await queue(p.id);
  assert.equal(q.issues.map((i) => [i.number, i.title, i.labels, i.state]), [[1, 'one', ['a'], 'open'], [2, 'two', [], 'open'], [3, 'three', [], 'open']]);
  assert.ok(q.refreshedAt && Date.parse(q.refreshedAt) > Date.now() - 60_000);
  assert.is((await call(`/api/projects/${p.id}/queue`, { token: viewer.token })).status, 200, 'a viewer reads it');

  await send(ws, [queueEvent(p.id, [issue(2, 'two, renamed'), issue(4, 'four')])]);
  assert.equal((await queue(p.id)).issues.map((i) => [i.number, i.title]), [[2, 'two, renamed'], [4, 'four']]);
  // Truncated: the shown ones are added or changed, the rest stays.
  await send(ws, [queueEvent(p.id, [issue(5, 'five')], true)]);
  assert.equal((await queue(p.id)).issues.map((i) => i.number), [2, 4, 5]);
  // The first event sent again (a lost ack), and an event the runner made before the last one.
  await send(ws, [{ ...first }, queueEvent(p.id, [issue(9, 'stale')], false, clock - 5000)]);
  assert.equal((await queue(p.id)).issues.map((i) => i.number), [2, 4, 5]);
});

test('an issues.refresh answer replaces the queue; the slot working an issue is named', async () => {
  const p = await project(runnerId);
  await send(ws, [
    runnerEvent(p.id, 'slot.dispatched', { type: 'slot.dispatched', slot: '2', issue: 7, data: { title: 'seven', branch: 'svc/7' }, origin: 'runner' }),
    runnerEvent(p.id, 'slot.dispatched', { type: 'slot.dispatched', slot: '3', issue: 8, data: { title: 'eight' }, origin: 'runner' }),
    runnerEvent(p.id, 'slot.stopped', { type: 'slot.stopped', slot: '3', issue: 8, data: { reason: 'blocked' }, origin: 'runner' }),
  ]);
  const asked = call(`/api/projects/${p.id}/commands`, { method: 'POST', json: { name: 'issues.refresh', args: {} } });
  const cmd = await ws.next('command');
  assert.equal([cmd.name, cmd.args], ['issues.refresh', { projectId: p.id }]);
  ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { projectId: p.id, repo: p.repo, count: 3, issues: [issue(6, 'six'), issue(7, 'seven'), issue(8, 'eight')], changed: true } });
  const answer = await asked;
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  const q = await waitFor('the answer in the queue', async () => {
    const got = await queue(p.id);
    return got.issues.length === 3 && got;
  });
  assert.equal(q.issues.map((i) => [i.number, i.slot]), [[6, null], [7, '2'], [8, null]]);
  assert.ok(q.refreshedAt);
});

test.run();
