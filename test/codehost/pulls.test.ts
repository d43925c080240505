// The server's pull request state, the one arbiter (functions/codehost/pulls.ts; docs/github-app.md,
// "Pull request state"), against the real server, the fake GitHub with an App installed on the
// repository, a protocol client as the project's runner and a subscribed webhook on loopback: an App
// delivery and the runner's poll reporting the same change make ONE pr.* event, in either order; a re-sent
// runner event and a stale one (a pr.opened the poll saw before the close, a delivery older than the
// state) make none; a check_suite delivery reads the head commit's checks with the App's token and makes
// pr.checks_changed once; the Fleet page shows a change only a webhook reported.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { eventId } from '../../functions/webhooks/envelope.ts';
import { githubFake } from '../fakes/github.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { send } from '../helpers/usage-events.ts';
import type { Ev } from '../helpers/usage-events.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { waitFor } from '../triggers/_harness.ts';
import { receiver } from '../webhooks/_harness.ts';
import type { Receiver } from '../webhooks/_harness.ts';
import { postGithub, webhookBody } from './_github.ts';

const SHA = 'ec26c3e57ca3a959ca5aad62de7213c562f8c821'; // the fixtures' head commit
let server: RunningServer;
let fake: GitHubFake;
let rx: Receiver;
let ws: Client;
let app: { webhookUrl: string; webhookSecret: string };
let projectId = '';
let repo = '';
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(server, path, init);

test.before(async () => {
  fake = await githubFake();
  rx = await receiver();
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64') } });
  assert.is((await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } })).status, 200);
  assert.is((await call('/api/webhooks', { method: 'POST', json: { url: `${rx.url}/pr`, events: ['pr.opened', 'pr.checks_changed', 'pr.merged', 'pr.closed'] } })).status, 201);
  const runner = await pairRunner(server.api, server.url, 'pulls-runner');
  repo = `acme/pulls-${randomBytes(3).toString('hex')}`;
  const made = await call('/api/projects', { method: 'POST', json: { name: repo.split('/')[1], repo, runnerId: runner.runnerId, rootPath: '/srv/pulls' } });
  assert.is(made.status, 201);
  projectId = made.body.id;
  ws = connect(server.url, runner.token);
  await ws.next('welcome');
  // Every delivery sends collector.poll too: answered as a runner whose poll found nothing new.
  void (async () => {
    for (;;) {
      const f = await ws.next('command', 600_000).catch(() => null);
      if (!f) return;
      ws.send({ type: 'result', requestId: f.requestId, ok: true, data: { projects: [] } });
    }
  })();
  const gh = fake.app.addApp();
  fake.app.install(gh.id, 'acme', [repo]);
  fake.repo(repo);
  const registered = await call('/api/github-apps', { method: 'POST', json: { name: 'pulls tests', githubAppId: gh.id, privateKey: gh.pem, apiUrl: fake.url } });
  assert.is(registered.status, 201, JSON.stringify(registered.body));
  app = { webhookUrl: registered.body.webhookUrl, webhookSecret: registered.body.webhookSecret };
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
  await rx?.close();
  await fake?.close();
});

/** The pr.* envelopes the webhook received: `type:number[:state]`, in order. */
const received = () =>
  rx.requests.map((r) => JSON.parse(r.body)).map((e) => [e.type, e.data.pr.number, ...(e.type === 'pr.checks_changed' ? [e.data.state] : [])].join(':'));
const of = (n: number) => received().filter((k) => k.split(':')[1] === String(n));

let marker = 1000;
/**
 * Whatever an observation before it would have emitted is in the outbox before this marker's envelope
 * (an earlier transaction); the marker delivered and the dispatcher idle, nothing more can come of them.
 */
async function settled() {
  const n = ++marker;
  await send(ws, [runnerPr('pr.opened', n, 1, { title: 'marker' })]);
  await waitFor(`the marker #${n}`, async () => of(n).length === 1);
  await waitFor('the dispatcher idle', async () => {
    const hooks = (await call('/api/webhooks')).body.webhooks as { id: string }[];
    const all = await Promise.all(hooks.map(async (h) => (await call(`/api/webhooks/${h.id}/deliveries`)).body.deliveries as { status: string }[]));
    return all.flat().every((d) => d.status === 'delivered');
  });
}

