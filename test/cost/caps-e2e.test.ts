// Caps end to end (issue #40 part 1; docs/cost.md "Caps"): the real server and the real runner bundle
// paired with it, real tmux and git, the fake interactive agent in a slot started with
// `svc-runner slot-start`, and its usage arriving as Claude Code's OTLP api_request records at the
// runner's OTLP receiver (svc.project / svc.slot / svc.issue resource attributes, as the runner gives
// the agent). Passing the cap: the server's slot.stop (with the hold) ends the worker's tmux session,
// the worktree stays, the Fleet view says paused_cap within one request of the cap; "Raise the cap"
// through its action link has the runner start the worker again in the same worktree.
// The fleet view follows the runner's events file, which the runner polls: `slot.dispatched` can
// arrive after the server's own slot.stop, so every view condition is waited for, never read once.
// needs: tmux
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';
import { FAKE_AGENT, agentRuns } from '../runner/_fleet.ts';
import { apiRequestAttrs, freePort, sdkClient } from '../otlp/_otlp.ts';
import { KEY } from '../triggers/_harness.ts';
import { act, signIn, tokenOf } from '../act/_harness.ts';

let server: RunningServer;
let sb: Sandbox;
let daemon: Daemon;
let projectId: string;
let root: string;
let otlpPort: number;
let env: Record<string, string>;
const socket = `svc-test-caps-e2e-${process.pid}`;
const agentDir = () => join(sb.dir, 'agent');
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(server, path, init);
const sessions = () => {
  const r = spawnSync('tmux', ['-L', socket, 'list-sessions', '-F', '#{session_name}'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n').filter(Boolean) : [];
};

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  sb = sandbox();
  root = join(sb.dir, 'work', 'repo');
  mkdirSync(root, { recursive: true });
  const gitEnv = { ...sb.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, env: gitEnv });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(root, 'README.md'), '# repo\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'init');
  sb.fakeBin('claude', `FAKE_RUNTIME=claude exec sh '${FAKE_AGENT}' "$@"`);
  const made = (await call('/api/runners', { method: 'POST', json: { name: 'caps-e2e' } })).body;
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  otlpPort = await freePort();
  sb.writeConfig({ ...sb.readConfig(), profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: agentDir() }, args: [] }], otlp: { http: otlpPort } });
  projectId = (await call('/api/projects', { method: 'POST', json: { name: 'caps-e2e', repo: 'acme/repo', runnerId: made.runner.id, rootPath: root, caps: { perIssueUSD: 1 } } })).body.id;
  env = { ...gitEnv, SVC_TMUX_SOCKET: socket };
  daemon = startDaemon(sb, env);
  await daemon.waitFor(/project watch list updated/, 15_000);
  await daemon.waitFor(new RegExp(`OTLP receiver listening on 127\\.0\\.0\\.1:${otlpPort}`), 15_000);
});
test.after(async () => {
  await killDaemons();
  spawnSync('tmux', ['-L', socket, 'kill-server']);
  sb?.cleanup();
  await server?.cleanup();
});

const slotOf = async () => ((await call(`/api/projects/${projectId}/fleet`)).body.slots as any[]).find((s) => s.slot === 'a');

test('a slot passes its cap: stopped on the runner within one request, worktree kept, paused_cap; Raise continues in the same worktree', async () => {
  const cli = await runCli(sb, ['slot-start', 'a', '--issue', '7', '--project-root', root], env);
  assert.is(cli.status, 0, cli.stderr);
  const wt = join(dirname(root), '.wt-repo-a');
  await waitUntil(() => agentRuns(agentDir()).length === 1, 5000, 'the worker to start');
  const session = `svc-${projectId}-slot-a`;
  assert.ok(sessions().includes(session));
  writeFileSync(join(wt, 'progress.txt'), 'step 1\n');

  // The agent's usage, as Claude Code exports it: $0.30 a request (20 000 output tokens of Sonnet 4.5).
  const otel = sdkClient(`http://127.0.0.1:${otlpPort}`, 'proto', { 'svc.project': projectId, 'svc.slot': 'a', 'svc.issue': '7' });
  let n = 0;
  const request = async () => {
    otel.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 'sess-e2e', requestId: `req_e2e_${++n}`, model: 'claude-sonnet-4-5', output: 20_000 }));
    await otel.flush();
  };
  for (let i = 0; i < 3; i++) await request();
  const warned = async () => ((await call('/api/notifications')).body.notifications as any[]).find((x) => x.kind === 'cap.warning');
  await waitUntil(async () => Boolean(await warned()), 20_000, 'the 80 % warning');
  assert.ok(sessions().includes(session), 'still running at $0.90');
  await request();

  await daemon.waitFor(/command slot\.stop ok/, 20_000);
  await waitUntil(() => !sessions().includes(session), 10_000, 'the worker session to end');
  assert.ok(existsSync(join(root, '.svc', 'held', '7.json')), 'the issue is held');
  assert.is(readFileSync(join(wt, 'progress.txt'), 'utf8'), 'step 1\n', 'the worktree stays');
  let paused: any;
  await waitUntil(async () => (paused = await slotOf())?.cap?.state === 'paused_cap', 20_000, () => `paused_cap on the fleet view: ${JSON.stringify(paused)}`);
  assert.equal([paused.cap.costUsd, paused.cap.capUsd], [1.2, 1]);
  assert.ok(paused.cap.costUsd - paused.cap.capUsd <= 0.3 + 1e-9, 'within one request of the cap');
  const again = await runCli(sb, ['slot-start', 'a', '--issue', '7', '--project-root', root], env);
  assert.is(again.status, 1, 'the orchestrator cannot dispatch the held issue');

  const reached = ((await call('/api/notifications')).body.notifications as any[]).find((x) => x.kind === 'cap.reached');
  assert.equal(reached.actions.map((a: any) => a.label), ['Raise the cap by $1.00 and continue', 'Stop this issue']);
  const admin = await signIn(server, server.admin.email, server.admin.password);
  const raised = await act(server, 'POST', tokenOf(reached.actions[0].url), admin);
  assert.equal([raised.status, raised.body.data.capUsd], [200, 2], JSON.stringify(raised.body));
  await daemon.waitFor(/command slot\.resume ok/, 20_000);
  await waitUntil(() => sessions().includes(session), 10_000, 'the worker back in its session');
  await waitUntil(() => agentRuns(agentDir()).length === 2, 5000, 'the worker to start again');
  assert.is(agentRuns(agentDir())[1].cwd, wt, 'in the same worktree');
  assert.not.ok(existsSync(join(root, '.svc', 'held', '7.json')));
  await waitUntil(async () => (await slotOf())?.cap == null, 20_000, 'no longer paused on the fleet view');
  await otel.shutdown();
});

test.run();
