// Orchestrator, slots and pull request decisions (spec: Server commands to a runner; docs/orchestrator.md)
// with real tmux, real git and fake `claude`/`codex` executables.
// needs: tmux
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentRuns, fleet, type, typed, waitPane } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { runCli, waitUntil } from './_harness.ts';

let f: Fleet;
test.before.each(async () => {
  f = await fleet('orch');
});
test.after.each(async () => {
  await f.cleanup();
});

const HOSTILE = ['; rm -rf "$HOME"', '$(touch PWNED1)', '`touch PWNED2`', ';', 'x;', 'a\\;', '#(touch PWNED3)', '#{session_name}', '--', '-e', "it's \"quoted\""];

test('orchestrator.start runs the profile in svc-<project>-orch in the project root, argv passed literally, telemetry env set; a second start is refused', async () => {
  const conn = await f.start({ profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: f.agentDir, PROFILE_VAR: 'v;' }, args: ['--model', 'opus', ...HOSTILE] }], otlp: { http: 4999 } });
  const r = await conn.command('orchestrator.start', { projectId: 'p1' });
  assert.is(r.ok, true, JSON.stringify(r));
  assert.equal(r.data, { action: 'started', session: 'svc-p1-orch', profileId: 'cc', runtime: 'claude' });
  assert.equal(f.sessions(), ['svc-p1-orch']);
  await waitUntil(() => agentRuns(f.agentDir).length === 1, 5000, 'the fake agent to start');
  const [run] = agentRuns(f.agentDir);
  assert.equal(run.argv, ['--model', 'opus', ...HOSTILE, 'Use the svc-orchestrator skill: run the next orchestrator round for this project.']);
  assert.is(run.cwd, f.root);
  assert.is(run.env.CLAUDE_CODE_ENABLE_TELEMETRY, '1');
  assert.is(run.env.OTEL_LOGS_EXPORTER, 'otlp');
  assert.is(run.env.OTEL_METRICS_EXPORTER, 'otlp');
  assert.is(run.env.OTEL_EXPORTER_OTLP_PROTOCOL, 'http/protobuf');
  assert.is(run.env.OTEL_EXPORTER_OTLP_ENDPOINT, 'http://127.0.0.1:4999');
  assert.is(run.env.OTEL_RESOURCE_ATTRIBUTES, 'svc.project=p1');
  assert.is(run.env.SVC_PROJECT_ID, 'p1');
  assert.is(run.env.SVC_ROLE, 'orchestrator');
  assert.is(run.env.PROFILE_VAR, 'v;');
  assert.ok(run.env.PATH.split(':')[0].endsWith('/svc/bin'), `svc-runner is on the session PATH: ${run.env.PATH}`);
  for (const name of ['PWNED1', 'PWNED2', 'PWNED3']) assert.not.ok(existsSync(join(f.root, name)) || existsSync(join(f.sb.dir, name)), `${name} must not exist`);
  assert.match(readFileSync(join(f.root, '.git', 'info', 'exclude'), 'utf8'), /^\/\.svc\/$/m);

  await waitUntil(() => f.events('orchestrator.started').length === 1, 5000, 'orchestrator.started');
  const started = f.events('orchestrator.started')[0];
  assert.is(started.source, 'project:p1');
  assert.equal(started.payload, { project: 'p1', type: 'orchestrator.started', data: { profile: 'cc', runtime: 'claude', session: 'svc-p1-orch', origin: 'command' }, origin: 'runner' });

  const again = await conn.command('orchestrator.start', { projectId: 'p1' });
  assert.equal([again.ok, again.error?.code], [false, 'already_running']);
  assert.is(agentRuns(f.agentDir).length, 1);
});

