// Project schedules API and runs (docs/schedules.md) against the real server: create/list/get/edit/delete
// with validation naming the field, roles (admins change and run, viewers and operators read, others
// 404), run now sends skill.run to the project's runner on behalf of the creator, a due schedule fires
// at its time in its zone, a failed run emits schedule.failed and three failures in a row disable the
// schedule with schedule.disabled (and a notification), GET /api/schedules lists them by role.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { plan } from '../../functions/schedules/schedules.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { receiver } from '../webhooks/_harness.ts';
import type { Receiver } from '../webhooks/_harness.ts';
import { createSchedule, cronAt, daily, makeProject, reportRun, setup, waitFor } from './_harness.ts';
import type { Setup } from './_harness.ts';

let s: Setup;
let hooks: Receiver;
const users: Record<'viewer' | 'operator' | 'stranger', TestUser> = {} as never;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(s.server, path, init);
const base = () => `/api/projects/${s.projectId}/schedules`;

test.before(async () => {
  try {
    await prepare();
  } catch (err) {
    console.error('set-up failed:', err); // uvu reports a failed before hook only as failed tests
    throw err;
  }
});

async function prepare() {
  s = await setup();
  hooks = await receiver();
  assert.is((await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } })).status, 200);
  const hook = await call('/api/webhooks', { method: 'POST', json: { url: `${hooks.url}/hook`, events: ['schedule.failed', 'schedule.disabled'] } });
  assert.is(hook.status, 201, JSON.stringify(hook.body));
  for (const role of ['viewer', 'operator', 'stranger'] as const) {
    users[role] = await makeUser(s.server, `sched-${role}`);
    if (role !== 'stranger') assert.is((await call(`/api/projects/${s.projectId}/members/${users[role].id}`, { method: 'PUT', json: { role } })).status, 200);
  }
}
test.after(async () => {
  s?.ws.ws.close();
  await hooks?.close();
  await s?.server.cleanup();
});

/** Answer the next command frame as the runner would. */
async function answer(ok: boolean, data: unknown, error?: { code: string; message: string }) {
  const cmd = await s.ws.next('command');
  s.ws.send({ type: 'result', requestId: cmd.requestId, ok, ...(ok ? { data } : { error }) });
  return cmd;
}

const events = (type: string, scheduleName: string) =>
  hooks.requests.map((r) => JSON.parse(r.body)).filter((e) => e.type === type && e.data?.schedule === scheduleName);

test('plan(): a pending time less than one interval late runs once; later it is missed; the next time is after now', () => {
  const t = new Date('2026-01-05T03:00:00Z'); // a daily 03:00 UTC
  const hour = 3600_000;
  assert.equal(plan('0 3 * * *', 'UTC', t, t.getTime() - 1), { run: null, missed: null, next: t }, 'not due yet');
  const late = plan('0 3 * * *', 'UTC', t, t.getTime() + 5 * hour);
  assert.equal([late.run?.toISOString(), late.missed, late.next?.toISOString()], [t.toISOString(), null, '2026-01-06T03:00:00.000Z']);
  const tooLate = plan('0 3 * * *', 'UTC', t, t.getTime() + 25 * hour);
  assert.equal([tooLate.run, tooLate.missed?.toISOString(), tooLate.next?.toISOString()], [null, t.toISOString(), '2026-01-07T03:00:00.000Z']);
  // The interval is the schedule's own: hourly → 59 minutes late runs, 61 minutes late is missed.
  assert.ok(plan('0 * * * *', 'UTC', t, t.getTime() + 59 * 60_000).run);
  assert.ok(plan('0 * * * *', 'UTC', t, t.getTime() + 61 * 60_000).missed);
  // In the schedule's zone: 03:00 Europe/Berlin is 02:00 UTC in winter.
  assert.is(plan('0 3 * * *', 'Europe/Berlin', new Date('2026-01-05T02:00:00Z'), Date.parse('2026-01-05T02:00:01Z')).next?.toISOString(), '2026-01-06T02:00:00.000Z');
});

