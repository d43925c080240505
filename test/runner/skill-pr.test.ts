// Skill runs with Output "Pull request" against the code host (docs/skill-runs.md, "Pull request
// output"; issue 15): the real runner pushes the run's branch to a bare repository over file:// (the
// code host's git side, test/fakes/git-remote.ts) and opens the pull request on the fake GitHub
// (test/fakes/github.ts); the run's record links it. A token without write access → openError.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import { assertMatchesGitHub } from '../fakes/openapi-check.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { gitRemote } from '../fakes/git-remote.ts';
import type { GitRemote } from '../fakes/git-remote.ts';
import { PROFILES, skillFleet } from './_skills.ts';
import type { SkillFleet } from './_skills.ts';

const REPO = 'octo/app';
const RUN_ENV = { SVC_RUNS_POLL_MS: '100' };
const READ_ONLY = 'ghp_readonly_token_000000000000000000';

let f: SkillFleet;
let gh: GitHubFake;
let remote: GitRemote;
test.before.each(async () => {
  f = await skillFleet('skillpr');
  gh = await githubFake();
  remote = gitRemote(`${f.sb.dir}/remote`, REPO, f.root);
  gh.repo(REPO).bare = remote.path;
  f.fake.options.projects = [{ id: 'p1', root: f.root, repo: REPO } as { id: string; root: string }];
});
test.after.each(async () => {
  await f.cleanup();
  await gh.close();
});

const withToken = (token: string) => ({
  profiles: PROFILES(f.agentDir).map((p) => ({ ...p, env: { ...p.env, GH_TOKEN: token } })),
  codehost: { apiUrl: gh.url },
  queue: { pollSeconds: 3600 },
  fleet: { prPollSeconds: 3600 },
});

test('a pull request run pushes svc/run-<id> to the remote and opens the pull request (title and body from the report); the run record links it', async () => {
  const conn = await f.start(withToken(gh.token), RUN_ENV);
  const r = (await conn.command('skill.run', { projectId: 'p1', skill: 'edit', output: 'pull_request', args: ['x'] })).data;
  const final = (await f.waitState(r.runId, 'succeeded', 30_000)).payload;
  const pr = final.result.pullRequest;
  assert.is(pr.openError, undefined, pr.openError);
  const opened = gh.repo(REPO).pulls.find((p) => p.head === `svc/run-${r.runId}`)!;
  assert.ok(opened, 'the pull request exists on the code host');
  assert.equal([pr.url, pr.number], [`https://github.example/${REPO}/pull/${opened.number}`, opened.number]);
  assert.is(remote.branch(`svc/run-${r.runId}`), pr.head, 'the branch was pushed with its commit');
  assert.ok(remote.files(pr.head).includes('src/new.txt'));
  assert.equal([opened.base, opened.sha], ['main', pr.head]);
  assert.is(opened.title, 'Report: edit done. Arguments: ["x"]');
  assert.match(opened.body, /^Report: edit done\. Arguments: \["x"\]\n\n---\nOpened by svc skill run `[^`]+` \(skill `edit`\)\.$/);
  const post = gh.requests.find((q) => q.method === 'POST' && q.path === `/repos/${REPO}/pulls`)!;
  assert.is(post.token, gh.token, "the run profile's token");
});

test('a token without write access (403) → openError in the run record naming the scope; the run still succeeded and the branch stays', async () => {
  gh.readOnly.add(READ_ONLY);
  const conn = await f.start(withToken(READ_ONLY), RUN_ENV);
  const r = (await conn.command('skill.run', { projectId: 'p1', skill: 'edit', output: 'pull_request' })).data;
  const final = (await f.waitState(r.runId, 'succeeded', 30_000)).payload;
  const pr = final.result.pullRequest;
  assert.match(pr.openError, /may not open pull requests on octo\/app .*HTTP 403: Resource not accessible by personal access token.*write access/);
  assert.not.match(pr.openError, new RegExp(READ_ONLY));
  assert.equal([pr.url, pr.number, pr.commits], [undefined, undefined, 1]);
  assert.is(gh.repo(REPO).pulls.length, 0);
  assert.ok(f.git(f.root, 'branch', '--list', `svc/run-${r.runId}`).trim(), 'the branch stays');
  assert.not.match(f.daemon!.output(), new RegExp(READ_ONLY));
});

test('a run that changed nothing opens no pull request; a report run never pushes', async () => {
  const conn = await f.start(withToken(gh.token), RUN_ENV);
  const same = (await conn.command('skill.run', { projectId: 'p1', skill: 'echo', output: 'pull_request' })).data;
  const report = (await conn.command('skill.run', { projectId: 'p1', skill: 'edit' })).data;
  await f.waitState(same.runId, 'succeeded', 30_000);
  await f.waitState(report.runId, 'succeeded', 30_000);
  assert.is(gh.requests.filter((q) => q.method === 'POST').length, 0);
  assert.is(remote.branch(`svc/run-${same.runId}`), null);
});

test("every request svc made to the fake GitHub and every answer it gave match GitHub's OpenAPI description", () => assertMatchesGitHub());

test.run();