let clock = Date.now() - 600_000;
/** A pr.* event as the runner's poll spools it (runner/codehost/changes.ts: gh.<project>.<n>.<opens>.<what>). */
function runnerPr(kind: string, n: number, opens: number, data: Record<string, unknown> = {}, what = kind.slice(3)): Ev {
  return {
    id: `gh.${projectId}.${n}.${opens}.${what}`,
    source: `project:${projectId}`,
    kind,
    ts: new Date((clock += 1000)).toISOString(),
    payload: { project: projectId, type: kind, data: { pr: { number: n, url: `https://github.com/${repo}/pull/${n}` }, ...data }, origin: 'runner' },
  };
}
const pullDelivery = (action: string, n: number, edit: (pr: Record<string, any>) => void = () => {}) =>
  postGithub(
    app.webhookUrl,
    app.webhookSecret,
    'pull_request',
    webhookBody('pull_request.closed', repo, (b) => {
      b.action = action;
      b.number = n;
      Object.assign(b.pull_request, { number: n, html_url: `https://github.com/${repo}/pull/${n}`, state: 'open', merged: false, merged_at: null, closed_at: null });
      edit(b.pull_request);
    }),
  );
const merged = (at: string) => (pr: Record<string, any>) => Object.assign(pr, { state: 'closed', merged: true, merged_at: at, closed_at: at, updated_at: at });

test('a pull_request delivery, closed and merged → one pr.merged at once; the runner poll then reporting the merge → nothing more', async () => {
  const res = await postGithub(app.webhookUrl, app.webhookSecret, 'pull_request', webhookBody('pull_request.closed', repo));
  assert.is(res.status, 202, res.text);
  await waitFor('the pr.merged delivery', async () => of(2).length === 1);
  const envelope = JSON.parse(rx.requests.find((r) => JSON.parse(r.body).data.pr.number === 2)!.body);
  assert.equal([envelope.id, envelope.type, envelope.project.id], [eventId('server', 'codehost', projectId, '2', '1', 'merged', 'pr.merged'), 'pr.merged', projectId]);
  assert.equal(envelope.data, { pr: { number: 2, url: `https://github.com/${repo}/pull/2` }, title: 'Update the README with new information.' });
  await send(ws, [runnerPr('pr.merged', 2, 1, { title: 'Update the README with new information.' })]);
  await settled();
  assert.equal(of(2), ['pr.merged:2']);
  // The activity feed has it once too: it records each envelope, whichever source reported the change.
  const feed = (await call(`/api/activity?projectId=${projectId}&kind=pr.merged`)).body.items as { kind: string; data: { pr?: { number: number } } }[];
  assert.equal(feed.filter((i) => i.data.pr?.number === 2).map((i) => i.kind), ['pr.merged']);
  // GitHub redelivering it (a new delivery id, the same state) changes nothing either.
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'pull_request', webhookBody('pull_request.closed', repo))).status, 202);
  await settled();
  assert.equal(of(2), ['pr.merged:2']);
});

test('the other order: the runner poll reports the merge first → one pr.merged; the delivery after it → nothing', async () => {
  await send(ws, [runnerPr('pr.merged', 3, 1, { title: 'three' })]);
  await waitFor('the pr.merged delivery', async () => of(3).length === 1);
  assert.is((await pullDelivery('closed', 3, merged('2026-01-02T10:00:00Z'))).status, 202);
  await settled();
  assert.equal(of(3), ['pr.merged:3']);
});

test('a re-sent runner event → nothing new; a stale pr.opened after the close, and a delivery older than the state → nothing', async () => {
  const opened = runnerPr('pr.opened', 4, 1, { title: 'four', branch: 'svc/4' });
  await send(ws, [opened]);
  await send(ws, [{ ...opened }]); // the ack was lost: the runner sends the batch again
  await settled();
  assert.equal(of(4), ['pr.opened:4']);

  assert.is((await pullDelivery('opened', 5, (pr) => (pr.updated_at = '2026-01-03T10:00:00Z'))).status, 202);
  assert.is((await pullDelivery('closed', 5, (pr) => Object.assign(pr, { state: 'closed', closed_at: '2026-01-03T11:00:00Z', updated_at: '2026-01-03T11:00:00Z' }))).status, 202);
  await waitFor('opened and closed', async () => of(5).length === 2);
  // The runner's poll saw #5 open before it closed; its event arrives after the close.
  await send(ws, [runnerPr('pr.opened', 5, 1, { title: 'five' })]);
  // A delivery GitHub made before the close, arriving late (deliveries are not ordered).
  assert.is((await pullDelivery('reopened', 5, (pr) => (pr.updated_at = '2026-01-03T10:30:00Z'))).status, 202);
  await settled();
  assert.equal(of(5), ['pr.opened:5', 'pr.closed:5']);
  // A real reopening (newer than the close) is a new opening, with its own id.
  assert.is((await pullDelivery('reopened', 5, (pr) => (pr.updated_at = '2026-01-03T12:00:00Z'))).status, 202);
  await waitFor('reopened', async () => of(5).length === 3);
  const ids = rx.requests.map((r) => JSON.parse(r.body)).filter((e) => e.data.pr.number === 5).map((e) => e.id);
  assert.equal(ids, [
    eventId('server', 'codehost', projectId, '5', '1', 'opened', 'pr.opened'),
    eventId('server', 'codehost', projectId, '5', '1', 'closed', 'pr.closed'),
    eventId('server', 'codehost', projectId, '5', '2', 'opened', 'pr.opened'),
  ]);
});