test('orchestrator.status reports presence and pane state; next round nudges an idle orchestrator and leaves a waiting one alone', async () => {
  const conn = await f.start();
  const absent = await conn.command('orchestrator.status', { projectId: 'p1' });
  assert.equal(absent.data, { projectId: 'p1', present: false, session: 'svc-p1-orch', state: 'absent', slots: [] });
  // next round when nothing runs: it starts
  const first = await conn.command('orchestrator.start', { projectId: 'p1', next: true });
  assert.is(first.data.action, 'started');
  await waitPane(f, 'svc-p1-orch', /\? for shortcuts/);
  const idle = await conn.command('orchestrator.status', { projectId: 'p1' });

  assert.is(idle.data.present, true);
  assert.is(idle.data.state, 'idle');
  assert.is(idle.data.runtime, 'claude');
  assert.is(idle.data.profileId, 'cc');

  const nudge = await conn.command('orchestrator.start', { projectId: 'p1', next: true });
  assert.equal(nudge.data, { action: 'nudged', session: 'svc-p1-orch', state: 'idle' });
  await waitUntil(() => typed(f.agentDir).includes('Use the svc-orchestrator skill: run the next orchestrator round for this project.'), 5000, 'the nudge typed into the pane');

  type(f, 'svc-p1-orch', 'ask');
  await waitPane(f, 'svc-p1-orch', /Do you want to proceed\?/);
  const waiting = await conn.command('orchestrator.status', { projectId: 'p1' });
  assert.is(waiting.data.state, 'waiting');
  assert.is(waiting.data.promptKind, 'permission');
  const left = await conn.command('orchestrator.start', { projectId: 'p1', next: true });
  assert.equal(left.data, { action: 'none', session: 'svc-p1-orch', state: 'waiting' });
  assert.is(typed(f.agentDir).length, 2, 'nothing typed into a waiting prompt');
});

test('orchestrator.stop kills only the orchestrator session; stopping again answers stopped: false', async () => {
  const conn = await f.start();
  assert.is((await conn.command('orchestrator.start', { projectId: 'p1' })).ok, true);
  f.tmux('new-session', '-d', '-s', 'svc-p1-slot-a', 'sleep', '60');
  f.tmux('new-session', '-d', '-s', 'svc-p1-orchestra', 'sleep', '60');
  f.tmux('new-session', '-d', '-s', 'unrelated', 'sleep', '60');
  const r = await conn.command('orchestrator.stop', { projectId: 'p1' });
  assert.equal(r.data, { stopped: true, session: 'svc-p1-orch' });
  assert.equal(f.sessions(), ['svc-p1-orchestra', 'svc-p1-slot-a', 'unrelated']);
  await waitUntil(() => f.events('orchestrator.stopped').length === 1, 5000, 'orchestrator.stopped');
  assert.equal(f.events('orchestrator.stopped')[0].payload.data, { reason: 'stopped', session: 'svc-p1-orch', origin: 'command' });
  const again = await conn.command('orchestrator.stop', { projectId: 'p1' });
  assert.equal(again.data, { stopped: false, session: 'svc-p1-orch' });
});

const stoppedData = () => f.events('orchestrator.stopped').map((e) => e.payload.data);
test('the orchestrator exits with a code → orchestrator.stopped carries exitCode (3, 0), the session is ended, and it can be started again', async () => {
  const conn = await f.start({}, { SVC_PANES_POLL_MS: '300' });
  for (const [round, code] of [[1, 3], [2, 0]]) {
    const r = await conn.command('orchestrator.start', { projectId: 'p1' });
    assert.equal([r.ok, r.data?.action], [true, 'started'], JSON.stringify(r));
    await waitPane(f, 'svc-p1-orch', /\? for shortcuts/);
    type(f, 'svc-p1-orch', `exit ${code}`);
    await waitUntil(() => f.events('orchestrator.stopped').length === round, 25_000, () => `orchestrator.stopped #${round}; sessions ${f.sessions()}`);
    assert.equal(stoppedData()[round - 1], { reason: 'exited', session: 'svc-p1-orch', exitCode: code });
    await waitUntil(() => f.sessions().length === 0, 5000, 'the dead session to be ended');
    const status = await conn.command('orchestrator.status', { projectId: 'p1' });
    assert.equal([status.data.present, status.data.state], [false, 'absent']);
  }
  assert.is(f.events('orchestrator.started').length, 2);
  assert.is(f.events('orchestrator.stopped').length, 2, 'each exit reported once');
});

