// OpenCode as a runtime (issue #43; runner/runtimes/opencode/), with the fake `opencode` (test/fakes/opencode.mjs),
// which writes OpenCode's real SQLite store and prints its real `run --format json` events: detection and auth
// through the bundle's `profiles --detect`; a skill run's argv (runs/prepare.ts) run for real, its stream read,
// its exit code mapped; the request it stored read from the database once (its step-finish part not added);
// a slot's argv with model and resume, and the TUI in real tmux whose session is counted.
// needs: tmux sqlite3
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunnerConfig } from '../../runner/config.ts';
import { agentArgv as slotArgv, launchAgent } from '../../runner/launch.ts';
import { capturePane, killSession } from '../../runner/tmux.ts';
import { buildRunFile } from '../../runner/runs/prepare.ts';
import { finalState } from '../../runner/runs/exec.ts';
import { summarize } from '../../runner/runs/stream.ts';
import { readOpencode } from '../../runner/runtimes/opencode/store.ts';
import { runCli, sandbox, waitUntil } from './_harness.ts';

const FAKE = resolve(import.meta.dirname, '..', 'fakes', 'opencode.mjs');
const sb = sandbox();
sb.fakeBin('opencode', `exec node ${FAKE} "$@"`);
test.after(() => sb.cleanup());
const dataDir = () => join(sb.home, '.local', 'share', 'opencode');

async function detect(env: Record<string, string>): Promise<any[]> {
  const r = await runCli(sb, ['profiles', '--detect'], env);
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout).filter((p: any) => p.runtime === 'opencode');
}

test('profiles --detect finds opencode; authenticated by a provider key or a credential `opencode auth list` lists', async () => {
  const bare = await detect({});
  assert.is(bare.length, 1);
  assert.equal([bare[0].found, bare[0].version, bare[0].authenticated], [true, '1.0.150', false]);
  assert.is((await detect({ ANTHROPIC_API_KEY: 'sk-ant-secret' }))[0].authenticated, true);
  const xdg = join(sb.dir, 'xdg-data');
  mkdirSync(join(xdg, 'opencode'), { recursive: true });
  writeFileSync(join(xdg, 'opencode', 'auth.json'), JSON.stringify({ anthropic: { type: 'oauth', refresh: 'r', access: 'a', expires: 0 } }));
  assert.is((await detect({ XDG_DATA_HOME: xdg }))[0].authenticated, true, '$XDG_DATA_HOME/opencode/auth.json');
  writeFileSync(join(xdg, 'opencode', 'auth.json'), '{}');
  assert.is((await detect({ XDG_DATA_HOME: xdg }))[0].authenticated, false, 'an empty auth.json lists nothing');
});

