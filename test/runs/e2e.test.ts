// Skill runs end to end: the real server (PGlite or PostgreSQL per SVC_TEST_DB) and the real runner
// bundle paired with it, real tmux and git, a headless fake `claude`. skill.run and skill.cancel go
// through POST /api/projects/:projectId/commands; GET /api/runs/:runId shows what the runner reported.
// needs: tmux
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';
import { FAKE_HEADLESS, SKILLS } from '../runner/_skills.ts';

let server: RunningServer;
let sb: Sandbox;
let daemon: Daemon;
let projectId: string;
const socket = `svc-test-runs-e2e-${process.pid}`;

const api = async (path: string, init: { method?: string; json?: unknown } = {}) => {
  const res = await server.api(path, { method: init.method ?? 'GET', json: init.json });
  return { status: res.status, body: await res.json() };
};
const command = (name: string, args: Record<string, unknown>) => api(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name, args } });
async function runUntil(runId: string, states: string[], timeoutMs = 20_000) {
  let run: any;
  await waitUntil(async () => states.includes((run = (await api(`/api/runs/${runId}`)).body).state), timeoutMs, () => `run ${runId} to reach ${states}; it is ${JSON.stringify(run)}\n${daemon.output().slice(-2000)}`);
  return run;
}

test.before(async () => {
  server = await startServer({ admin: true });
  sb = sandbox();
  const root = join(sb.dir, 'work', 'repo');
  mkdirSync(root, { recursive: true });
  const gitEnv = { ...sb.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, env: gitEnv });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(root, 'README.md'), '# repo\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'init');
  sb.fakeBin('claude', `exec node '${FAKE_HEADLESS}' claude "$@"`);
  for (const skill of SKILLS) {
    mkdirSync(join(sb.home, '.claude', 'skills', skill), { recursive: true });
    writeFileSync(join(sb.home, '.claude', 'skills', skill, 'SKILL.md'), `---\nname: ${skill}\ndescription: ${skill}\n---\n`);
  }
  const made = (await api('/api/runners', { method: 'POST', json: { name: 'runs-e2e' } })).body;
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  const cfg = sb.readConfig();
  sb.writeConfig({ ...cfg, profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: join(sb.dir, 'agent') }, args: [] }], skills: { maxConcurrentRuns: 2 } });
  projectId = (await api('/api/projects', { method: 'POST', json: { name: 'runs-e2e', repo: 'acme/repo', runnerId: made.runner.id, rootPath: root } })).body.id;
  daemon = startDaemon(sb, { ...gitEnv, SVC_TMUX_SOCKET: socket, SVC_RUNS_POLL_MS: '100' });
  await daemon.waitFor(/project watch list updated/, 15_000);
});
test.after(async () => {
  await killDaemons();
  spawnSync('tmux', ['-L', socket, 'kill-server']);
  rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid!()}`, socket), { force: true });
  sb?.cleanup();
  await server?.cleanup();
});

test('skill.run through the API: the run id at once, then GET /api/runs/:runId shows it succeed with the report and progress lines', async () => {
  const args = ['; rm -rf "$HOME"', '$(touch PWNED)'];
  const r = await command('skill.run', { skill: 'echo', args });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is(r.body.ok, true);
  // The runner answers once the run started; the fake echo skill may already be done by then.
  assert.ok(['running', 'succeeded'].includes(r.body.data.state), r.body.data.state);
  const run = await runUntil(r.body.data.runId, ['succeeded']);
  assert.is(run.report, `Report: echo done. Arguments: ${JSON.stringify(args)}`);
  assert.equal(run.args, args);
  assert.equal([run.projectId, run.skill, run.output, run.profileId, run.runtime, run.exitCode, run.costUsd], [projectId, 'echo', 'report', 'cc', 'claude', 0, 0.0123]);
  await waitUntil(async () => (await api(`/api/runs/${run.id}`)).body.progress.length === 4, 5000, 'the progress lines');
  const listed = (await api(`/api/runs?projectId=${projectId}`)).body.runs;
  assert.ok(listed.some((x: any) => x.id === run.id && x.state === 'succeeded'));
});

test('pull request through the API: the server keeps 128 KiB of a larger patch and says it cut it', async () => {
  const r = await command('skill.run', { skill: 'big', output: 'pull_request' });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const run = await runUntil(r.body.data.runId, ['succeeded']);
  assert.equal([run.patchTruncated, run.pullRequest.commits, run.branch], [true, 1, `svc/run-${run.id}`]);
  assert.ok(run.patchBytes > 128 * 1024 && Buffer.byteLength(run.patch) <= 128 * 1024);
  assert.match(run.patch, /^diff --git a\/big\.txt b\/big\.txt/);
});

test('skill.cancel through the API → cancelled; a queued run waits its turn; a bad skill name never reaches the runner', async () => {
  const a = (await command('skill.run', { skill: 'hang' })).body.data;
  const b = (await command('skill.run', { skill: 'hang' })).body.data;
  const c = (await command('skill.run', { skill: 'echo' })).body.data;
  assert.equal([a.state, b.state, c.state, c.position], ['running', 'running', 'queued', 1]);
  assert.is((await runUntil(c.runId, ['queued'])).state, 'queued');
  const cancelled = await command('skill.cancel', { runId: a.runId });
  assert.equal([cancelled.status, cancelled.body.data.state], [200, 'cancelled']);
  assert.is((await runUntil(a.runId, ['cancelled'])).state, 'cancelled');
  await runUntil(c.runId, ['succeeded']);
  assert.is((await command('skill.cancel', { runId: b.runId })).body.data.state, 'cancelled');
  const bad = await command('skill.run', { skill: 'x; rm -rf /' });
  assert.is(bad.status, 400);
});

test.run();