test('a start finds the orchestrator exited before the watcher looked: it reports the exit code once and starts afresh; next round too', async () => {
  const conn = await f.start(); // fleet.pollSeconds 15: the watcher is not quick enough to see it first
  assert.is((await conn.command('orchestrator.start', { projectId: 'p1' })).ok, true);
  await waitPane(f, 'svc-p1-orch', /\? for shortcuts/);
  type(f, 'svc-p1-orch', 'exit 7');
  await waitUntil(() => /1/.test(f.tmux('display-message', '-p', '-t', '=svc-p1-orch:', '#{pane_dead}').stdout), 5000, 'the pane to be dead');
  const again = await conn.command('orchestrator.start', { projectId: 'p1', next: true });
  assert.equal([again.ok, again.data?.action], [true, 'started'], JSON.stringify(again));
  await waitUntil(() => f.events('orchestrator.stopped').length === 1 && f.events('orchestrator.started').length === 2, 5000, 'stopped, then started');
  assert.equal(stoppedData(), [{ reason: 'exited', session: 'svc-p1-orch', exitCode: 7 }]);
  await waitUntil(() => agentRuns(f.agentDir).length === 2, 5000, 'a new agent');
  assert.equal(f.sessions(), ['svc-p1-orch']);
});

test('an agent that exits right after it starts → agent_exited naming its exit code, no session left behind', async () => {
  const conn = await f.start({ profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: f.agentDir, FAKE_EXIT_AT_START: '5' }, args: [] }] });
  const r = await conn.command('orchestrator.start', { projectId: 'p1' });
  assert.equal([r.ok, r.error?.code], [false, 'agent_exited'], JSON.stringify(r));
  assert.match(r.error.message, /exited right after it started in svc-p1-orch with code 5$/);
  assert.equal(f.sessions(), []);
  assert.is(f.events('orchestrator.started').length, 0);
});

test('an orchestrator killed by a signal → orchestrator.stopped carries the signal, not an exit code', async () => {
  const conn = await f.start({}, { SVC_PANES_POLL_MS: '300' });
  assert.is((await conn.command('orchestrator.start', { projectId: 'p1' })).ok, true);
  await waitPane(f, 'svc-p1-orch', /\? for shortcuts/);
  const [run] = agentRuns(f.agentDir);
  process.kill(Number(run.pid), 'SIGTERM');
  await waitUntil(() => f.events('orchestrator.stopped').length === 1, 25_000, () => `orchestrator.stopped; sessions ${f.sessions()}`);
  assert.equal(stoppedData(), [{ reason: 'exited', session: 'svc-p1-orch', signal: 15 }]);
  await waitUntil(() => f.sessions().length === 0, 5000, 'the dead session to be ended');
});

test('bad input: unknown project, unknown profile, missing agent binary, missing tmux — each a clear error and no session', async () => {
  const conn = await f.start({ profiles: [{ id: 'gone', runtime: 'claude', binary: '/nonexistent/claude', env: {}, args: [] }] });
  const unknown = await conn.command('orchestrator.start', { projectId: 'nope' });
  assert.equal([unknown.ok, unknown.error.code], [false, 'unknown_project']);
  const profile = await conn.command('orchestrator.start', { projectId: 'p1', profileId: 'other' });
  assert.equal([profile.ok, profile.error.code], [false, 'unknown_profile']);
  const missing = await conn.command('orchestrator.start', { projectId: 'p1' });
  assert.equal([missing.ok, missing.error.code], [false, 'agent_not_found']);
  assert.match(missing.error.message, /\/nonexistent\/claude/);
  const shell = await conn.command('orchestrator.start', { projectId: 'p1', profileId: 'x; rm -rf /' });
  assert.equal([shell.ok, shell.error.code], [false, 'invalid_args']);
  assert.equal(f.sessions(), []);
  await f.daemon!.kill();

  // A PATH with git, node and sh but no tmux.
  const nobin = join(f.sb.dir, 'nobin');
  mkdirSync(nobin);
  for (const b of ['git', 'sh', 'env']) symlinkSync(`/usr/bin/${b}`, join(nobin, b));
  const conn2 = await f.start({}, { PATH: `${f.sb.bin}:${nobin}` });
  const noTmux = await conn2.command('orchestrator.start', { projectId: 'p1' });
  assert.equal([noTmux.ok, noTmux.error.code], [false, 'tmux_not_found']);
  assert.match(noTmux.error.message, /tmux/);
});