test('create → 201 with its id and next run in its zone; list, get, edit, disable, delete; each change audited', async () => {
  const made = await createSchedule(s.server, s.projectId, daily({ profile: 'cc', model: 'claude-opus-4-1', output: 'pull_request' }));
  assert.ok(made.id);
  assert.equal(
    [made.name, made.cron, made.timezone, made.skill, made.args, made.profile, made.model, made.output, made.enabled, made.lastRun, made.consecutiveFailures],
    ['nightly review', '0 3 * * *', 'Europe/Berlin', 'review', ['--since', '1d'], 'cc', 'claude-opus-4-1', 'pull_request', true, null, 0],
  );
  const next = new Date(made.nextRunAt);
  assert.ok(next.getTime() > Date.now() && next.getTime() <= Date.now() + 25 * 3600_000);
  assert.is(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' }).format(next), '03:00');
  const defaults = await createSchedule(s.server, s.projectId, { name: 'min', cron: '*/5 * * * *', skill: 'lint' });
  assert.equal([defaults.timezone, defaults.args, defaults.profile, defaults.model, defaults.output, defaults.enabled], ['UTC', [], null, null, 'report', true]);

  const list = await call(base());
  assert.is(list.status, 200);
  assert.equal(list.body.schedules.map((x: { id: string }) => x.id).slice(-2), [made.id, defaults.id]);
  assert.equal((await call(`${base()}/${made.id}`)).body, made);

  const edited = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { name: 'weekday review', cron: '30 6 * * 1-5', timezone: 'UTC', args: [] } });
  assert.is(edited.status, 200);
  assert.equal([edited.body.name, edited.body.cron, edited.body.timezone, edited.body.args, edited.body.skill], ['weekday review', '30 6 * * 1-5', 'UTC', [], 'review']);
  assert.match(edited.body.nextRunAt, /T06:30:00\.000Z$/);
  const off = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { enabled: false } });
  assert.equal([off.body.enabled, off.body.nextRunAt], [false, null]);
  const on = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { enabled: true } });
  assert.equal([on.body.enabled, on.body.nextRunAt], [true, edited.body.nextRunAt]);

  assert.is((await call(`${base()}/${defaults.id}`, { method: 'DELETE' })).status, 204);
  assert.is((await call(`${base()}/${defaults.id}`)).status, 404);
  const audit = await call(`/api/audit?targetType=schedule&targetId=${made.id}`);
  const actions = (audit.body.records as { action: string }[]).map((r) => r.action).sort();
  assert.equal(actions, ['schedule.create', 'schedule.update', 'schedule.update', 'schedule.update']);
  assert.is((await call(`/api/audit?targetType=schedule&targetId=${defaults.id}&action=schedule.delete`)).body.records.length, 1);
});

test('validation: a bad cron, zone, skill, profile, model, output or args → 400 naming the field; nothing stored', async () => {
  const before = (await call(base())).body.schedules.length;
  const cases: [Record<string, unknown>, string][] = [
    [daily({ cron: '61 3 * * *' }), 'cron'],
    [daily({ cron: 'every night' }), 'cron'],
    [daily({ timezone: 'Mars/Olympus_Mons' }), 'timezone'],
    [daily({ timezone: '../etc/passwd' }), 'timezone'],
    [daily({ skill: 'review; rm -rf /' }), 'skill'],
    [daily({ skill: '' }), 'skill'],
    [daily({ profile: 'a b' }), 'profile'],
    [daily({ model: '-rf' }), 'model'],
    [daily({ output: 'email' }), 'output'],
    [daily({ args: ['a\0b'] }), 'args'],
    [daily({ args: 'not-a-list' }), 'args'],
    [{ cron: '0 3 * * *', skill: 'x' }, 'name'],
  ];
  for (const [body, field] of cases) {
    const res = await call(base(), { method: 'POST', json: body });
    assert.is(res.status, 400, `${JSON.stringify(body)} → ${res.status}`);
    assert.ok(Object.keys(res.body.error.fields ?? {}).some((k) => k === field || k.startsWith(`${field}.`)), `${field}: ${JSON.stringify(res.body)}`);
  }
  const extra = await call(base(), { method: 'POST', json: daily({ action: 'next_round' }) });
  assert.is(extra.status, 400, 'unknown keys are refused');
  const made = await createSchedule(s.server, s.projectId);
  const patch = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { cron: '* * *' } });
  assert.equal([patch.status, Object.keys(patch.body.error.fields)], [400, ['cron']]);
  assert.is((await call(`${base()}/${made.id}`)).body.cron, made.cron, 'unchanged');
  assert.is((await call(base())).body.schedules.length, before + 1);
});

