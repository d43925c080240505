// Spend caps on the unit of work (issue #40 part 1; docs/cost.md "Caps"), against the real server with a
// runner client speaking the runner protocol: caps are set with PATCH /api/projects/:id (validated,
// audited, admins only); an issue's usage crosses 80 % (one cap.warning, once) and then its cap (the
// server sends slot.stop with a hold on the issue, the fleet view shows paused_cap with the figures, the
// admins get cap.reached with "Raise the cap by $N and continue" and "Stop this issue"); Raise sends
// slot.resume for the same slot and the issue runs on under the raised cap; Stop ends it; a run that
// passes its cap is cancelled with reason cap_reached; a viewer or another project's admin can neither
// PATCH caps nor use the link.
import { test } from 'uvu';
import { notificationText } from '../../protocol/notification-text.ts';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { meta, otelReq, send, tok, uid } from '../helpers/usage-events.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, createTrigger, makeProject, post, skillTrigger, waitFor } from '../triggers/_harness.ts';
import { act, signIn, tokenOf } from '../act/_harness.ts';

let server: RunningServer;
let ws: Client;
let project = '';
let other = '';
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
// $0.30 a request: 20 000 output tokens of claude-sonnet-4-5 at $15 per million.
const REQUEST_USD = 0.3;
const request = (issue: number, slot: string, sessionId: string) => otelReq(sessionId, 'claude-sonnet-4-5', `req_${uid()}`, tok(0, 20_000), { project, slot, issue: String(issue) });
const notifications = async (kind: string) => ((await call('/api/notifications')).body.notifications as any[]).filter((n) => n.kind === kind);

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  const r = await pairRunner(server.api, server.url, 'caps-box');
  project = await makeProject(server, r.runnerId);
  other = await makeProject(server, r.runnerId);
  ws = connect(server.url, r.token);
  await ws.next('welcome');
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

test('caps: PATCH validates and names the field, is audited and answered in the project; a viewer or another project’s admin cannot', async () => {
  const bad = await call(`/api/projects/${project}`, { method: 'PATCH', json: { caps: { perIssueUSD: -1 } } });
  assert.is(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /perIssueUSD/);
  const zero = await call(`/api/projects/${project}`, { method: 'PATCH', json: { caps: { perRunUSD: 0 } } });
  assert.is(zero.status, 400);
  assert.match(JSON.stringify(zero.body), /perRunUSD/);
  const ok = await call(`/api/projects/${project}`, { method: 'PATCH', json: { caps: { perIssueUSD: 1 } } });
  assert.equal([ok.status, ok.body.caps], [200, { perIssueUSD: 1, perRunUSD: null }]);
  const kept = await call(`/api/projects/${project}`, { method: 'PATCH', json: { caps: { perRunUSD: 0.5 } } });
  assert.equal(kept.body.caps, { perIssueUSD: 1, perRunUSD: 0.5 });
  assert.equal((await call(`/api/projects/${project}`)).body.caps, { perIssueUSD: 1, perRunUSD: 0.5 });
  const records = (await call('/api/audit?action=project.update')).body.records as any[];
  assert.ok(records.some((x) => x.diff.after?.caps?.perRunUSD === 0.5 && x.diff.before?.caps?.perRunUSD === null), 'audited');

  const viewer = await makeUser(server, 'caps-viewer');
  const otherAdmin = await makeUser(server, 'caps-other-admin');
  assert.is((await call(`/api/projects/${project}/members`, { method: 'POST', json: { email: viewer.email, role: 'viewer' } })).status, 201);
  assert.is((await call(`/api/projects/${other}/members`, { method: 'POST', json: { email: otherAdmin.email, role: 'admin' } })).status, 201);
  for (const u of [viewer, otherAdmin]) {
    const r = await call(`/api/projects/${project}`, { method: 'PATCH', token: u.token, json: { caps: { perIssueUSD: 100 } } });
    assert.ok(r.status === 403 || r.status === 404, `${u.email}: ${r.status}`);
  }
  assert.equal((await call(`/api/projects/${project}`)).body.caps, { perIssueUSD: 1, perRunUSD: 0.5 });
});

