// `svc-runner pr-create` (skills/svc-worker step 4; runner/pr-create.ts): a slot's worker opens its pull
// request without `gh`. The real runner bundle and daemon, real git: from the slot's worktree the CLI asks
// the daemon over its local socket, which pushes the worktree's branch to the project's remote (a bare
// repository, the code host's git side) and opens the pull request on the fake GitHub with the token it
// holds; asked again it answers the same open pull request; no daemon, a detached HEAD and no title are
// clear refusals.
// needs: git
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { gitRemote } from '../fakes/git-remote.ts';
import type { GitRemote } from '../fakes/git-remote.ts';
import { fleet } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { runCli } from './_harness.ts';

const REPO = 'octo/app';
let f: Fleet;
let gh: GitHubFake;
let remote: GitRemote;
test.before.each(async () => {
  f = await fleet('prcreate');
  gh = await githubFake();
  remote = gitRemote(`${f.sb.dir}/remote`, REPO, f.root);
  gh.repo(REPO).bare = remote.path;
  f.fake.options.projects = [{ id: 'p1', root: f.root, repo: REPO } as { id: string; root: string }];
});
test.after.each(async () => {
  await f.cleanup();
  await gh.close();
});

test('from the slot’s worktree: the branch is pushed and the pull request opened with the daemon’s token; again → the same one', async () => {
  const wt = join(dirname(f.root), '.wt-repo-a');
  // Without a daemon the CLI says so.
  f.git(f.root, 'worktree', 'add', '-q', '-b', 'svc/a/issue-7', wt);
  const none = await runCli(f.sb, ['pr-create', '--title', 'Fix it', '--project-root', wt], f.env);
  assert.is(none.status, 1);
  assert.match(none.stderr, /the runner daemon is not running/);

  await f.start({ codehost: { apiUrl: gh.url }, queue: { pollSeconds: 3600 }, fleet: { prPollSeconds: 3600 } }, { GH_TOKEN: gh.token });
  f.git(wt, 'commit', '-q', '--allow-empty', '-m', 'the fix');
  const head = f.git(wt, 'rev-parse', 'HEAD').trim();
  const opened = await runCli(f.sb, ['pr-create', '--title', 'Fix it', '--body', 'Closes #7.\n\nTested with the unit tests.', '--project-root', wt], f.env);
  assert.is(opened.status, 0, opened.stderr);
  const answer = JSON.parse(opened.stdout);
  const pr = gh.repo(REPO).pulls.find((p) => p.head === 'svc/a/issue-7')!;
  assert.ok(pr, 'the pull request exists on the code host');
  assert.equal(answer, { pr: pr.number, url: `https://github.example/${REPO}/pull/${pr.number}`, branch: 'svc/a/issue-7' });
  assert.equal([pr.title, pr.body, pr.base], ['Fix it', 'Closes #7.\n\nTested with the unit tests.', 'main']);
  assert.is(remote.branch('svc/a/issue-7'), head, 'the branch was pushed with its commit');
  const post = gh.requests.find((q) => q.method === 'POST' && q.path === `/repos/${REPO}/pulls`)!;
  assert.is(post.token, gh.token, "the daemon's token");

  const again = await runCli(f.sb, ['pr-create', '--title', 'Fix it again', '--project-root', wt], f.env);
  assert.is(again.status, 0, again.stderr);
  assert.is(JSON.parse(again.stdout).pr, pr.number, 'the open pull request of the branch, not a second one');
  assert.is(gh.repo(REPO).pulls.filter((p) => p.head === 'svc/a/issue-7').length, 1);

  const untitled = await runCli(f.sb, ['pr-create', '--project-root', wt], f.env);
  assert.is(untitled.status, 2);
  assert.match(untitled.stderr, /--title <text> is required/);
  f.git(wt, 'checkout', '-q', '--detach');
  const detached = await runCli(f.sb, ['pr-create', '--title', 'x', '--project-root', wt], f.env);
  assert.is(detached.status, 1);
  assert.match(detached.stderr, /no branch is checked out here/);
});

test.run();