test('a check_suite delivery → the head commit’s checks read with the App token → pr.checks_changed once; the poll and a check_run agreeing → nothing; failing → once more', async () => {
  fake.repo(repo).checkRuns[SHA] = [{ name: 'build', status: 'completed', conclusion: 'success' }];
  fake.repo(repo).statuses[SHA] = [{ context: 'lint', state: 'success' }];
  assert.is((await pullDelivery('opened', 6, (pr) => (pr.updated_at = '2026-01-04T10:00:00Z'))).status, 202);
  await waitFor('#6 opened', async () => of(6).length === 1);
  const suite = (conclusion: string) => webhookBody('check_suite.completed', repo, (b) => ((b.check_suite.pull_requests[0].number = 6), (b.check_suite.conclusion = conclusion)));
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'check_suite', suite('success'))).status, 202);
  await waitFor('the checks', async () => of(6).length === 2);
  assert.equal(of(6), ['pr.opened:6', 'pr.checks_changed:6:passed']);
  const checked = rx.requests.map((r) => JSON.parse(r.body)).find((e) => e.type === 'pr.checks_changed' && e.data.pr.number === 6);
  assert.equal(checked.data.summary, '2 checks: 2 passed, 0 failed, 0 pending');
  const reads = fake.requests.filter((r) => r.path.includes(`/commits/${SHA}/`));
  assert.ok(reads.length >= 2 && reads.every((r) => r.status === 200 && r.token && r.token !== fake.token), 'read with the installation token');

  const run = webhookBody('check_suite.completed', repo, (b) => {
    b.action = 'completed';
    b.check_run = { ...b.check_suite, name: 'build', status: 'completed', completed_at: '2026-01-04T10:05:00Z', pull_requests: [{ ...b.check_suite.pull_requests[0], number: 6 }] };
    delete b.check_suite;
  });
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'check_run', run)).status, 202);
  await send(ws, [runnerPr('pr.checks_changed', 6, 1, { state: 'passed', summary: '2 checks: 2 passed, 0 failed, 0 pending' }, 'checks.1')]);
  await settled();
  await waitFor('the check_run delivery read its checks', async () => fake.requests.filter((r) => r.path.includes(`/commits/${SHA}/`)).length >= reads.length + 2);
  await settled();
  assert.equal(of(6), ['pr.opened:6', 'pr.checks_changed:6:passed']);

  fake.repo(repo).checkRuns[SHA] = [{ name: 'build', status: 'completed', conclusion: 'failure' }];
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'check_suite', suite('failure'))).status, 202);
  await waitFor('failed', async () => of(6).length === 3);
  assert.equal(of(6).at(-1), 'pr.checks_changed:6:failed');

  // A commit status names no pull request: the ones the server knows with that head are observed.
  fake.repo(repo).checkRuns[SHA] = [{ name: 'build', status: 'completed', conclusion: 'success' }];
  const status = { sha: SHA, state: 'success', context: 'lint', updated_at: '2026-01-04T10:20:00Z', repository: webhookBody('check_suite.completed', repo).repository };
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'status', status)).status, 202);
  await waitFor('passed again', async () => of(6).length === 4);
  assert.equal(of(6).at(-1), 'pr.checks_changed:6:passed');
});

test('the Fleet page shows what only a webhook reported: the slot’s PR (by its branch) and its merge', async () => {
  const slotEvent: Ev = {
    id: `fleet.slot.${randomBytes(3).toString('hex')}`,
    source: `project:${projectId}`,
    kind: 'slot.dispatched',
    ts: new Date((clock += 1000)).toISOString(),
    payload: { project: projectId, type: 'slot.dispatched', slot: '1', issue: 70, data: { title: 'seventy', branch: 'svc/70' }, origin: 'runner' },
  };
  await send(ws, [slotEvent]);
  const slot = async () => (await call(`/api/projects/${projectId}/fleet`)).body.slots.find((s: { slot: string }) => s.slot === '1');
  assert.is((await slot()).pr, null);
  assert.is((await pullDelivery('opened', 70, (pr) => Object.assign(pr, { title: 'Fix seventy', updated_at: '2026-01-05T10:00:00Z', head: { ...pr.head, ref: 'svc/70' } }))).status, 202);
  assert.equal((await slot()).pr, { number: 70, url: `https://github.com/${repo}/pull/70`, title: 'Fix seventy', state: 'open' });
  assert.is((await pullDelivery('closed', 70, (pr) => (merged('2026-01-05T11:00:00Z')(pr), (pr.head = { ...pr.head, ref: 'svc/70' })))).status, 202);
  assert.is((await slot()).pr.state, 'merged');
});

test.run();