test('an issue passes its cap: warning once at 80 %, slot.stop with a hold within one request, paused_cap with the figures, both actions; Raise resumes the same slot, Stop ends it', async () => {
  const issue = 41;
  await send(ws, [meta('claude', 'sess-a', { project, slot: 'a', issue: String(issue) })]);
  // $0.30, $0.60: nothing yet.
  for (let i = 0; i < 2; i++) await send(ws, [request(issue, 'a', 'sess-a')]);
  assert.is((await notifications('cap.warning')).length, 0);
  // $0.90: 80 % of $1.00, one warning.
  await send(ws, [request(issue, 'a', 'sess-a')]);
  const warning = await waitFor('cap.warning', async () => (await notifications('cap.warning'))[0]);
  assert.equal([warning.data.issue, warning.data.capUsd, warning.data.costUsd], [issue, 1, 0.9]);
  // $1.20: the cap is reached; the server stops the slot and holds the issue.
  await send(ws, [request(issue, 'a', 'sess-a')]);
  const stop = await ws.next('command');
  assert.equal([stop.name, stop.args], ['slot.stop', { projectId: project, slot: 'a', hold: { issue, reason: 'cap' } }]);
  ws.send({ type: 'result', requestId: stop.requestId, ok: true, data: { stopped: true, slot: 'a', held: issue } });
  const reached = await waitFor('cap.reached', async () => (await notifications('cap.reached'))[0]);
  assert.equal([reached.data.issue, reached.data.capUsd, reached.data.costUsd, reached.data.state], [issue, 1, 1.2, 'paused_cap']);
  assert.ok(reached.data.costUsd - reached.data.capUsd <= REQUEST_USD + 1e-9, 'paused within one request of the cap');
  assert.equal(reached.actions.map((a: any) => a.label), ['Raise the cap by $1.00 and continue', 'Stop this issue']);
  assert.is(notificationText({ kind: 'cap.reached', projectName: 'P', data: reached.data }), `Cost cap [P]: issue #${issue} reached its cap ($1.20 of $1.00); its slot a is paused until an admin raises the cap or stops the issue`);
  assert.is((await notifications('cap.warning')).length, 1, 'the warning once');

  // The fleet view: the slot (dispatched before) is paused_cap with spent/cap — waited on, not read once.
  await send(ws, [{ id: `fleet.${uid()}`, source: `project:${project}`, kind: 'slot.dispatched', ts: new Date(Date.now() - 30_000).toISOString(), payload: { project, type: 'slot.dispatched', slot: 'a', issue, data: { title: 'Capped' }, origin: 'runner' } }]);
  const slot = await waitFor('paused_cap on the fleet view', async () => ((await call(`/api/projects/${project}/fleet`)).body.slots as any[]).find((s) => s.slot === 'a' && s.cap?.state === 'paused_cap'));
  assert.equal([slot.cap.costUsd, slot.cap.capUsd], [1.2, 1]);

  // More usage while paused (late records) makes no second pause.
  await send(ws, [request(issue, 'a', 'sess-a')]);
  assert.is((await notifications('cap.reached')).length, 1);

  // Another project's admin cannot use the link; the admin raises.
  const otherAdmin = await makeUser(server, 'caps-other2');
  assert.is((await call(`/api/projects/${other}/members`, { method: 'POST', json: { email: otherAdmin.email, role: 'admin' } })).status, 201);
  const raise = tokenOf(reached.actions[0].url);
  const otherSession = await signIn(server, otherAdmin.email, otherAdmin.password);
  const refused = await act(server, 'POST', tokenOf(((await callAs(server, '/api/notifications', { token: otherAdmin.token })).body.notifications as any[]).find((n) => n.kind === 'cap.reached')?.actions?.[0]?.url ?? reached.actions[0].url), otherSession);
  assert.ok(refused.status === 403 || refused.status === 404, `other admin: ${refused.status}`);
  const admin = await signIn(server, server.admin.email, server.admin.password);
  const d = await act(server, 'GET', raise, admin);
  assert.equal([d.status, d.body.facts.costUsd, d.body.facts.capUsd, d.body.facts.slot], [200, 1.2, 1, 'a']);
  const done = act(server, 'POST', raise, admin);
  const resume = await ws.next('command');
  assert.equal([resume.name, resume.args], ['slot.resume', { projectId: project, slot: 'a', issue }]);
  ws.send({ type: 'result', requestId: resume.requestId, ok: true, data: { resumed: true, slot: 'a', issue } });
  const r = await done;
  assert.equal([r.status, r.body.data.capUsd, r.body.data.slot], [200, 2, 'a']);
  await waitFor('the slot no longer paused', async () => ((await call(`/api/projects/${project}/fleet`)).body.slots as any[]).find((s) => s.slot === 'a' && !s.cap));
  assert.is((await act(server, 'POST', raise, admin)).status, 409, 'a link is used once');

  // It runs on: $1.80 so far, two more requests reach $2.00 → paused again (a new pause, new links).
  await send(ws, [request(issue, 'a', 'sess-a')]);
  await send(ws, [request(issue, 'a', 'sess-a')]);
  const stop2 = await ws.next('command');
  assert.is(stop2.name, 'slot.stop');
  ws.send({ type: 'result', requestId: stop2.requestId, ok: true, data: { stopped: true } });
  const second = await waitFor('the second cap.reached', async () => (await notifications('cap.reached')).find((n) => n.data.capUsd === 2));
  // $1.20 at the pause + $0.30 recorded while paused + two requests after the raise: $2.10 for a cap of $2.00.
  assert.is(second.data.costUsd, 2.1);
  assert.is((await act(server, 'POST', raise, admin)).status, 409, 'the first pause’s link cannot act on the second');
  const stopped = await act(server, 'POST', tokenOf(second.actions[1].url), admin);
  assert.equal([stopped.status, stopped.body.outcome], [200, `Issue #${issue} stopped`]);
  const s = await waitFor('stopped on the fleet view', async () => ((await call(`/api/projects/${project}/fleet`)).body.slots as any[]).find((x) => x.slot === 'a' && x.cap?.state === 'stopped'));
  assert.is(s.cap.state, 'stopped');
  // Stopped stays stopped: late records (requests made before the pause) send nothing and notify nothing.
  await send(ws, [request(issue, 'a', 'sess-a')]);
  assert.is((await notifications('cap.reached')).length, 2);
  assert.is((await act(server, 'POST', tokenOf(second.actions[0].url), admin)).status, 409);
  // A worker that works on it again anyway (its hold removed by hand, dispatched in slot b): its first
  // request made after the stop sends it the stop with the hold again; a second one within 30 s does not.
  const recent = () => {
    const e = request(issue, 'b', 'sess-b');
    return { ...e, payload: { ...e.payload, at: new Date().toISOString() } };
  };
  const again = send(ws, [recent()]);
  const restop = await ws.next('command');
  assert.equal([restop.name, restop.args], ['slot.stop', { projectId: project, slot: 'b', hold: { issue, reason: 'cap' } }]);
  ws.send({ type: 'result', requestId: restop.requestId, ok: true, data: { stopped: true, slot: 'b', held: issue } });
  await again;
  const before = ws.frames.filter((f: any) => f.type === 'command').length;
  await send(ws, [recent()]);
  assert.is(ws.frames.filter((f: any) => f.type === 'command').length, before, 'at most one stop again every 30 s');
  assert.is((await notifications('cap.reached')).length, 2, 'and no new notification');
});