test('slot-start makes the worktree and the worker session; slot.message writes .orchestrator-msg.md and nudges; slot.stop keeps the worktree', async () => {
  const conn = await f.start();
  const cli = await runCli(f.sb, ['slot-start', 'a', '--issue', '7', '--title', 'Fix it', '--project-root', f.root], f.env);
  assert.is(cli.status, 0, cli.stderr);
  const wt = join(dirname(f.root), '.wt-repo-a');
  assert.equal(JSON.parse(cli.stdout), { session: 'svc-p1-slot-a', slot: 'a', issue: 7, worktree: wt, branch: 'svc/a/issue-7', profile: 'cc' });
  assert.is(f.git(wt, 'symbolic-ref', '--short', 'HEAD').trim(), 'svc/a/issue-7');
  await waitUntil(() => agentRuns(f.agentDir).length === 1, 5000, 'the worker to start');
  const [run] = agentRuns(f.agentDir);
  assert.is(run.cwd, wt);
  assert.equal([run.env.SVC_SLOT, run.env.SVC_ISSUE, run.env.SVC_ROLE, run.env.OTEL_RESOURCE_ATTRIBUTES], ['a', '7', 'worker', 'svc.project=p1,svc.slot=a,svc.issue=7']);
  await waitUntil(() => f.events('slot.dispatched').length === 1, 5000, 'slot.dispatched from events.jsonl');
  assert.equal(f.events('slot.dispatched')[0].payload, { project: 'p1', type: 'slot.dispatched', slot: 'a', issue: 7, data: { branch: 'svc/a/issue-7', profile: 'cc', title: 'Fix it' }, origin: 'events.jsonl' });
  const busy = await runCli(f.sb, ['slot-start', 'a', '--issue', '7', '--project-root', f.root], f.env);
  assert.is(busy.status, 1);
  assert.match(busy.stderr, /already running/);

  await waitPane(f, 'svc-p1-slot-a', /\? for shortcuts/);
  const msg = await conn.command('slot.message', { projectId: 'p1', slot: 'a', message: 'Please rebase on main; $(rm -rf ~) stays text.' });
  assert.equal(msg.data, { written: true, nudged: true, state: 'idle' });
  const file = join(wt, '.orchestrator-msg.md');
  assert.match(readFileSync(file, 'utf8'), /^<!-- svc: message for slot a, .* -->\nPlease rebase on main; \$\(rm -rf ~\) stays text\.\n$/);
  await waitUntil(() => typed(f.agentDir).some((l) => l.includes('.orchestrator-msg.md')), 5000, 'the nudge');
  const second = await conn.command('slot.message', { projectId: 'p1', slot: 'a', message: 'And run the tests.' });
  assert.is(second.ok, true);
  assert.match(readFileSync(file, 'utf8'), /Please rebase[\s\S]*\n\n<!-- svc: message[^\n]*-->\nAnd run the tests\.\n$/);
  assert.equal(f.git(f.root, 'status', '--porcelain'), '', '.svc/ and the message file are ignored by git');

  const stop = await conn.command('slot.stop', { projectId: 'p1', slot: 'a' });
  assert.equal(stop.data, { stopped: true, session: 'svc-p1-slot-a', slot: 'a' });
  assert.equal(f.sessions(), []);
  assert.ok(existsSync(join(wt, '.git')), 'the worktree stays');
  const notRunning = await conn.command('slot.message', { projectId: 'p1', slot: 'a', message: 'later' });
  assert.equal(notRunning.data, { written: true, nudged: false, reason: 'not_running' });
});

