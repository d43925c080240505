// The orchestrator loop on a GitLab project (issue 42), with the real server, the real runner bundle
// (no GitLab token of its own: the server's stored one, memory only), real git and tmux, a fake
// `claude` and the fake GitLab: an issue labelled for the queue → the server's queue → a slot takes it
// (`svc-runner slot-start`, as the orchestrator skill does: worktree, branch, worker session) → the
// worker's merge request on GitLab → its pipeline passes → Approve (pr.approve, what the Fleet page
// sends: GitLab's approval and the signal file) → `svc-runner pr-merge` (the skill's step 3) → merged
// on GitLab and recorded by the server. The steps the orchestrator agent would type are run here as
// commands in the project (its reads too: `issue-list`, `pr-list`, `pr-view`, and the worker's
// `issue-view`, none of them `gh`); the worker opens its MR with `svc-runner pr-create` (its branch pushed to a
// bare repository standing in for GitLab's git side, the MR through GitLab's API).
// needs: git tmux
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gitlabFake } from '../fakes/gitlab.ts';
import { gitRemote } from '../fakes/git-remote.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, startDaemon, waitUntil } from '../runner/_harness.ts';
import { gitlabProject } from './_gitlab.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';

const FAKE_AGENT = resolve(import.meta.dirname, '..', 'runner', 'fixtures', 'fake-agent.sh');
const PATH = 'acme/loop/app';
let gl: GitLabFake;
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let server: RunningServer;
let sb: Sandbox;
let daemon: Daemon;
let projectId: string;
let root: string;
const socket = `svc-test-gl-loop-${process.pid}`;
const tmux = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });

test.before(() => setup().catch((e) => (console.error('setup failed:', e), Promise.reject(e))));
async function setup() {
  gl = await gitlabFake();
  gl.project(PATH);
  ({ dbEnv, server, sb, projectId, root } = await gitlabProject(gl, PATH, { keyByte: 6 }));
  sb.fakeBin('claude', `FAKE_RUNTIME=claude exec sh '${FAKE_AGENT}' "$@"`);
  sb.writeConfig({ ...sb.readConfig(), profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: join(sb.dir, 'agent') }, args: [] }] });
  daemon = startDaemon(sb, { SVC_PR_POLL_MS: '300', SVC_QUEUE_POLL_MS: '300', SVC_TMUX_SOCKET: socket });
}
test.after(async () => {
  await killDaemons();
  tmux('kill-server');
  await server?.cleanup();
  await dbEnv?.cleanup();
  sb?.cleanup();
  await gl?.close();
});

let lastFleet = '';
const fleetText = async () => (lastFleet = JSON.stringify(await (await server.api(`/api/projects/${projectId}/fleet`)).json()));

