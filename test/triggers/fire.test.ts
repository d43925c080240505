// Firing (spec: Inbound delivery states; docs/triggers.md, "What happens after 202"): a protocol client
// paired as the project's runner receives `skill.run` with the rendered args on behalf of the creator,
// and the delivery log records the run id; each skip and failure reason; next_round sends
// orchestrator.start {next: true}. The decision rules themselves are also checked as a pure function.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decide } from '../../functions/triggers/fire.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { connect } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { createTrigger, deliveries, makeProject, post, setup, skillTrigger, waitFor } from './_harness.ts';
import type { Made, Setup } from './_harness.ts';

let s: Setup;
let ws: Client;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(s.server, path, init);

test.before(async () => {
  s = await setup();
  ws = connect(s.server.url, s.runner.token);
  await ws.next('welcome');
});
test.after(async () => {
  ws?.ws.close();
  await s?.server.cleanup();
});

/** The delivery's row once it has left `accepted`/`firing`. */
const settled = (t: Made, deliveryId: string, projectId = s.projectId) =>
  waitFor(`delivery ${deliveryId} settled`, async () => (await deliveries(s.server, projectId, t.id)).find((d) => d.deliveryId === deliveryId && !['accepted', 'firing'].includes(d.status)));

/** Answer the next command frame as the runner would. */
async function answer(ok: boolean, data: unknown, error?: { code: string; message: string }) {
  const cmd = await ws.next('command');
  ws.send({ type: 'result', requestId: cmd.requestId, ok, ...(ok ? { data } : { error }) });
  return cmd;
}

/** A skill_run.state event for a run, as the runner reports it. */
async function reportRun(runId: string, state: string, projectId = s.projectId) {
  const now = new Date().toISOString();
  const payload = { runId, project: projectId, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state, at: now };
  ws.send({ type: 'events', events: [{ id: `run.${runId}.${state}`, source: `project:${projectId}`, kind: 'skill_run.state', ts: now, payload }] });
  await ws.next('ack');
}

test('decide(): the rules in order — disabled, creator, live run, budget, else fire', () => {
  const ok = { enabled: true, creatorAuthorized: true, live: false, budgetExceeded: false };
  assert.equal(decide(ok), { status: 'firing' });
  assert.equal(decide({ ...ok, enabled: false, creatorAuthorized: false }), { status: 'skipped', reason: 'trigger_disabled' });
  assert.equal(decide({ ...ok, creatorAuthorized: false, live: true }), { status: 'failed', reason: 'creator_not_authorized' });
  assert.equal(decide({ ...ok, live: true, budgetExceeded: true }), { status: 'skipped', reason: 'previous_still_running' });
  assert.equal(decide({ ...ok, budgetExceeded: true }), { status: 'skipped', reason: 'budget_exceeded' });
});

test('skill action: skill.run reaches the runner with the rendered args, profile, model, output; the run id is recorded', async () => {
  const t = await createTrigger(s.server, s.projectId, skillTrigger({ args: ['--ref', '{{payload.ref}}', 'PR #{{payload.pr.number}}'], allowedPaths: ['ref', 'pr.number'], profile: 'cc', model: 'claude-opus-4-1', output: 'pull_request' }));
  const res = await post(t.url, t.secret, { ref: 'feature/x', pr: { number: 12 }, ignored: '$(rm -rf /)' }, { delivery: 'fire-1' });
  assert.is(res.status, 202);
  const cmd = await answer(true, { runId: 'run-fire-1', state: 'running', projectId: s.projectId });
  assert.is(cmd.name, 'skill.run');
  assert.equal(cmd.args, { projectId: s.projectId, skill: 'review', args: ['--ref', 'feature/x', 'PR #12'], profileId: 'cc', model: 'claude-opus-4-1', output: 'pull_request' });
  const row = await settled(t, 'fire-1');
  assert.equal([row.status, row.reason, row.runId, row.runUrl], ['fired', null, 'run-fire-1', '/api/runs/run-fire-1']);
  assert.ok(row.firedAt);
  // On behalf of the creator: the command row names the admin who made the trigger.
  await reportRun('run-fire-1', 'succeeded');
  assert.is((await call('/api/runs/run-fire-1')).status, 200, 'the log links to a run the API serves');
});

test('previous_still_running: while the run is live the next delivery is skipped and nothing is sent; once it ended, it fires', async () => {
  const t = await createTrigger(s.server, s.projectId);
  await post(t.url, t.secret, { ref: 'a' }, { delivery: 'live-1' });
  await answer(true, { runId: 'run-live-1', state: 'queued' });
  await settled(t, 'live-1');
  await reportRun('run-live-1', 'running');
  await post(t.url, t.secret, { ref: 'b' }, { delivery: 'live-2' });
  const skipped = await settled(t, 'live-2');
  assert.equal([skipped.status, skipped.reason, skipped.runId], ['skipped', 'previous_still_running', null]);
  assert.not.ok(ws.frames.some((f) => f.type === 'command' && (f.args as { args?: string[] }).args?.includes('b')), 'no command for the skipped delivery');
  await reportRun('run-live-1', 'succeeded');
  await post(t.url, t.secret, { ref: 'c' }, { delivery: 'live-3' });
  const cmd = await answer(true, { runId: 'run-live-3', state: 'running' });
  assert.equal(cmd.args.args, ['--ref', 'c']);
  assert.is((await settled(t, 'live-3')).status, 'fired');
});