test('a run passes its cap: skill.cancel, reason cap_reached, a notification', async () => {
  const runId = `run-${uid()}`;
  const now = new Date().toISOString();
  await send(ws, [{ id: `run.${runId}.running`, source: `project:${project}`, kind: 'skill_run.state', ts: now, payload: { runId, project, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state: 'running', at: now } }]);
  await waitFor('the run', async () => (await call(`/api/runs/${runId}`)).status === 200);
  // The project's perRunUSD is $0.50: the second request ($0.60) passes it.
  const req = () => otelReq(`sess-${runId}`, 'claude-sonnet-4-5', `req_${uid()}`, tok(0, 20_000), { project, run: runId });
  await send(ws, [req()]);
  await send(ws, [req()]);
  const cancel = await ws.next('command');
  assert.equal([cancel.name, cancel.args], ['skill.cancel', { projectId: project, runId }]);
  ws.send({ type: 'result', requestId: cancel.requestId, ok: true, data: { runId, state: 'cancelled' } });
  const run = (await call(`/api/runs/${runId}`)).body;
  assert.is(run.reason ?? run.run?.reason, 'cap_reached');
  const n = await waitFor('cap.reached for the run', async () => (await notifications('cap.reached')).find((x) => x.data.runId === runId));
  assert.equal([n.data.capUsd, n.data.costUsd, n.data.state], [0.5, 0.6, 'cancelled']);
});

test('a trigger’s capUSD is the cap of the runs it starts (validated; only for the skill action)', async () => {
  const bad = await call(`/api/projects/${project}/triggers`, { method: 'POST', json: skillTrigger({ name: 'bad cap', capUSD: 'lots' }) });
  assert.is(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /capUSD/);
  const round = await call(`/api/projects/${project}/triggers`, { method: 'POST', json: { name: 'round', action: 'next_round', capUSD: 1 } });
  assert.is(round.status, 400);
  assert.match(JSON.stringify(round.body), /capUSD/);
  const t = await createTrigger(server, project, skillTrigger({ name: `capped ${uid()}`, capUSD: 0.4 }));
  assert.is(t.trigger.capUSD, 0.4);
  const [hook, cmd] = await Promise.all([post(t.url, t.secret, { ref: 'main' }, { delivery: `cap-${uid()}` }), ws.next('command')]);
  assert.is(hook.status, 202);
  assert.is(cmd.name, 'skill.run');
  const runId = `run-${uid()}`;
  ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { runId, state: 'queued' } });
  await waitFor('the delivery fired', async () => ((await call(`/api/projects/${project}/triggers/${t.id}/deliveries`)).body.deliveries as any[]).find((d) => d.status === 'fired'));
  const req = () => otelReq(`sess-${runId}`, 'claude-sonnet-4-5', `req_${uid()}`, tok(0, 20_000), { project, run: runId });
  await send(ws, [req()]);
  await send(ws, [req()]);
  const cancel = await ws.next('command');
  assert.equal([cancel.name, cancel.args], ['skill.cancel', { projectId: project, runId }]);
  ws.send({ type: 'result', requestId: cancel.requestId, ok: true, data: { runId, state: 'cancelled' } });
  const n = await waitFor('cap.reached for the trigger’s run', async () => (await notifications('cap.reached')).find((x) => x.data.runId === runId));
  assert.equal([n.data.capUsd, n.data.costUsd], [0.4, 0.6], 'the trigger’s $0.40, not the project’s $0.50');
});

test.run();
