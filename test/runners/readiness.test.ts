// "Ready" only when a run can start (issue 34 item 1), black-box: the real server and the real runner
// bundle on a machine with no `claude` or `codex` on PATH (the sandbox's PATH is its own bin, node's
// directory and the system's, where neither is installed). The runner reports its usable profiles: none,
// so the runner detail says `profiles: []`, the trigger's dry run says would_fail / no_profile, a real
// call is still 202 and becomes a run that did not start (with its reason, an activity item, and one
// notification for two calls). With a fake signed-in `claude` the profiles are listed and the dry run
// would fire; a sign-out is reported without a restart; an older runner that does not report them is
// unknown, not "none".
import { rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runnerDetail } from '../../protocol/api/runners.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';
import { createTrigger, makeProject, post, setup, skillTrigger } from '../triggers/_harness.ts';
import type { Made, Setup } from '../triggers/_harness.ts';

let s: Setup;
let sb: Sandbox;
let daemon: Daemon;
let runnerId = '';
let projectId = '';
let trigger: Made;
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(s.server, path, init);
const detail = async () => (await call(`/api/runners/${runnerId}`)).body;
const dryRun = async (t: Made = trigger, pid = projectId) => (await call(`/api/projects/${pid}/triggers/${t.id}/dry-run`, { method: 'POST', json: { payload: { ref: 'main' } } })).body;
const credentials = () => join(sb.home, '.claude', '.credentials.json');
const run = (extra: Record<string, string> = {}) => startDaemon(sb, { SVC_PROFILES_POLL_MS: '200', ...extra });

test.before(async () => {
  s = await setup();
  sb = sandbox();
  sb.writeConfig({ otlp: { enabled: false } });
  const made = (await call('/api/runners', { method: 'POST', json: { name: 'bare-box' } })).body;
  runnerId = made.runner.id;
  const paired = await runCli(sb, ['pair', '--server', s.server.url, '--code', made.code]);
  assert.is(paired.status, 0, paired.stderr);
  assert.equal(sb.readConfig().profiles ?? [], [], 'detection found no agent CLI on this PATH');
  // A project whose root exists on the machine: the run would get as far as choosing an agent.
  const root = join(sb.dir, 'repo');
  mkdirSync(root, { recursive: true });
  const project = await call('/api/projects', { method: 'POST', json: { name: 'bare', repo: 'acme/bare', runnerId, rootPath: root } });
  assert.is(project.status, 201, JSON.stringify(project.body));
  projectId = project.body.id;
  trigger = await createTrigger(s.server, projectId, skillTrigger({ name: 'on push' }));
  daemon = run();
});
test.after(async () => {
  await killDaemons();
  sb?.cleanup();
  await s?.server.cleanup();
});

test('no claude or codex on the machine: the runner is online and reports profiles: [] (agentRuntime none), in the documented shape', async () => {
  let d: any;
  await waitUntil(async () => (d = await detail()).status === 'online' && Array.isArray(d.profiles) && d.capabilities.includes('profiles'), 30_000, () => `the runner online with its profiles: ${JSON.stringify(d)}\n${daemon.output()}`);
  assert.equal(d.profiles, []);
  assert.is(d.agentRuntime, 'none');
  assert.ok(d.profilesReportedAt);
  runnerDetail.parse(d); // the OpenAPI schema describes the answer
  const listed = (await call('/api/runners')).body.runners.find((r: any) => r.id === runnerId);
  assert.equal([listed.profiles, listed.agentRuntime], [[], 'none']);
  const doc = (await call('/api/openapi.json')).body;
  const schema = doc.paths['/api/runners/{runnerId}'].get.responses['200'].content['application/json'].schema;
  assert.ok(schema.properties.profiles, 'profiles is in the OpenAPI answer of GET /api/runners/{runnerId}');
});

test('the dry run answers would_fail / no_profile (in words, with the remedy), not would_fire; the args are still rendered', async () => {
  const v = await dryRun();
  assert.is(v.verdict, 'would_fail', JSON.stringify(v));
  assert.is(v.reason, 'no_profile');
  assert.match(v.message, /agent runtime/);
  assert.match(v.remedy, /svc-runner profiles --detect --write/);
  assert.equal(v.args, ['--ref', 'main']);
});