test('a fired run whose record has not arrived yet still counts as live', async () => {
  const t = await createTrigger(s.server, s.projectId);
  await post(t.url, t.secret, { ref: 'a' }, { delivery: 'unrep-1' });
  await answer(true, { runId: 'run-unreported', state: 'starting' });
  await settled(t, 'unrep-1');
  await post(t.url, t.secret, { ref: 'b' }, { delivery: 'unrep-2' });
  assert.is((await settled(t, 'unrep-2')).reason, 'previous_still_running');
});

test('command_refused: the runner refuses skill.run → failed with the runner’s message', async () => {
  const t = await createTrigger(s.server, s.projectId, skillTrigger({ skill: 'nosuch' }));
  await post(t.url, t.secret, { ref: 'a' }, { delivery: 'refuse-1' });
  await answer(false, null, { code: 'unknown_skill', message: 'no skill nosuch in ~/.claude/skills' });
  const row = await settled(t, 'refuse-1');
  assert.equal([row.status, row.reason, row.detail], ['failed', 'command_refused', 'unknown_skill: no skill nosuch in ~/.claude/skills']);
});

test('next_round: orchestrator.start {projectId, next: true} on behalf of the creator', async () => {
  const t = await createTrigger(s.server, s.projectId, { name: 'nightly', action: 'next_round' });
  const res = await post(t.url, t.secret, { anything: 'goes' }, { delivery: 'round-1' });
  assert.is(res.status, 202);
  const cmd = await answer(true, { started: true });
  assert.is(cmd.name, 'orchestrator.start');
  assert.equal(cmd.args, { projectId: s.projectId, next: true });
  const row = await settled(t, 'round-1');
  assert.equal([row.status, row.runId], ['fired', null]);
});

test('creator_not_authorized: the creator lost the admin role → failed, the trigger disabled itself (audited), later POSTs 404', async () => {
  const padmin = await makeUser(s.server, `creator-${randomBytes(2).toString('hex')}`);
  assert.is((await call(`/api/projects/${s.projectId}/members/${padmin.id}`, { method: 'PUT', json: { role: 'admin' } })).status, 200);
  const t = await createTrigger(s.server, s.projectId, skillTrigger(), padmin.token);
  assert.is((await call(`/api/projects/${s.projectId}/members/${padmin.id}`, { method: 'PUT', json: { role: 'operator' } })).status, 200);
  const res = await post(t.url, t.secret, { ref: 'a' }, { delivery: 'creator-1' });
  assert.is(res.status, 202, 'the caller still gets 202');
  const row = await settled(t, 'creator-1');
  assert.equal([row.status, row.reason], ['failed', 'creator_not_authorized']);
  const after = await call(`/api/projects/${s.projectId}/triggers/${t.id}`);
  assert.equal([after.body.enabled, after.body.disabledReason], [false, 'creator_not_authorized']);
  const audit = await call(`/api/audit?targetType=trigger&targetId=${t.id}`);
  assert.ok(audit.body.records.some((r: { action: string; actorLabel: string }) => r.action === 'trigger.disable' && r.actorLabel === 'system'));
  assert.is((await post(t.url, t.secret, { ref: 'a' })).status, 404);
  assert.not.ok(ws.frames.some((f) => f.type === 'command' && (f.args as { args?: string[] }).args?.includes('creator')), 'nothing sent');
});

test('creator_not_authorized: a deactivated creator', async () => {
  const padmin = await makeUser(s.server, `gone-${randomBytes(2).toString('hex')}`);
  await call(`/api/projects/${s.projectId}/members/${padmin.id}`, { method: 'PUT', json: { role: 'admin' } });
  const t = await createTrigger(s.server, s.projectId, skillTrigger(), padmin.token);
  assert.is((await call(`/api/users/${padmin.id}`, { method: 'PATCH', json: { active: false } })).status, 200);
  await post(t.url, t.secret, { ref: 'a' }, { delivery: 'inactive-1' });
  assert.is((await settled(t, 'inactive-1')).reason, 'creator_not_authorized');
});

test('runner_offline: the project’s runner is not connected → failed, nothing queued for later', async () => {
  const offline = await callAs(s.server, '/api/runners', { method: 'POST', json: { name: 'never-paired' } });
  const projectId = await makeProject(s.server, offline.body.runner.id);
  const t = await createTrigger(s.server, projectId);
  await post(t.url, t.secret, { ref: 'a' }, { delivery: 'off-1' });
  const row = await settled(t, 'off-1', projectId);
  assert.equal([row.status, row.reason], ['failed', 'runner_offline']);
});

test('command_timeout: the runner never answers orchestrator.start within its 30 s → failed, with the time in the detail', async () => {
  const t = await createTrigger(s.server, s.projectId, { name: 'silent', action: 'next_round' });
  assert.is((await post(t.url, t.secret, {}, { delivery: 'silent-1' })).status, 202);
  const cmd = await ws.next('command'); // received, never answered
  assert.is(cmd.name, 'orchestrator.start');
  const row = await waitFor('the command to time out', async () => {
    const d = (await deliveries(s.server, s.projectId, t.id)).find((x) => x.deliveryId === 'silent-1');
    return d && d.status !== 'firing' && d.status !== 'accepted' ? d : undefined;
  }, 60_000);
  assert.equal([row.status, row.reason, row.detail], ['failed', 'command_timeout', 'orchestrator.start got no answer within 30 s']);
});

test.run();
