// Skill runs (spec: Server commands to a runner, Runner state directory, Limits; docs/skill-runs.md)
// with the real runner bundle, real tmux (a socket of the test's own), real git and headless fakes of
// `claude -p --output-format stream-json` and `codex exec --json`.
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
  assert.is(r.data.state, 'running');
  assert.is(r.data.session, `svc-run-${runId}`);
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
  await waitUntil(() => !f.sessions().includes(`svc-run-${runId}`), 5000, 'the run session to end');
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

test.run();