test('two real calls: each 202; each a run that did not start with reason no_profile and an activity item; the admins get ONE notification', async () => {
  let rows: any[] = [];
  // One after the other: while a delivery is still being sent, the next is skipped previous_still_running.
  for (const [i, id] of ['bare-1', 'bare-2'].entries()) {
    const r = await post(trigger.url, trigger.secret, { ref: 'main' }, { delivery: id });
    assert.is(r.status, 202, r.text);
    assert.is(r.body.status, 'accepted');
    await waitUntil(async () => (rows = (await call(`/api/failed-starts?projectId=${projectId}`)).body.failedStarts).length === i + 1, 30_000, () => `${i + 1} failed start(s): ${JSON.stringify(rows)}`);
  }
  for (const f of rows) {
    assert.equal([f.source, f.sourceId, f.sourceName, f.action, f.skill, f.reason], ['trigger', trigger.id, 'on push', 'skill', 'review', 'no_profile']);
    assert.match(f.words, /no agent runtime/);
    assert.match(f.detail, /^no_profile: /, "the runner's own answer");
  }
  const activity = (await call(`/api/activity?projectId=${projectId}&kind=run.start_failed`)).body.items;
  assert.is(activity.length, 2);
  const notes = (await call('/api/notifications')).body.notifications.filter((n: any) => n.kind === 'run.start_failed');
  assert.is(notes.length, 1, 'once per cause, not per call');
  assert.equal([notes[0].projectId, notes[0].data.reason, notes[0].data.sourceName], [projectId, 'no_profile', 'on push']);
  // The trigger's row carries its last outcome; the delivery log keeps the spec's reason and the detail.
  const listed = (await call(`/api/projects/${projectId}/triggers`)).body.triggers.find((t: any) => t.id === trigger.id);
  assert.equal([listed.lastDelivery.status, listed.lastDelivery.reason], ['failed', 'command_refused']);
  assert.match(listed.lastDelivery.detail, /^no_profile: /);
});

test('a fake signed-in claude, detected and written, after a restart: profiles listed, dry run would fire; a sign-out is reported without a restart', async () => {
  sb.fakeBin('claude', 'echo "2.0.14 (Claude Code)"');
  mkdirSync(join(sb.home, '.claude'), { recursive: true });
  writeFileSync(credentials(), '{}');
  const wrote = await runCli(sb, ['profiles', '--detect', '--write']);
  assert.is(wrote.status, 0, wrote.stderr);
  await daemon.kill();
  daemon = run();
  let d: any;
  await waitUntil(async () => (d = await detail()).status === 'online' && d.profiles?.length === 1, 30_000, () => `the profile reported: ${JSON.stringify(d)}\n${daemon.output()}`);
  assert.equal(d.profiles, [{ name: 'claude', runtime: 'claude', authenticated: true }]);
  assert.is(d.agentRuntime, 'ready');
  const v = await dryRun();
  assert.equal([v.verdict, v.args, v.notes], ['would_fire', ['--ref', 'main'], []]);

  rmSync(credentials());
  await waitUntil(async () => (await detail()).profiles?.[0]?.authenticated === false, 15_000, 'the sign-out reported');
  const out = await dryRun();
  assert.equal([out.verdict, out.reason], ['would_fail', 'no_profile']);
  assert.match(out.message, /not signed in/);
  writeFileSync(credentials(), '{}');
  await waitUntil(async () => (await detail()).agentRuntime === 'ready', 15_000, 'signed in again');
});

test('the runner stopped: the dry run answers would_fail / runner_offline', async () => {
  await daemon.kill();
  await waitUntil(async () => (await detail()).status === 'offline', 15_000, 'the runner offline');
  const v = await dryRun();
  assert.equal([v.verdict, v.reason], ['would_fail', 'runner_offline']);
  assert.match(v.message, /offline/);
});

