// Skill runs (spec: Server commands to a runner, Runner state directory, Limits; docs/skill-runs.md)
// with the real runner bundle, real tmux (a socket of the test's own), real git and headless fakes of
// `claude -p --output-format stream-json` and `codex exec --json`.
// needs: tmux
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDaemon, waitUntil } from './_harness.ts';
import { PROFILES, skillFleet } from './_skills.ts';
import type { SkillFleet } from './_skills.ts';

let f: SkillFleet;
test.before.each(async () => {
  f = await skillFleet('skill');
});
test.after.each(async () => {
  await f.cleanup();
});

const HOSTILE = ['; rm -rf "$HOME"', '$(touch PWNED1)', '`touch PWNED2`', 'x;', '#(touch PWNED3)', '#{session_name}', '--', '-e', "it's \"quoted\"", 'a\nb', '${HOME}', '| tee PWNED4'];
const RUN_ENV = { SVC_RUNS_POLL_MS: '100' };

test('skill.run (report): answers once running; run.json holds an argv; stream, stderr, exit, state files; events queued → starting → running → succeeded with the final message as the report; args reach the agent literally', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const r = await conn.command('skill.run', { projectId: 'p1', skill: 'echo', args: HOSTILE, model: 'claude-opus-4-1' });
  assert.is(r.ok, true, JSON.stringify(r));
  const { runId } = r.data;
  assert.match(runId, /^[a-z0-9]+-[0-9a-f]{8}$/);
  // Answered once started; on a fast machine the fake echo agent may be done by then (no session left).
  assert.ok(['running', 'succeeded'].includes(r.data.state), r.data.state);
  if (r.data.state === 'running') assert.is(r.data.session, `svc-run-${runId}`);
  assert.equal([r.data.profileId, r.data.runtime, r.data.timeoutSec], ['cc', 'claude', 21600]);

  const final = (await f.waitState(runId, 'succeeded')).payload;
  assert.equal(f.states(runId), ['queued', 'starting', 'running', 'succeeded']);
  assert.is(final.result.report, `Report: echo done. Arguments: ${JSON.stringify(HOSTILE)}`);
  assert.equal([final.result.exitCode, final.result.costUsd, final.result.turns, final.result.sessionId?.startsWith('sess-')], [0, 0.0123, 3, true]);
  assert.equal(final.result.usage, { input_tokens: 1200, cache_read_input_tokens: 200, output_tokens: 80 });
  assert.equal([final.project, final.skill, final.args, final.output, final.profile, final.runtime, final.model], ['p1', 'echo', HOSTILE, 'report', 'cc', 'claude', 'claude-opus-4-1']);

  const [agent] = f.agentStarts();
  assert.equal(agent.args, HOSTILE, 'the arguments reached the agent literally');
  assert.equal(agent.argv.slice(0, 6), ['-p', '--output-format', 'stream-json', '--verbose', '--model', 'claude-opus-4-1']);
  assert.is(agent.cwd, f.root);
  assert.equal([agent.env.SVC_RUN_ID, agent.env.SVC_SKILL, agent.env.SVC_PROJECT_ID, agent.env.CLAUDE_CODE_ENABLE_TELEMETRY], [runId, 'echo', 'p1', '1']);
  assert.match(agent.env.OTEL_RESOURCE_ATTRIBUTES, new RegExp(`svc\\.project=p1,svc\\.run=${runId}$`));
  for (const name of ['PWNED1', 'PWNED2', 'PWNED3', 'PWNED4']) assert.not.ok(existsSync(join(f.root, name)) || existsSync(join(f.sb.dir, name)), `${name} must not exist`);
  assert.ok(existsSync(f.sb.home), 'HOME is still there');

  const run = f.readRunFile(runId, 'run.json');
  assert.ok(Array.isArray(run.argv) && run.argv[0].endsWith('/claude'), 'argv, not a shell string');
  assert.is(run.argv[run.argv.length - 1].includes(JSON.stringify(HOSTILE)), true);
  assert.equal([f.readRunFile(runId, 'state.json').state, f.readRunFile(runId, 'exit.json').reason, f.readRunFile(runId, 'exit.json').code], ['succeeded', 'exited', 0]);
  const stream = f.readRunFile(runId, 'stream.jsonl').trim().split('\n').map((l: string) => JSON.parse(l));
  assert.equal(stream.map((o: any) => o.type), ['system', 'assistant', 'assistant', 'user', 'result']);
  assert.is(f.readRunFile(runId, 'stderr.log'), 'a warning on stderr\n');
  const progress = f.events('skill_run.progress').filter((e) => e.payload.runId === runId).flatMap((e) => e.payload.lines);
  assert.equal(progress.map((l: any) => l.text), ['session started (model claude-fake-1)', 'Working on the echo skill.', 'tool: Bash ls -la', 'result: success']);
  assert.equal(progress.map((l: any) => l.seq), [1, 2, 3, 4]);
  await waitUntil(() => !f.sessions().includes(`svc-run-${runId}`), 30_000, 'the run session to end');
});