function run(argv: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string }> {
  return new Promise((ok) => {
    const p = spawn(argv[0]!, argv.slice(1), { cwd, env: { ...sb.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.on('close', (code) => ok({ code, stdout }));
  });
}

test('a skill run: opencode run --format json -m provider/model, its stream read, its request stored once in opencode.db', async () => {
  const root = join(sb.dir, 'proj');
  mkdirSync(root, { recursive: true });
  const config = { otlp: { enabled: true, http: 4318, grpc: null, codexExperimental: false }, profiles: [] } as unknown as RunnerConfig;
  const chosen = { profile: { id: 'oc', runtime: 'opencode' as const, env: { ANTHROPIC_API_KEY: 'sk-ant-secret' }, args: [] }, binaryPath: join(sb.bin, 'opencode') };
  const file = buildRunFile(chosen, config, { runId: 'run_oc1', projectId: 'p1', root, skill: 'echo', args: ['a b'], output: 'pull_request', model: 'claude-sonnet-4-5', timeoutSec: 60 }, sb.env);
  assert.equal(file.argv.slice(1, -1), ['run', '--format', 'json', '-m', 'anthropic/claude-sonnet-4-5']);
  assert.match(file.argv.at(-1)!, /^Use the echo skill\./);
  const r = await run(file.argv, root, file.env);
  assert.is(r.code, 0);
  const s = summarize('opencode', r.stdout);
  assert.equal([s.completed, s.error, s.finalMessage], [true, null, 'Done.']);
  assert.match(s.sessionId!, /^ses_/);
  assert.is(finalState({ reason: 'exited', code: 0, signal: null }, s, 60, 'opencode').state, 'succeeded');
  const read = await readOpencode([dataDir()]);
  const mine = read.requests.filter((x) => x.request.sessionId === s.sessionId);
  assert.is(mine.length, 1, 'the message, not its step-finish part again');
  assert.equal([mine[0]!.cwd, mine[0]!.request.model, mine[0]!.request.inputTokens, mine[0]!.request.cacheReadTokens, mine[0]!.request.cacheWrite5mTokens], [root, 'claude-sonnet-4-5', 12, 19024, 200]);
});

test("opencode's exit code 1 and its error event become the run's error", async () => {
  const root = join(sb.dir, 'proj2');
  mkdirSync(root, { recursive: true });
  const config = { otlp: { enabled: false }, profiles: [] } as unknown as RunnerConfig;
  const chosen = { profile: { id: 'oc', runtime: 'opencode' as const, env: {}, args: [] }, binaryPath: join(sb.bin, 'opencode') };
  const file = buildRunFile(chosen, config, { runId: 'run_oc2', projectId: 'p1', root, skill: 'echo', args: [], output: 'report', model: 'zai/glm-4.6', timeoutSec: 60 }, sb.env);
  assert.ok(file.argv.includes('zai/glm-4.6'), 'provider/model kept');
  const r = await run(file.argv, root, { ...file.env, FAKE_OPENCODE_EXIT: '1' });
  assert.is(r.code, 1);
  const final = finalState({ reason: 'exited', code: 1, signal: null }, summarize('opencode', r.stdout), 60, 'opencode');
  assert.equal(final.state, 'failed');
  assert.match(final.error!, /ProviderAuthError: fake exit 1/);
  assert.match(finalState({ reason: 'exited', code: 1, signal: null }, { error: null }, 60, 'opencode').error!, /^opencode exited with code 1: /);
});

test('a slot: model and resume as opencode takes them, the first prompt through --prompt', () => {
  const chosen = { profile: { id: 'oc', runtime: 'opencode' as const, env: {}, args: [] }, binaryPath: '/usr/bin/opencode' };
  const config = { otlp: { enabled: false }, profiles: [] } as unknown as RunnerConfig;
  const meta = { projectId: 'p1', root: '/tmp', role: 'worker' as const };
  assert.equal(slotArgv(chosen, config, meta, 'go'), ['/usr/bin/opencode', '--prompt', 'go']);
  assert.equal(slotArgv(chosen, config, meta, 'go', { model: 'gpt-5', resume: true }), ['/usr/bin/opencode', '-m', 'openai/gpt-5', '-c', '--prompt', 'go']);
  assert.equal(slotArgv(chosen, config, meta, 'go', { resume: 'ses_abc' }).slice(1, 3), ['-s', 'ses_abc']);
});

test('a slot in real tmux: the fake opencode TUI runs, stores its session, and its request is read with its cwd', async () => {
  const root = join(sb.dir, 'slot-proj');
  mkdirSync(root, { recursive: true });
  const env = { ...sb.env, SVC_TMUX_SOCKET: `svc-oc-${process.pid}`, FAKE_AGENT_DIR: join(sb.dir, 'agent') };
  const config = { otlp: { enabled: false }, profiles: [] } as unknown as RunnerConfig;
  const chosen = { profile: { id: 'oc', runtime: 'opencode' as const, env: { FAKE_AGENT_DIR: join(sb.dir, 'agent') }, args: [] }, binaryPath: join(sb.bin, 'opencode') };
  const session = 'svc-oc-slot';
  try {
    await launchAgent({ session, cwd: root, chosen, config, meta: { projectId: 'p1', root, role: 'worker', slot: 's1', issue: 7 }, prompt: 'Use the svc-worker skill.', env });
    await waitUntil(async () => /OpenCode \(fake\)/.test((await capturePane(env, session)) ?? ''), 10_000, 'the fake opencode in the pane');
    const read = await readOpencode([dataDir()]);
    assert.ok(read.requests.some((r) => r.cwd === root), "the slot's session, attached to its worktree");
    const rec = readdirSync(join(sb.dir, 'agent')).map((f) => JSON.parse(readFileSync(join(sb.dir, 'agent', f), 'utf8'))).find((x) => x.cwd === root);
    assert.ok(rec, 'the fake recorded its start');
    assert.equal(rec.argv, ['--prompt', 'Use the svc-worker skill.']);
    assert.is(rec.env.SVC_SLOT, 's1');
  } finally {
    await killSession(env, session);
  }
});

test.run();