test('issue labelled → slot takes it → MR opened → pipeline passes → Approve → pr-merge → merged', async () => {
  const issue = gl.addIssue(PATH, { title: 'Loop me', labels: ['svc'] });
  await waitUntil(async () => (await (await server.api(`/api/projects/${projectId}/queue`)).text()).includes('Loop me'), 30_000, () => `the issue in the server's queue\n${daemon.output().slice(-1500)}`);

  // The orchestrator's dispatch (skill step 5), run in the project as the agent runs it: the open issues
  // from `svc-runner issue-list` (not `gh`), then `slot-start`.
  const env = { SVC_TMUX_SOCKET: socket, SVC_PROJECT_ID: projectId };
  const listed = await runCli(sb, ['issue-list'], { ...env, SVC_PROJECT_ROOT: root });
  assert.is(listed.status, 0, listed.stderr);
  assert.equal(JSON.parse(listed.stdout).issues.map((i: { number: number; title: string; labels: string[] }) => [i.number, i.title, i.labels]), [[issue.iid, 'Loop me', ['svc']]]);
  const started = await runCli(sb, ['slot-start', 'a', '--issue', String(issue.iid), '--title', 'Loop me', '--project-root', root], env);
  assert.is(started.status, 0, started.stderr);
  const session = `svc-${projectId}-slot-a`;
  await waitUntil(() => tmux('list-sessions', '-F', '#{session_name}').stdout.includes(session), 20_000, 'the worker session');
  const worktree = join(root, '..', '.wt-app-a');
  assert.ok(existsSync(worktree));
  const branch = `svc/a/issue-${issue.iid}`;
  const sha = execFileSync('git', ['rev-parse', branch], { cwd: root, encoding: 'utf8' }).trim();
  await waitUntil(async () => (await fleetText()).includes(`"issue":${issue.iid}`), 20_000, () => `the slot in the fleet\n${lastFleet}`);

  // The worker's step 1: its issue with the comments, from its worktree (GitLab's system notes left out).
  issue.description = 'The loop must close.';
  issue.notes = [
    { id: 1, body: 'added ~svc label', username: 'ada', system: true, at: '2026-11-01T00:00:00Z' },
    { id: 2, body: 'Please keep it small.', username: 'ada', system: false, at: '2026-11-01T00:01:00Z' },
  ];
  const read = await runCli(sb, ['issue-view', String(issue.iid)], { ...env, SVC_PROJECT_ROOT: worktree });
  assert.is(read.status, 0, read.stderr);
  const viewed = JSON.parse(read.stdout);
  assert.equal([viewed.number, viewed.title, viewed.body, viewed.state, viewed.author], [issue.iid, 'Loop me', 'The loop must close.', 'open', 'ada']);
  assert.equal(viewed.comments, [{ author: 'ada', body: 'Please keep it small.', createdAt: '2026-11-01T00:01:00Z' }]);

  // The worker's step 4 (skills/svc-worker): `svc-runner pr-create` from its worktree. The daemon pushes
  // the branch to origin (a bare repository: the fake GitLab hosts no git) and opens the merge request
  // through GitLab's API with the server's token. Its pipeline runs, then passes.
  const remote = gitRemote(join(sb.dir, 'remote'), PATH, root);
  const created = await runCli(sb, ['pr-create', '--title', 'Loop me', '--body', `Closes #${issue.iid}`, '--project-root', worktree], env);
  assert.is(created.status, 0, created.stderr);
  assert.is(remote.branch(branch), sha, 'the branch was pushed');
  const mr = gl.project(PATH).mrs.find((x) => x.source === branch)!;
  assert.equal([JSON.parse(created.stdout).pr, mr.title, mr.description], [mr.iid, 'Loop me', `Closes #${issue.iid}`]);
  mr.sha = sha; // the fake answers a fixed sha for a new MR (it has no git): the branch's commit, as GitLab would
  gl.pipeline(PATH, sha, { test: 'running' });
  await waitUntil(async () => (await fleetText()).includes(`"pr":{"number":${mr.iid}`), 30_000, () => `the MR on the slot in the fleet\n${lastFleet}`);
  gl.pipeline(PATH, sha, { test: 'success' });
  await waitUntil(async () => /"checks":\{[^}]*"passed"/.test(await fleetText()), 30_000, () => `checks passed in the fleet\n${lastFleet}`);

  // The orchestrator's step 3 reads the open merge requests and their pipeline's jobs as checks.
  const pulls = await runCli(sb, ['pr-list'], { ...env, SVC_PROJECT_ROOT: root });
  assert.is(pulls.status, 0, pulls.stderr);
  assert.equal(JSON.parse(pulls.stdout).pulls.map((p: { number: number; branch: string; checks: { state: string } }) => [p.number, p.branch, p.checks.state]), [[mr.iid, branch, 'passed']]);
  const viewMr = await runCli(sb, ['pr-view', `!${mr.iid}`], { ...env, SVC_PROJECT_ROOT: root });
  assert.is(viewMr.status, 0, viewMr.stderr);
  assert.equal((({ number, state, branch: b, base }) => ({ number, state, branch: b, base }))(JSON.parse(viewMr.stdout)), { number: mr.iid, state: 'open', branch, base: 'main' });

  // Approve (the Fleet page sends pr.approve): GitLab's approval, then svc's signal file.
  const approved = await server.api(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name: 'pr.approve', args: { number: mr.iid } } });
  assert.is(approved.status, 200, await approved.clone().text());
  assert.equal(mr.approvedBy, ['svc-bot']);
  assert.ok(existsSync(join(root, '.svc', 'pr', `${mr.iid}.json`)));

  // The orchestrator's merge step (skill step 3).
  const merged = await runCli(sb, ['pr-merge', String(mr.iid)], { ...env, SVC_PROJECT_ROOT: root });
  assert.is(merged.status, 0, merged.stderr);
  assert.is(mr.state, 'merged');
  await waitUntil(async () => (await fleetText()).includes('"state":"merged"'), 30_000, () => `merged in the fleet\n${lastFleet}`);
  assert.equal(gl.unexpected, []);
});

test.run();