test('an older runner that does not report profiles: null (unknown, not none); the dry run does not fail on it but says so', async () => {
  const old = await pairRunner(s.server.api, s.server.url, 'old-box');
  const pid = await makeProject(s.server, old.runnerId);
  const t = await createTrigger(s.server, pid, skillTrigger({ name: 'old' }));
  const c = connect(s.server.url, old.token);
  try {
    await c.next('welcome');
    c.send({ type: 'hello', version: '0.1.0', target: 'linux-x64', hostname: 'old', capabilities: ['terminal'] });
    let d: any;
    await waitUntil(async () => (d = (await call(`/api/runners/${old.runnerId}`)).body).hostname === 'old', 15_000, 'the hello stored');
    assert.equal([d.profiles, d.agentRuntime], [null, 'unknown']);
    const v = await dryRun(t, pid);
    assert.is(v.verdict, 'would_fire', JSON.stringify(v));
    assert.match(v.notes.join(' '), /does not report its agent runtimes/);
  } finally {
    c.ws.close();
  }
});

test('once per cause until a run starts again: refused twice → one notice; a started run clears it; refused again → a second notice; a schedule that cannot start is a row too', async () => {
  const r = await pairRunner(s.server.api, s.server.url, 'proto-box');
  const pid = await makeProject(s.server, r.runnerId);
  const t = await createTrigger(s.server, pid, skillTrigger({ name: 'rearm' }));
  const c = connect(s.server.url, r.token);
  const notices = async () => (await call('/api/notifications')).body.notifications.filter((n: any) => n.kind === 'run.start_failed' && n.projectId === pid).length;
  const failedRows = async () => (await call(`/api/failed-starts?projectId=${pid}`)).body.failedStarts;
  /** One call, answered by the protocol client as the runner would. */
  const callAnswered = async (delivery: string, ok: boolean) => {
    assert.is((await post(t.url, t.secret, { ref: 'main' }, { delivery })).status, 202);
    const cmd = await c.next('command');
    c.send({ type: 'result', requestId: cmd.requestId, ok, ...(ok ? { data: { runId: `run-${delivery}`, state: 'queued' } } : { error: { code: 'no_profile', message: 'no runtime profiles are configured' } }) });
    // Settled before the next call (a delivery still being sent makes the next one previous_still_running).
    await waitUntil(async () => (await call(`/api/projects/${pid}/triggers/${t.id}/deliveries`)).body.deliveries.some((d: any) => d.deliveryId === delivery && ['fired', 'failed'].includes(d.status)), 15_000, `${delivery} settled`);
    const now = new Date().toISOString();
    if (ok) {
      // The run ends at once, so the next call is not skipped as previous_still_running.
      const payload = { runId: `run-${delivery}`, project: pid, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state: 'succeeded', at: now };
      c.send({ type: 'events', events: [{ id: `run.${delivery}`, source: `project:${pid}`, kind: 'skill_run.state', ts: now, payload }] });
      await c.next('ack');
    }
  };
  try {
    await c.next('welcome');
    await callAnswered('rearm-1', false);
    await callAnswered('rearm-2', false);
    await waitUntil(async () => (await failedRows()).length === 2, 15_000, 'two failed starts');
    assert.is(await notices(), 1);
    await callAnswered('rearm-3', true);
    await waitUntil(async () => (await call(`/api/runs/run-rearm-3`)).status === 200, 15_000, 'the run recorded');
    await callAnswered('rearm-4', false);
    await waitUntil(async () => (await failedRows()).length === 3, 15_000, 'the third failed start');
    assert.is(await notices(), 2, 'a failure after a run started again is news again');
  } finally {
    c.ws.close();
    await c.closed;
  }
  // The client sees its close before the server has recorded it: wait until the server reads it offline.
  await waitUntil(async () => (await call(`/api/runners/${r.runnerId}`)).body.status === 'offline', 15_000, 'the server reads the runner offline');
  // The runner is gone now: Run now of a schedule cannot start either, and is recorded the same way.
  const sched = await call(`/api/projects/${pid}/schedules`, { method: 'POST', json: { name: 'nightly', cron: '0 3 * * *', skill: 'review' } });
  assert.is(sched.status, 201, JSON.stringify(sched.body));
  const ran = await call(`/api/projects/${pid}/schedules/${sched.body.id}/run`, { method: 'POST' });
  assert.is(ran.status, 202, JSON.stringify(ran.body));
  const rows = await failedRows();
  const fromSchedule = rows.find((f: any) => f.source === 'schedule');
  assert.ok(fromSchedule, JSON.stringify(rows));
  assert.equal([fromSchedule.sourceName, fromSchedule.reason], ['nightly', 'runner_offline']);
  assert.match(fromSchedule.words, /offline/);
});

test.run();