test('codex: `codex exec --json` with the model, and the last agent message as the report', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const r = await conn.command('skill.run', { projectId: 'p1', skill: 'echo', profileId: 'cx', model: 'gpt-5-codex', args: ['one'] });
  assert.is(r.ok, true, JSON.stringify(r));
  const final = (await f.waitState(r.data.runId, 'succeeded')).payload;
  assert.is(final.result.report, 'Report: echo done. Arguments: ["one"]');
  assert.equal(final.result.usage, { input_tokens: 1200, cached_input_tokens: 200, output_tokens: 80 });
  const [agent] = f.agentStarts();
  assert.equal(agent.argv.slice(0, 4), ['exec', '--json', '--model', 'gpt-5-codex']);
});

test('queue: above skills.maxConcurrentRuns runs wait as queued and start oldest first; each slot goes to the next when a run ends', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir), skills: { maxConcurrentRuns: 1 } }, RUN_ENV);
  const answers = [];
  for (const i of [1, 2, 3]) answers.push((await conn.command('skill.run', { projectId: 'p1', skill: 'slow', args: [`n${i}`] })).data);
  assert.equal(answers.map((a) => [a.state, a.position]), [['running', undefined], ['queued', 1], ['queued', 2]]);
  for (const a of answers) await f.waitState(a.runId, 'succeeded', 20_000);
  const started = readFileSync(join(f.agentDir, 'started.log'), 'utf8').trim().split('\n').map((l) => l.split(' ')[0]);
  assert.equal(started, answers.map((a) => a.runId), 'started in the order they were asked for');
  for (const a of answers.slice(1)) assert.equal(f.states(a.runId), ['queued', 'starting', 'running', 'succeeded']);
  // Never two at once: each started after the previous one ended.
  const ended = answers.map((a) => Date.parse(f.finalEvent(a.runId).payload.endedAt));
  const begun = answers.map((a) => Date.parse(f.finalEvent(a.runId).payload.startedAt));
  assert.ok(begun[1] >= ended[0] && begun[2] >= ended[1], JSON.stringify({ begun, ended }));
});

test('timeout: cut to skills.maxTimeoutSec; a run past it is stopped → timed_out', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir), skills: { maxTimeoutSec: 60 } }, { ...RUN_ENV, SVC_RUN_SECOND_MS: '20' });
  const r = await conn.command('skill.run', { projectId: 'p1', skill: 'hang', timeoutSec: 600 });
  assert.equal([r.data.timeoutSec, r.data.timeoutCut], [60, true]);
  const final = (await f.waitState(r.data.runId, 'timed_out', 10_000)).payload;
  assert.match(final.error, /timeout of 60 s/);
  assert.is(f.readRunFile(r.data.runId, 'exit.json').reason, 'timeout');
  assert.equal(f.states(r.data.runId), ['queued', 'starting', 'running', 'timed_out']);
  const tooLong = await conn.command('skill.run', { projectId: 'p1', skill: 'hang', timeoutSec: 21601 });
  assert.equal([tooLong.ok, tooLong.error.code], [false, 'invalid_args']);
});

