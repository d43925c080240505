// OpenCode end to end (issue #43): the real server and the real runner bundle paired with it, real tmux and git,
// the fake `opencode` (test/fakes/opencode.mjs) as the only profile. A skill run through the API runs
// `opencode run --format json`, succeeds with the agent's last text as its report, and the request OpenCode
// stored in its SQLite database reaches the server: GET /api/cost and /api/sessions show it under runtime
// opencode, at the seed's price, attached to the project (the session's directory is the project root).
// needs: tmux sqlite3
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { costUsd, DEFAULT_PRICES, findPrice } from '../../protocol/prices.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon } from '../runner/_harness.ts';

const FAKE = resolve(import.meta.dirname, '..', 'fakes', 'opencode.mjs');
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let server: RunningServer;
let daemon: Daemon;
let projectId: string;
const sb = sandbox();
const socket = `svc-test-oc-ingest-${process.pid}`;
const api = async (path: string, init: { method?: string; json?: unknown } = {}) => {
  const res = await server.api(path, { method: init.method ?? 'GET', json: init.json });
  return { status: res.status, body: await res.json() };
};

test.before(async () => {
  dbEnv = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: dbEnv.env });
  const root = join(sb.dir, 'work', 'repo');
  mkdirSync(root, { recursive: true });
  const gitEnv = { ...sb.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, env: gitEnv });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(root, 'README.md'), '# repo\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'init');
  sb.fakeBin('opencode', `exec node '${FAKE}' "$@"`);
  mkdirSync(join(sb.home, '.opencode', 'skills', 'echo'), { recursive: true });
  writeFileSync(join(sb.home, '.opencode', 'skills', 'echo', 'SKILL.md'), '---\nname: echo\ndescription: echo\n---\n');
  const made = (await api('/api/runners', { method: 'POST', json: { name: 'oc-ingest' } })).body;
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  sb.writeConfig({ ...sb.readConfig(), profiles: [{ id: 'oc', runtime: 'opencode', env: { ANTHROPIC_API_KEY: 'sk-ant-secret', FAKE_AGENT_DIR: join(sb.dir, 'agent') }, args: [] }] });
  projectId = (await api('/api/projects', { method: 'POST', json: { name: 'oc-ingest', repo: 'acme/repo', runnerId: made.runner.id, rootPath: root } })).body.id;
  daemon = startDaemon(sb, { ...gitEnv, SVC_TMUX_SOCKET: socket, SVC_RUNS_POLL_MS: '100', SVC_INGEST_NO_WATCHER: '1', SVC_INGEST_POLL_MS: '200', SVC_INGEST_HOLD_MS: '300' });
  await daemon.waitFor(/project watch list updated/, 15_000);
});
test.after(async () => {
  await killDaemons();
  spawnSync('tmux', ['-L', socket, 'kill-server']);
  rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid!()}`, socket), { force: true });
  sb.cleanup();
  await server?.cleanup();
  await dbEnv?.cleanup();
});

test('a skill run with runtime opencode succeeds and its stored request is on the server under runtime opencode', async () => {
  const r = await api(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name: 'skill.run', args: { skill: 'echo', args: ['x'], model: 'claude-sonnet-4-5' } } });
  assert.is(r.status, 200, JSON.stringify(r.body));
  let run: any;
  await waitUntil(async () => (run = (await api(`/api/runs/${r.body.data.runId}`)).body).state === 'succeeded', 30_000, () => `the run succeeds: ${JSON.stringify(run)}\n${daemon.output().slice(-2000)}`);
  assert.equal([run.runtime, run.profileId, run.report, run.exitCode], ['opencode', 'oc', 'Done.', 0]);
  const want = costUsd({ inputTokens: 12, outputTokens: 187, cacheReadTokens: 19024, cacheWrite5mTokens: 200, cacheWrite1hTokens: 0 }, findPrice('claude-sonnet-4-5', DEFAULT_PRICES)!);
  let cost: any;
  await waitUntil(async () => (cost = (await api('/api/cost?groupBy=model&runtime=opencode')).body).groups?.length === 1, 30_000, () => `the request on the server: ${JSON.stringify(cost)}\n${daemon.output().slice(-2000)}`);
  const g = cost.groups[0];
  assert.equal([g.key, g.inputTokens, g.outputTokens, g.cacheReadTokens], ['claude-sonnet-4-5', 12, 187, 19024]);
  assert.ok(Math.abs(g.costUsd - want) < 1e-9, `priced at the seed's price: ${g.costUsd} vs ${want}`);
  // The session's metadata may come in a later batch than its request: waited on, not read once.
  let sessions: any[] = [];
  await waitUntil(async () => (sessions = (await api('/api/sessions?runtime=opencode')).body.sessions).length === 1, 30_000, () => `the session on the server: ${JSON.stringify(sessions)}`);
  assert.equal([sessions[0].runtime, sessions[0].projectId], ['opencode', projectId]);
  assert.match(sessions[0].sessionId ?? sessions[0].id, /ses_/);
});

test.run();
