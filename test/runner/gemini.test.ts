// Gemini CLI as a runtime (issue #43; runner/runtimes/gemini/), with the fake `gemini` (test/fakes/gemini.mjs),
// which writes the real chat files and sends the real telemetry through the OpenTelemetry JS OTLP/HTTP exporter:
// detection and auth through the bundle's `profiles --detect`; a skill run's argv and environment (runs/prepare.ts)
// run for real, its stream read, its exit codes mapped; its telemetry received by the runner's OTLP receiver
// as ONE request per API response whose request id is the chat message's (the server's merge key), attributed
// by svc.run, with no prompt or e-mail; a slot's argv with model, resume and approval mode.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LlmRequest } from '../../protocol/usage.ts';
import type { RunnerConfig } from '../../runner/config.ts';
import { agentArgv as slotArgv, launchAgent } from '../../runner/launch.ts';
import { capturePane, killSession } from '../../runner/tmux.ts';
import { OtlpReceiver } from '../../runner/otlp.ts';
import { buildRunFile } from '../../runner/runs/prepare.ts';
import { finalState } from '../../runner/runs/exec.ts';
import { summarize } from '../../runner/runs/stream.ts';
import { readGemini } from '../../runner/runtimes/gemini/transcript.ts';
import { freePort } from '../helpers/ports.ts';
import { runCli, sandbox, waitUntil } from './_harness.ts';

const FAKE = resolve(import.meta.dirname, '..', 'fakes', 'gemini.mjs');
const sb = sandbox();
sb.fakeBin('gemini', `exec node ${FAKE} "$@"`);
test.after(() => sb.cleanup());

async function detect(env: Record<string, string>): Promise<any[]> {
  const r = await runCli(sb, ['profiles', '--detect'], env);
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout).filter((p: any) => p.runtime === 'gemini');
}

test('profiles --detect finds gemini; authenticated by GEMINI_API_KEY or a cached Google login, not otherwise', async () => {
  const bare = await detect({});
  assert.is(bare.length, 1);
  assert.equal([bare[0].found, bare[0].version, bare[0].authenticated], [true, '0.56.0', false]);
  assert.is((await detect({ GEMINI_API_KEY: 'AIza-secret' }))[0].authenticated, true);
  const cliHome = join(sb.dir, 'gemini-home');
  mkdirSync(join(cliHome, '.gemini'), { recursive: true });
  writeFileSync(join(cliHome, '.gemini', 'oauth_creds.json'), '{}');
  assert.is((await detect({ GEMINI_CLI_HOME: cliHome }))[0].authenticated, true, 'GEMINI_CLI_HOME/.gemini/oauth_creds.json');
});