test('skill.cancel: a running run → cancelled (its agent stopped), a queued one → cancelled without starting; a finished or unknown one is not', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir), skills: { maxConcurrentRuns: 1 } }, RUN_ENV);
  const running = (await conn.command('skill.run', { projectId: 'p1', skill: 'hang' })).data;
  const queued = (await conn.command('skill.run', { projectId: 'p1', skill: 'echo' })).data;
  assert.is(queued.state, 'queued');
  const c1 = await conn.command('skill.cancel', { projectId: 'p1', runId: queued.runId });
  assert.equal(c1.data, { runId: queued.runId, state: 'cancelled', cancelled: true });
  assert.equal(f.states(queued.runId), ['queued', 'cancelled']);
  await waitUntil(() => f.agentStarts().length === 1, 30_000, 'the running agent to start'); // "running" is said before the agent process is up
  const agentPid = f.agentStarts()[0].pid;
  const c2 = await conn.command('skill.cancel', { projectId: 'p1', runId: running.runId });
  assert.equal(c2.data, { runId: running.runId, state: 'cancelled', cancelled: true });
  await f.waitState(running.runId, 'cancelled');
  assert.is(f.readRunFile(running.runId, 'exit.json').reason, 'cancelled');
  assert.throws(() => process.kill(agentPid, 0), 'the agent is gone');
  assert.not.ok(f.sessions().includes(`svc-run-${running.runId}`));
  assert.is(f.agentStarts().length, 1, 'the queued run never started');
  const again = await conn.command('skill.cancel', { projectId: 'p1', runId: running.runId });
  assert.equal(again.data, { runId: running.runId, state: 'cancelled', cancelled: false });
  const unknown = await conn.command('skill.cancel', { projectId: 'p1', runId: 'nope' });
  assert.equal([unknown.ok, unknown.error.code], [false, 'unknown_run']);
});

test('skill.cancel of an agent that ignores SIGTERM: killed after the grace period → cancelled', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const r = (await conn.command('skill.run', { projectId: 'p1', skill: 'stubborn' })).data;
  await waitUntil(() => f.agentStarts().length === 1, 30_000, 'the agent to start');
  const c = await conn.command('skill.cancel', { projectId: 'p1', runId: r.runId }, 20_000);
  assert.is(c.data.state, 'cancelled');
  assert.ok(existsSync(join(f.agentDir, 'sigterm.log')), 'it got SIGTERM first');
  assert.throws(() => process.kill(f.agentStarts()[0].pid, 0));
});

test('failures: an error result → failed with the agent\'s words; a session killed from outside → failed, noticed', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const bad = (await conn.command('skill.run', { projectId: 'p1', skill: 'fail' })).data;
  const failed = (await f.waitState(bad.runId, 'failed')).payload;
  assert.match(failed.error, /error_during_execution: I could not finish/);
  assert.equal([failed.result.exitCode, failed.result.report], [1, 'I could not finish: the tests do not build.']);

  const hung = (await conn.command('skill.run', { projectId: 'p1', skill: 'hang' })).data;
  await waitUntil(() => f.agentStarts().some((a) => a.skill === 'hang'), 30_000, 'the hanging agent to start');
  f.tmux('kill-session', '-t', `=svc-run-${hung.runId}`);
  const killed = (await f.waitState(hung.runId, 'failed')).payload;
  assert.match(killed.error, /killed from outside/);
  assert.throws(() => process.kill(f.agentStarts().find((a) => a.skill === 'hang').pid, 0), 'its agent was stopped too');
});

