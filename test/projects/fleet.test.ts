// GET /api/projects/:id/fleet: a project's slots as its runner's events recorded them (issue, latest
// checkpoint, pull request and its checks, stopped), the orchestrator's last start or stop; only this
// project's events of this project's runner; a new dispatch into a slot forgets the previous issue's
// PR; viewers may read it, others get 404.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { send } from '../helpers/usage-events.ts';
import type { Ev } from '../helpers/usage-events.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

let server: RunningServer;
let ws: Client;
let projectId = '';
let otherId = '';
test.before(async () => {
  server = await startServer({ admin: true });
  const paired = await pairRunner(server.api, server.url, 'fleet-box');
  const make = async (name: string, root: string) =>
    (await callAs(server, '/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: paired.runnerId, rootPath: root } })).body.id as string;
  projectId = await make('fleet-a', '/srv/a');
  otherId = await make('fleet-b', '/srv/b');
  ws = connect(server.url, paired.token);
  await ws.next('welcome');
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

let n = 0;
let clock = Date.now() - 60_000;
/** A fleet event as the runner spools it (runner/fleet.ts fleetSpoolEvent). */
function fleet(project: string, type: string, extra: { slot?: string; issue?: number; data?: Record<string, unknown> } = {}): Ev {
  clock += 1000;
  return {
    id: `fleet.${++n}.${randomBytes(4).toString('hex')}`,
    source: `project:${project}`,
    kind: type,
    ts: new Date(clock).toISOString(),
    payload: { project, type, ...(extra.slot ? { slot: extra.slot } : {}), ...(extra.issue ? { issue: extra.issue } : {}), data: extra.data ?? {}, origin: 'runner' },
  };
}

test('slots from recorded events: issue, latest checkpoint, PR and its checks; another project’s events stay out', async () => {
  await send(ws, [
    fleet(projectId, 'orchestrator.started', { data: { profile: 'p' } }),
    fleet(projectId, 'slot.dispatched', { slot: '1', issue: 7, data: { title: 'Fix the login', branch: 'svc/7' } }),
    fleet(projectId, 'slot.checkpoint', { slot: '1', issue: 7, data: { checkpoint: 'plan_ready', summary: 'plan written' } }),
    fleet(projectId, 'pr.opened', { slot: '1', issue: 7, data: { pr: { number: 12, url: 'https://github.example/acme/fleet-a/pull/12' }, title: 'Fix login', branch: 'svc/7' } }),
    fleet(projectId, 'slot.checkpoint', { slot: '1', issue: 7, data: { checkpoint: 'pr_open', summary: 'waiting for review' } }),
    // Checks reported without a slot: matched by the PR number.
    fleet(projectId, 'pr.checks_changed', { data: { pr: { number: 12 }, state: 'failed', summary: '1 of 3 failed' } }),
    fleet(projectId, 'slot.dispatched', { slot: '2', issue: 8, data: { title: 'Docs' } }),
    fleet(projectId, 'slot.stopped', { slot: '2', issue: 8, data: { reason: 'blocked' } }),
    fleet(otherId, 'slot.dispatched', { slot: '1', issue: 99, data: { title: 'Not this project' } }),
    fleet(projectId, 'orchestrator.stopped', { data: { reason: 'stopped' } }),
  ]);
  const res = await callAs(server, `/api/projects/${projectId}/fleet`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  const { orchestrator, slots } = res.body;
  assert.is(orchestrator.state, 'stopped');
  assert.is(orchestrator.reason, 'stopped');
  assert.equal(slots.map((s: { slot: string }) => s.slot), ['1', '2']);
  const [one, two] = slots;
  assert.equal([one.issue, one.title, one.branch], [7, 'Fix the login', 'svc/7']);
  assert.equal([one.checkpoint.name, one.checkpoint.summary], ['pr_open', 'waiting for review']);
  assert.equal(one.pr, { number: 12, url: 'https://github.example/acme/fleet-a/pull/12', title: 'Fix login', state: 'open' });
  assert.equal([one.checks.state, one.checks.summary], ['failed', '1 of 3 failed']);
  assert.is(one.stopped, null);
  assert.equal([two.issue, two.stopped.reason, two.pr], [8, 'blocked', null]);
  const other = await callAs(server, `/api/projects/${otherId}/fleet`);
  assert.equal(other.body.slots.map((s: { issue: number }) => s.issue), [99]);
});

test('a merged PR says so; a new dispatch into the slot forgets the previous issue’s PR, checks and checkpoint', async () => {
  await send(ws, [fleet(projectId, 'pr.merged', { data: { pr: { number: 12 }, title: 'Fix login' } })]);
  let one = (await callAs(server, `/api/projects/${projectId}/fleet`)).body.slots[0];
  assert.is(one.pr.state, 'merged');
  await send(ws, [fleet(projectId, 'slot.dispatched', { slot: '1', issue: 9, data: { title: 'Next issue' } })]);
  one = (await callAs(server, `/api/projects/${projectId}/fleet`)).body.slots[0];
  assert.equal([one.issue, one.title, one.pr, one.checks, one.checkpoint], [9, 'Next issue', null, null, null]);
});

test('a viewer of the project reads it; a user without a role gets 404; a project without a runner has no slots', async () => {
  const viewer = await makeUser(server, 'viewer');
  const stranger = await makeUser(server, 'stranger');
  assert.is((await callAs(server, `/api/projects/${projectId}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  assert.is((await callAs(server, `/api/projects/${projectId}/fleet`, { token: viewer.token })).status, 200);
  assert.is((await callAs(server, `/api/projects/${projectId}/fleet`, { token: stranger.token })).status, 404);
  const bare = (await callAs(server, '/api/projects', { method: 'POST', json: { name: 'bare', repo: 'acme/bare' } })).body.id;
  const res = await callAs(server, `/api/projects/${bare}/fleet`);
  assert.equal([res.status, res.body.runnerId, res.body.orchestrator, res.body.slots], [200, null, null, []]);
});

test.run();