test('slot.message refuses a slot without a worktree and a worktree that links out of the project', async () => {
  const conn = await f.start();
  const none = await conn.command('slot.message', { projectId: 'p1', slot: 'zz', message: 'hi' });
  assert.equal([none.ok, none.error.code], [false, 'unknown_slot']);
  const outside = join(f.sb.dir, 'outside');
  mkdirSync(outside);
  symlinkSync(outside, join(dirname(f.root), '.wt-repo-evil'));
  const evil = await conn.command('slot.message', { projectId: 'p1', slot: 'evil', message: 'hi' });
  assert.equal([evil.ok, evil.error.code], [false, 'path_not_allowed']);
  assert.not.ok(existsSync(join(outside, '.orchestrator-msg.md')));
  const bad = await conn.command('slot.message', { projectId: 'p1', slot: '../x', message: 'hi' });
  assert.equal([bad.ok, bad.error.code], [false, 'invalid_args']);
});

test('pr.approve, pr.requestChanges and pr.voidApproval write and remove .svc/pr/<n>.json; a linked-out .svc is refused', async () => {
  const conn = await f.start();
  const file = join(f.root, '.svc', 'pr', '12.json');
  const a = await conn.command('pr.approve', { projectId: 'p1', number: 12, comment: 'LGTM' });
  assert.equal(a.data, { pr: 12, decision: 'approve', written: true });
  const signal = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal({ ...signal, time: 'T' }, { v: 1, pr: 12, decision: 'approve', comment: 'LGTM', time: 'T' });
  const rc = await conn.command('pr.requestChanges', { projectId: 'p1', number: 12, comment: 'Add a test' });
  assert.is(rc.ok, true);
  assert.equal(JSON.parse(readFileSync(file, 'utf8')).decision, 'request_changes');
  const noComment = await conn.command('pr.requestChanges', { projectId: 'p1', number: 12 });
  assert.equal([noComment.ok, noComment.error.code], [false, 'invalid_args']);
  assert.equal((await conn.command('pr.voidApproval', { projectId: 'p1', number: 12 })).data, { pr: 12, removed: true });
  assert.not.ok(existsSync(file));
  assert.equal((await conn.command('pr.voidApproval', { projectId: 'p1', number: 12 })).data, { pr: 12, removed: false });

  const outside = join(f.sb.dir, 'outside-pr');
  mkdirSync(outside);
  writeFileSync(join(outside, 'keep'), '');
  symlinkSync(outside, join(f.root, '.svc', 'pr2'));
  const { rmSync, renameSync } = await import('node:fs');
  rmSync(join(f.root, '.svc', 'pr'), { recursive: true });
  renameSync(join(f.root, '.svc', 'pr2'), join(f.root, '.svc', 'pr'));
  const evil = await conn.command('pr.approve', { projectId: 'p1', number: 13 });
  assert.equal([evil.ok, evil.error.code], [false, 'path_not_allowed']);
  assert.not.ok(existsSync(join(outside, '13.json')));
});

test('a codex orchestrator gets its telemetry as -c overrides when otlp.codexExperimental is on', async () => {
  const conn = await f.start({ profiles: [{ id: 'cx', runtime: 'codex', env: { FAKE_AGENT_DIR: f.agentDir }, args: ['--full-auto'] }], otlp: { codexExperimental: true } });
  assert.is((await conn.command('orchestrator.start', { projectId: 'p1' })).ok, true);
  await waitUntil(() => agentRuns(f.agentDir).length === 1, 5000, 'codex to start');
  const [run] = agentRuns(f.agentDir);
  assert.equal(run.argv.slice(0, 5), ['--full-auto', '-c', 'otel.exporter={otlp-http={endpoint="http://127.0.0.1:4318/v1/logs",protocol="binary"}}', '-c', 'otel.log_user_prompt=false']);
  assert.is(run.env.CLAUDE_CODE_ENABLE_TELEMETRY, undefined);
  await waitPane(f, 'svc-p1-orch', /Ask Codex to do anything/);
  const s = await conn.command('orchestrator.status', { projectId: 'p1' });
  assert.equal([s.data.state, s.data.runtime], ['idle', 'codex']);
});

test.run();