test('pull request: a fresh worktree .wt-<repo>-run-<id> on branch svc/run-<id>; the change committed there, patch.diff with the full patch, the worktree removed and the branch kept; the main checkout untouched', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const r = (await conn.command('skill.run', { projectId: 'p1', skill: 'edit', output: 'pull_request', args: ['$(touch PWNED5)'] })).data;
  const wt = join(f.root, '..', `.wt-repo-run-${r.runId}`);
  assert.is(r.branch, `svc/run-${r.runId}`);
  const final = (await f.waitState(r.runId, 'succeeded')).payload;
  const agent = f.agentStarts()[0];
  assert.is(agent.cwd, wt);
  assert.ok(agent.argv.includes('--permission-mode') && agent.argv.includes('acceptEdits'));
  const pr = final.result.pullRequest;
  assert.equal([pr.branch, pr.commits, pr.files], [`svc/run-${r.runId}`, 1, 2]);
  assert.is(pr.base, f.git(f.root, 'rev-parse', 'HEAD').trim());
  assert.is(pr.head, f.git(f.root, 'rev-parse', `svc/run-${r.runId}`).trim());
  const patch = f.readRunFile(r.runId, 'patch.diff');
  assert.is(patch, f.git(f.root, 'diff', '--binary', '--no-color', pr.base, pr.head));
  assert.match(patch, /\+\$\(touch PWNED5\)/);
  assert.match(patch, /src\/new\.txt/);
  assert.is(pr.patchBytes, Buffer.byteLength(patch));
  const patchEvents = f.events('skill_run.patch').filter((e) => e.payload.runId === r.runId);
  assert.is(patchEvents[0].payload.text, patch);
  assert.equal([patchEvents[0].payload.truncated, patchEvents[0].payload.bytes], [false, pr.patchBytes]);
  assert.not.ok(existsSync(wt), 'the worktree is removed');
  assert.is(f.git(f.root, 'status', '--porcelain'), '', 'the main checkout is untouched');
  assert.is(readFileSync(join(f.root, 'README.md'), 'utf8'), '# repo\n');
  assert.not.ok(existsSync(join(f.root, 'PWNED5')));
});

test('runs start side by side: a pull request run whose checkout outlasts the lost-run grace (3 s) neither holds up a run sent after it nor is judged lost', async () => {
  // `git worktree add` takes 8 s (a large tree on a busy disk); every other git command is the real one.
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  f.sb.fakeBin('git', `case "$*" in *"worktree add"*) sleep 8;; esac\nexec '${realGit}' "$@"`);
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const slow = conn.command('skill.run', { projectId: 'p1', skill: 'echo', output: 'pull_request' }, 30_000);
  await waitUntil(() => f.events('skill_run.state').some((e) => e.payload.state === 'starting'), 15_000, 'the pull request run starting');
  const slowId = f.events('skill_run.state').find((e) => e.payload.state === 'starting')!.payload.runId;
  const quick = (await conn.command('skill.run', { projectId: 'p1', skill: 'echo' })).data;
  assert.is(quick.state, 'running', 'answered once its agent started');
  assert.not.ok(f.states(slowId).includes('running'), 'while the first run was still making its worktree');
  assert.is((await slow).data.runId, slowId);
  await f.waitState(slowId, 'succeeded', 60_000);
  assert.equal(f.states(slowId).filter((s) => s === 'failed'), []);
});

test('pull request: a patch over 128 KiB is sent cut at a line, saying so, with its full size; a run that changes nothing leaves no branch', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const big = (await conn.command('skill.run', { projectId: 'p1', skill: 'big', output: 'pull_request' })).data;
  const same = (await conn.command('skill.run', { projectId: 'p1', skill: 'echo', output: 'pull_request' })).data;
  const final = (await f.waitState(big.runId, 'succeeded')).payload;
  const ev = f.events('skill_run.patch').find((e) => e.payload.runId === big.runId).payload;
  const full = f.readRunFile(big.runId, 'patch.diff');
  assert.ok(Buffer.byteLength(full) > 128 * 1024);
  assert.equal([ev.truncated, ev.bytes], [true, Buffer.byteLength(full)]);
  assert.ok(Buffer.byteLength(ev.text) <= 128 * 1024 && ev.text.endsWith('\n') && full.startsWith(ev.text));
  assert.is(final.result.pullRequest.patchBytes, ev.bytes);
  const nothing = (await f.waitState(same.runId, 'succeeded')).payload;
  assert.equal([nothing.result.pullRequest.commits, nothing.result.pullRequest.patchBytes], [0, 0]);
  assert.is(f.git(f.root, 'branch', '--list', `svc/run-${same.runId}`), '');
});