test('roles: viewers and operators read; only admins create, edit, delete, run; non-members get 404', async () => {
  const made = await createSchedule(s.server, s.projectId);
  for (const role of ['viewer', 'operator'] as const) {
    const token = users[role].token;
    assert.is((await call(base(), { token })).status, 200, `${role} lists`);
    assert.is((await call(`${base()}/${made.id}`, { token })).status, 200, `${role} reads`);
    assert.is((await call(base(), { method: 'POST', json: daily(), token })).status, 403);
    assert.is((await call(`${base()}/${made.id}`, { method: 'PATCH', json: { name: 'x' }, token })).status, 403);
    assert.is((await call(`${base()}/${made.id}`, { method: 'DELETE', token })).status, 403);
    assert.is((await call(`${base()}/${made.id}/run`, { method: 'POST', token })).status, 403);
  }
  const token = users.stranger.token;
  for (const [path, method] of [[base(), 'GET'], [`${base()}/${made.id}`, 'GET'], [`${base()}/${made.id}`, 'DELETE'], [`${base()}/${made.id}/run`, 'POST']]) {
    assert.is((await call(path, { method, token })).status, 404, `${method} ${path}`);
  }
  // A schedule is found only through its own project's path.
  assert.is((await call(`/api/projects/${s.offlineProjectId}/schedules/${made.id}`)).status, 404);
  // GET /api/schedules: members see their projects' schedules, never system jobs; instance admins see both.
  const viewer = await call('/api/schedules', { token: users.viewer.token });
  assert.is(viewer.status, 200);
  assert.equal(viewer.body.jobs, []);
  assert.ok(viewer.body.schedules.some((x: { id: string }) => x.id === made.id));
  assert.ok(viewer.body.schedules.every((x: { projectId: string; kind: string }) => x.projectId === s.projectId && x.kind === 'project'));
  assert.equal((await call('/api/schedules', { token })).body, { jobs: [], schedules: [] });
  const admin = await call('/api/schedules');
  assert.ok(admin.body.jobs.some((j: { name: string }) => j.name === 'audit.verify'));
  const mine = admin.body.schedules.find((x: { id: string }) => x.id === made.id);
  assert.equal([mine.projectName.startsWith('p-'), mine.nextRunAt, mine.lastRun], [true, made.nextRunAt, null]);
});

test('run now: skill.run reaches the runner on behalf of the creator; the run id is recorded; its failure emits schedule.failed', async () => {
  const made = await createSchedule(s.server, s.projectId, daily({ name: 'run-now', profile: 'cc', model: 'claude-opus-4-1', output: 'pull_request' }));
  const [res, cmd] = await Promise.all([call(`${base()}/${made.id}/run`, { method: 'POST' }), answer(true, { runId: 'run-sched-1', state: 'queued' })]);
  assert.is(cmd.name, 'skill.run');
  assert.equal(cmd.args, { projectId: s.projectId, skill: 'review', args: ['--since', '1d'], profileId: 'cc', model: 'claude-opus-4-1', output: 'pull_request' });
  assert.is(res.status, 202);
  assert.equal([res.body.result, res.body.runId, res.body.reason], ['started', 'run-sched-1', null]);
  const after = (await call(`${base()}/${made.id}`)).body;
  assert.equal([after.lastRun.result, after.lastRun.runId, after.lastRun.scheduledFor], ['started', 'run-sched-1', res.body.scheduledFor]);
  assert.is(after.nextRunAt, made.nextRunAt, 'run now does not move the next run');
  assert.is((await call(`/api/audit?targetType=schedule&targetId=${made.id}&action=schedule.run`)).body.records.length, 1);

  // While that run is live, the next is skipped and nothing is sent.
  await reportRun(s.ws, s.projectId, 'run-sched-1', 'running');
  const skipped = await call(`${base()}/${made.id}/run`, { method: 'POST' });
  assert.equal([skipped.body.result, skipped.body.reason], ['skipped', 'previous_still_running']);
  // The run ends failed: the schedule records it and emits schedule.failed.
  await reportRun(s.ws, s.projectId, 'run-sched-1', 'failed', 'tests failed');
  const failed = await waitFor('the failed outcome', async () => {
    const r = (await call(`${base()}/${made.id}`)).body;
    return r.lastRun.result === 'failed' && r;
  });
  assert.equal([failed.lastRun.reason, failed.consecutiveFailures, failed.enabled], ['failed', 1, true]);
  const [event] = await waitFor('schedule.failed delivered', async () => events('schedule.failed', 'run-now').length > 0 && events('schedule.failed', 'run-now'));
  assert.equal([event.project.id, event.data.scheduledFor], [s.projectId, res.body.scheduledFor]);
  assert.match(event.data.error, /run-sched-1 ended failed: tests failed/);
  // A succeeded run resets the count.
  const [again] = await Promise.all([call(`${base()}/${made.id}/run`, { method: 'POST' }), answer(true, { runId: 'run-sched-2', state: 'queued' })]);
  assert.is(again.body.result, 'started');
  await reportRun(s.ws, s.projectId, 'run-sched-2', 'succeeded');
  await waitFor('the success', async () => {
    const r = (await call(`${base()}/${made.id}`)).body;
    return r.lastRun.result === 'succeeded' && r.consecutiveFailures === 0;
  });
});