function run(argv: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string }> {
  return new Promise((ok) => {
    const p = spawn(argv[0]!, argv.slice(1), { cwd, env: { ...sb.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.on('close', (code) => ok({ code, stdout }));
  });
}

test('a skill run: gemini -p … -m … --approval-mode, its stream read, its telemetry one request merged with its chat message', async () => {
  const port = await freePort();
  const received: LlmRequest[] = [];
  const receiver = new OtlpReceiver({ port, codexExperimental: false, onRequests: (r) => received.push(...r) });
  await receiver.listen();
  try {
    const root = join(sb.dir, 'proj');
    mkdirSync(root, { recursive: true });
    const config = { otlp: { enabled: true, http: port, grpc: null, codexExperimental: false }, profiles: [] } as unknown as RunnerConfig;
    const chosen = { profile: { id: 'gem', runtime: 'gemini' as const, env: { GEMINI_API_KEY: 'AIza-secret' }, args: [] }, binaryPath: join(sb.bin, 'gemini') };
    const file = buildRunFile(chosen, config, { runId: 'run_gem1', projectId: 'p1', root, skill: 'echo', args: ['a b'], output: 'pull_request', model: 'gemini-2.5-pro', timeoutSec: 60 }, sb.env);
    assert.equal(file.argv.slice(1, -1), ['--output-format', 'stream-json', '-m', 'gemini-2.5-pro', '--approval-mode', 'auto_edit', '-p']);
    assert.match(file.argv.at(-1)!, /^Use the echo skill\./);
    assert.is(file.env.GEMINI_TELEMETRY_OTLP_ENDPOINT, `http://127.0.0.1:${port}`);
    assert.match(file.env.OTEL_RESOURCE_ATTRIBUTES!, /svc\.run=run_gem1/);
    const r = await run(file.argv, root, file.env);
    assert.is(r.code, 0);
    const s = summarize('gemini', r.stdout);
    assert.equal([s.completed, s.error, s.finalMessage], [true, null, 'Done.']);
    assert.ok(s.sessionId);
    assert.is(finalState({ reason: 'exited', code: 0, signal: null }, s, 60, 'gemini').state, 'succeeded');
    await waitUntil(() => received.length >= 1, 10_000, 'the api_response record');
    const chat = await readGemini([join(sb.home, '.gemini', 'tmp')]);
    const mine = chat.requests.filter((x) => x.request.sessionId === s.sessionId);
    assert.is(mine.length, 1, 'the message re-appended with its tokens counts once');
    assert.is(mine[0]!.cwd, root, 'cwd from .project_root');
    const t = received.filter((x) => x.sessionId === s.sessionId);
    assert.is(t.length, 1, 'api_response only: the GenAI copy and the prompt record are dropped');
    assert.equal([t[0]!.runtime, t[0]!.source, t[0]!.model, t[0]!.run], ['gemini', 'otlp', 'gemini-2.5-pro', 'run_gem1']);
    assert.is(t[0]!.requestId, mine[0]!.request.requestId, "the record's request id is its chat message's: one row on the server");
    assert.equal(
      [t[0]!.inputTokens, t[0]!.outputTokens, t[0]!.cacheReadTokens, t[0]!.durationMs],
      [mine[0]!.request.inputTokens, mine[0]!.request.outputTokens, mine[0]!.request.cacheReadTokens, 1234],
    );
    assert.not.match(JSON.stringify(received), /someone@example|Use the echo/);
  } finally {
    await receiver.close();
  }
});

test("gemini's exit codes become the run's error: 41 authentication, 53 turn limit", async () => {
  const root = join(sb.dir, 'proj2');
  mkdirSync(root, { recursive: true });
  const config = { otlp: { enabled: false }, profiles: [] } as unknown as RunnerConfig;
  const chosen = { profile: { id: 'gem', runtime: 'gemini' as const, env: {}, args: ['--approval-mode', 'yolo'] }, binaryPath: join(sb.bin, 'gemini') };
  const file = buildRunFile(chosen, config, { runId: 'run_gem2', projectId: 'p1', root, skill: 'echo', args: [], output: 'report', timeoutSec: 60 }, sb.env);
  assert.equal(file.argv.filter((a) => a === '--approval-mode').length, 1, "the profile's own approval mode decides");
  for (const [code, text] of [[41, /authentication/], [53, /turn limit/]] as const) {
    const r = await run(file.argv, root, { ...file.env, FAKE_GEMINI_EXIT: String(code) });
    assert.is(r.code, code);
    const final = finalState({ reason: 'exited', code, signal: null }, summarize('gemini', r.stdout), 60, 'gemini');
    assert.equal(final.state, 'failed');
    assert.match(final.error!, text);
    assert.match(final.error!, /FatalError: fake exit/);
    assert.match(finalState({ reason: 'exited', code, signal: null }, { error: null }, 60, 'gemini').error!, new RegExp(`^gemini exited with code ${code}: `));
  }
});

test('a slot: model, resume and approval mode as gemini takes them, the first prompt through -i', () => {
  const chosen = { profile: { id: 'gem', runtime: 'gemini' as const, env: {}, args: ['--skip-trust'] }, binaryPath: '/usr/bin/gemini' };
  const config = { otlp: { enabled: false }, profiles: [] } as unknown as RunnerConfig;
  const meta = { projectId: 'p1', root: '/tmp', role: 'worker' as const };
  assert.equal(slotArgv(chosen, config, meta, 'go'), ['/usr/bin/gemini', '--skip-trust', '-i', 'go']);
  assert.equal(slotArgv(chosen, config, meta, 'go', { model: 'gemini-2.5-flash', resume: true, permissionMode: 'accept_edits' }), ['/usr/bin/gemini', '--skip-trust', '-m', 'gemini-2.5-flash', '--resume', 'latest', '--approval-mode', 'auto_edit', '-i', 'go']);
  assert.equal(slotArgv(chosen, config, meta, 'go', { resume: '5c0e9a52-8f1e-4d7b-9a61-2b4f0f3c7d11' }).slice(2, 4), ['--resume', '5c0e9a52-8f1e-4d7b-9a61-2b4f0f3c7d11']);
});

test('a slot in real tmux: the fake gemini runs interactively with its telemetry env, writes its chat, and its session is counted', async () => {
  const root = join(sb.dir, 'slot-proj');
  mkdirSync(root, { recursive: true });
  const env = { ...sb.env, SVC_TMUX_SOCKET: `svc-gem-${process.pid}`, FAKE_AGENT_DIR: join(sb.dir, 'agent') };
  const port = await freePort(); // nothing listens: the export fails quietly, as a CLI's does
  const config = { otlp: { enabled: true, http: port, grpc: null, codexExperimental: false }, profiles: [] } as unknown as RunnerConfig;
  const chosen = { profile: { id: 'gem', runtime: 'gemini' as const, env: { GEMINI_API_KEY: 'AIza-secret', FAKE_AGENT_DIR: join(sb.dir, 'agent') }, args: [] }, binaryPath: join(sb.bin, 'gemini') };
  const session = 'svc-gem-slot';
  try {
    await launchAgent({ session, cwd: root, chosen, config, meta: { projectId: 'p1', root, role: 'worker', slot: 's1', issue: 7 }, prompt: 'Use the svc-worker skill.', env });
    await waitUntil(async () => /Gemini CLI \(fake\)/.test((await capturePane(env, session)) ?? ''), 10_000, 'the fake gemini in the pane');
    const chat = await readGemini([join(sb.home, '.gemini', 'tmp')]);
    assert.ok(chat.requests.some((r) => r.cwd === root), "the slot's chat file, attached to its worktree");
    const { readdirSync, readFileSync } = await import('node:fs');
    const rec = readdirSync(join(sb.dir, 'agent')).map((f) => JSON.parse(readFileSync(join(sb.dir, 'agent', f), 'utf8'))).find((x) => x.cwd === root);
    assert.ok(rec, 'the fake recorded its start');
    assert.equal(rec.argv, ['-i', 'Use the svc-worker skill.']);
    assert.equal([rec.env.GEMINI_TELEMETRY_ENABLED, rec.env.GEMINI_TELEMETRY_OTLP_PROTOCOL, rec.env.GEMINI_TELEMETRY_OTLP_ENDPOINT, rec.env.SVC_SLOT], ['true', 'http', `http://127.0.0.1:${port}`, 's1']);
    assert.match(rec.env.OTEL_RESOURCE_ATTRIBUTES, /svc\.slot=s1,svc\.issue=7/);
  } finally {
    await killSession(env, session);
  }
});

test.run();