test('runner restart mid-run: a live session is followed again; one killed meanwhile → failed; a queued run still starts', async () => {
  let conn = await f.start({ profiles: PROFILES(f.agentDir), skills: { maxConcurrentRuns: 2 } }, RUN_ENV);
  const alive = (await conn.command('skill.run', { projectId: 'p1', skill: 'hang' })).data;
  const dies = (await conn.command('skill.run', { projectId: 'p1', skill: 'hang' })).data;
  const waits = (await conn.command('skill.run', { projectId: 'p1', skill: 'echo' })).data;
  assert.equal([alive.state, dies.state, waits.state], ['running', 'running', 'queued']);
  await f.daemon!.kill('SIGKILL');
  f.tmux('kill-session', '-t', `=svc-run-${dies.runId}`);
  conn = await f.start({ profiles: PROFILES(f.agentDir), skills: { maxConcurrentRuns: 2 } }, RUN_ENV);
  const lost = (await f.waitState(dies.runId, 'failed')).payload;
  assert.match(lost.error, /killed from outside|without an exit record/);
  await f.waitState(waits.runId, 'succeeded');
  assert.ok(f.sessions().includes(`svc-run-${alive.runId}`), 'the live run kept running');
  assert.is(f.readRunFile(alive.runId, 'state.json').state, 'running');
  const c = await conn.command('skill.cancel', { projectId: 'p1', runId: alive.runId });
  assert.is(c.data.state, 'cancelled', 'the re-attached run is under control');
});

test('bad input: unknown skill, hostile names, unknown profile or project, a missing agent binary or tmux, NUL in args, a flag as model, a pull request outside git — each refused, nothing started', async () => {
  const conn = await f.start({ profiles: [...PROFILES(f.agentDir), { id: 'gone', runtime: 'claude', binary: '/nonexistent/claude', env: {}, args: [] }] }, RUN_ENV);
  const cases: [Record<string, unknown>, string, RegExp?][] = [
    [{ skill: 'nope' }, 'unknown_skill', /no skill nope/],
    [{ skill: 'echo; rm -rf /' }, 'invalid_args'],
    [{ skill: '../echo' }, 'invalid_args'],
    [{ skill: 'echo', profileId: 'other' }, 'unknown_profile'],
    [{ skill: 'echo', profileId: 'gone' }, 'agent_not_found', /\/nonexistent\/claude/],
    [{ skill: 'echo', args: ['a\0b'] }, 'invalid_args', /NUL/],
    [{ skill: 'echo', args: ['x'.repeat(4097)] }, 'invalid_args'],
    [{ skill: 'echo', model: '--dangerously-skip-permissions' }, 'invalid_args', /model/],
    [{ skill: 'echo', output: 'shell' }, 'invalid_args'],
    [{ skill: 'echo', projectId: 'nope' }, 'unknown_project'],
  ];
  for (const [args, code, message] of cases) {
    const r = await conn.command('skill.run', { projectId: 'p1', ...args });
    assert.equal([r.ok, r.error?.code], [false, code], JSON.stringify(args));
    if (message) assert.match(r.error.message, message);
  }
  assert.equal(f.agentStarts(), []);
  assert.equal(f.sessions(), []);
  await f.daemon!.kill();

  // tmux missing: a PATH with git, node and sh only.
  const nobin = join(f.sb.dir, 'nobin');
  mkdirSync(nobin);
  for (const b of ['git', 'sh', 'env']) symlinkSync(`/usr/bin/${b}`, join(nobin, b));
  const conn2 = await f.start({ profiles: PROFILES(f.agentDir) }, { ...RUN_ENV, PATH: `${f.sb.bin}:${nobin}` });
  const noTmux = await conn2.command('skill.run', { projectId: 'p1', skill: 'echo' });
  assert.equal([noTmux.ok, noTmux.error.code], [false, 'tmux_not_found']);
  assert.match(noTmux.error.message, /tmux/);
  await f.daemon!.kill();

  // A project root that is not a git repository cannot take a pull request run.
  const plain = join(f.sb.dir, 'plain');
  mkdirSync(plain);
  f.fake.options.projects = [{ id: 'p1', root: f.root }, { id: 'p2', root: plain }];
  const conn3 = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const notGit = await conn3.command('skill.run', { projectId: 'p2', skill: 'echo', output: 'pull_request' });
  assert.equal([notGit.ok, notGit.error.code], [false, 'not_a_repository']);
});

test.run();