test('runner offline → failed runner_offline and schedule.failed; the third failure in a row disables it: schedule.disabled, notification, audit', async () => {
  const path = `/api/projects/${s.offlineProjectId}/schedules`;
  const made = await createSchedule(s.server, s.offlineProjectId, daily({ name: 'offline' }));
  for (let i = 1; i <= 3; i++) {
    const res = await call(`${path}/${made.id}/run`, { method: 'POST' });
    assert.is(res.status, 202, JSON.stringify(res.body) + s.server.output().slice(-3000));
    assert.equal([res.body.result, res.body.reason], ['failed', 'runner_offline']);
    const row = (await call(`${path}/${made.id}`)).body;
    assert.is(row.consecutiveFailures, i);
    assert.is(row.enabled, i < 3, `enabled after ${i} failures`);
  }
  const off = (await call(`${path}/${made.id}`)).body;
  assert.equal([off.enabled, off.disabledReason, off.nextRunAt], [false, 'too_many_failures', null]);
  const failed = await waitFor('three schedule.failed', async () => events('schedule.failed', 'offline').length === 3 && events('schedule.failed', 'offline'));
  assert.ok(failed.every((e: { data: { error: string } }) => /^runner_offline/.test(e.data.error)));
  const [disabled] = await waitFor('schedule.disabled', async () => events('schedule.disabled', 'offline').length === 1 && events('schedule.disabled', 'offline'));
  assert.match(disabled.data.reason, /3 runs failed in a row/);
  const notes = (await call('/api/notifications')).body.notifications.filter((n: { kind: string }) => n.kind === 'schedule.disabled');
  assert.equal(notes.map((n: { projectId: string; data: { scheduleId: string } }) => [n.projectId, n.data.scheduleId]), [[s.offlineProjectId, made.id]]);
  assert.is((await call(`/api/audit?targetType=schedule&targetId=${made.id}&action=schedule.disable`)).body.records.length, 1);
  // Enabling it again by hand clears the reason and the count.
  const on = (await call(`${path}/${made.id}`, { method: 'PATCH', json: { enabled: true } })).body;
  assert.equal([on.enabled, on.disabledReason, on.consecutiveFailures], [true, null, 0]);
});

test('budget: a project whose budget action is stop and which is spent skips with budget_exceeded; nothing is sent, no failure counted', async () => {
  const projectId = await makeProject(s.server, s.runner.runnerId);
  assert.is((await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: 0, action: 'stop' } })).status, 200);
  const made = await createSchedule(s.server, projectId, daily({ name: 'over budget' }));
  const commands = s.ws.frames.filter((f) => f.type === 'command').length;
  const res = await call(`/api/projects/${projectId}/schedules/${made.id}/run`, { method: 'POST' });
  assert.equal([res.status, res.body.result, res.body.reason], [202, 'skipped', 'budget_exceeded']);
  const row = (await call(`/api/projects/${projectId}/schedules/${made.id}`)).body;
  assert.equal([row.lastRun.result, row.lastRun.reason, row.consecutiveFailures, row.enabled], ['skipped', 'budget_exceeded', 0, true]);
  assert.is(s.ws.frames.filter((f) => f.type === 'command').length, commands, 'no command sent');
  // Set to warn, it runs.
  assert.is((await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: 0, action: 'warn' } })).status, 200);
  const [ran] = await Promise.all([call(`/api/projects/${projectId}/schedules/${made.id}/run`, { method: 'POST' }), answer(true, { runId: 'run-budget-1', state: 'queued' })]);
  assert.is(ran.body.result, 'started');
  await reportRun(s.ws, projectId, 'run-budget-1', 'succeeded');
});

test('a due schedule fires at its time in its zone, once, and its next run moves to the next day', async () => {
  const at = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000);
  // The same instant written in Asia/Kolkata (UTC+5:30): the zone decides what the fields mean.
  const local = new Date(at.getTime() + 5.5 * 3600_000);
  const made = await createSchedule(s.server, s.projectId, daily({ name: 'due', cron: cronAt(local), timezone: 'Asia/Kolkata' }));
  assert.is(made.nextRunAt, at.toISOString());
  const cmd = await answer(true, { runId: 'run-due-1', state: 'queued' });
  assert.ok(Date.now() >= at.getTime() - 50, 'not before its time');
  assert.equal([cmd.name, cmd.args.skill], ['skill.run', 'review']);
  const row = await waitFor('the run recorded', async () => {
    const r = (await call(`${base()}/${made.id}`)).body;
    return r.lastRun?.runId === 'run-due-1' && r;
  });
  assert.equal([row.lastRun.scheduledFor, row.lastRun.result, row.nextRunAt], [at.toISOString(), 'started', new Date(at.getTime() + 86400_000).toISOString()]);
  await reportRun(s.ws, s.projectId, 'run-due-1', 'succeeded');
  const listed = (await call('/api/schedules')).body.schedules.find((x: { id: string }) => x.id === made.id);
  assert.equal(listed.lastRun.scheduledFor, at.toISOString());
  assert.is(s.ws.frames.filter((f) => f.type === 'command' && (f.args as { projectId?: string }).projectId === s.projectId && f.requestId === cmd.requestId).length, 1);
});

test.run();
