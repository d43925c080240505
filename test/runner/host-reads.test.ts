// The agents' code-host reads without `gh` (issue 42; runner/host-commands.ts; skills/svc-orchestrator
// steps 3 and 5, skills/svc-worker step 1): `svc-runner issue-list`, `issue-view <N>`, `pr-list`,
// `pr-view <N>` ask the running daemon over its local socket, which reads the fake GitHub with the token it
// holds. The real runner bundle and daemon, real git. Every exchange is checked against GitHub's OpenAPI
// description. Wrong numbers, a directory outside any project, a project not on the watch list, an issue
// that does not exist and no daemon are clear refusals. (GitLab: test/codehost/gitlab-loop.test.ts.)
// needs: git
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { fleet } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { runCli } from './_harness.ts';

const REPO = 'octo/app';
let f: Fleet;
let gh: GitHubFake;
test.before.each(async () => {
  f = await fleet('hostreads');
  gh = await githubFake();
  f.fake.options.projects = [{ id: 'p1', root: f.root, repo: REPO } as { id: string; root: string }];
});
test.after.each(async () => {
  await f.cleanup();
  await gh.close();
});

const cli = async (...args: string[]) => runCli(f.sb, args, f.env);
const json = (r: { status: number | null; stdout: string; stderr: string }) => {
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
};

test('issue-list, issue-view with every comment, pr-list with checks, pr-view: read through the daemon with its token', async () => {
  const none = await cli('issue-list', '--project-root', f.root);
  assert.is(none.status, 1);
  assert.match(none.stderr, /the runner daemon is not running/);

  const r = gh.repo(REPO);
  r.issues.push({ number: 7, title: 'Crash on save', body: 'Steps: open, save.', labels: ['bug', 'svc'], state: 'open' });
  r.issues.push({ number: 8, title: 'Closed one', body: '', labels: [], state: 'closed' });
  // More comments than one page holds: all of them, oldest first.
  r.issues[0].comments = Array.from({ length: 105 }, (_, i) => ({ id: 1000 + i, user: i % 2 ? 'ada' : 'bob', body: `comment ${i}`, at: new Date(Date.UTC(2026, 10, 1, 0, i)).toISOString() }));
  r.next = 9;
  const pr = gh.addPull(REPO, { title: 'Fix the crash', head: 'svc/a/issue-7', body: 'Closes #7.' });
  r.checkRuns[pr.sha] = [
    { name: 'test', status: 'completed', conclusion: 'success' },
    { name: 'lint', status: 'in_progress', conclusion: null },
  ];
  await f.start({ codehost: { apiUrl: gh.url }, queue: { pollSeconds: 3600 }, fleet: { prPollSeconds: 3600 } }, { GH_TOKEN: gh.token });

  // The orchestrator's dispatch (step 5): the open issues, pull requests left out (GitHub lists them too).
  const issues = json(await cli('issue-list', '--project-root', f.root));
  assert.equal(issues, { repo: REPO, issues: [{ number: 7, title: 'Crash on save', url: `https://github.example/${REPO}/issues/7`, labels: ['bug', 'svc'] }] });

  // The worker's first step, from its slot's worktree (the project is the worktree's).
  const wt = join(dirname(f.root), '.wt-repo-a');
  f.git(f.root, 'worktree', 'add', '-q', '-b', 'svc/a/issue-7', wt);
  const issue = json(await cli('issue-view', '7', '--project-root', wt));
  assert.equal({ ...issue, comments: issue.comments.length }, { number: 7, title: 'Crash on save', url: `https://github.example/${REPO}/issues/7`, state: 'open', body: 'Steps: open, save.', labels: ['bug', 'svc'], author: 'octo', comments: 105, commentsComplete: true });
  assert.equal(issue.comments[0], { author: 'bob', body: 'comment 0', createdAt: '2026-11-01T00:00:00.000Z' });
  assert.equal(issue.comments[104].body, 'comment 104');
  assert.is(json(await cli('issue-view', '#7', '--project-root', wt)).number, 7, '#7 is 7');

  // The orchestrator's step 3: open pull requests with their checks, then one of them in full.
  const pulls = json(await cli('pr-list', '--project-root', f.root));
  assert.equal(pulls.repo, REPO);
  assert.equal(pulls.pulls.map((p: { number: number; branch: string; head: string; checks: { state: string; summary: unknown } }) => [p.number, p.branch, p.head, p.checks.state]), [[pr.number, 'svc/a/issue-7', pr.sha, 'pending']]);
  assert.equal(pulls.pulls[0].checks.items.map((c: { name: string; state: string }) => [c.name, c.state]).sort(), [['lint', 'pending'], ['test', 'passed']]);
  r.checkRuns[pr.sha][1] = { name: 'lint', status: 'completed', conclusion: 'success' };
  assert.is(json(await cli('pr-list', '--project-root', f.root)).pulls[0].checks.state, 'passed', 'read now, not from an earlier poll');
  const view = json(await cli('pr-view', String(pr.number), '--project-root', f.root));
  assert.equal([view.number, view.title, view.state, view.branch, view.base, view.checks.state], [pr.number, 'Fix the crash', 'open', 'svc/a/issue-7', 'main', 'passed']);

  for (const q of gh.requests.filter((x) => x.path.startsWith(`/repos/${REPO}/`))) assert.is(q.token, gh.token, `${q.method} ${q.path}: the daemon's token`);
  assert.equal(gh.openapi.mismatches, []);

  // Refusals: an issue that does not exist (1, the host's answer), wrong numbers and arguments (2), a
  // directory outside any project (2), a git project not on the watch list (1).
  const missing = await cli('issue-view', '99', '--project-root', f.root);
  assert.is(missing.status, 1);
  assert.match(missing.stderr, /issue-view: issue #99 of octo\/app does not exist \[not_found\]/);
  const missingPr = await cli('pr-view', '99', '--project-root', f.root);
  assert.is(missingPr.status, 1);
  assert.match(missingPr.stderr, /pull request #99 of octo\/app does not exist \[not_found\]/);
  for (const args of [['issue-view', 'x'], ['pr-view', '0'], ['issue-view'], ['pr-list', '3'], ['issue-list', '--state', 'open']]) {
    const bad = await cli(...args, '--project-root', f.root);
    assert.is(bad.status, 2, `${args.join(' ')}: ${bad.stderr}`);
  }
  const outside = join(f.sb.dir, 'nowhere');
  mkdirSync(outside, { recursive: true });
  const notProject = await cli('issue-list', '--project-root', outside);
  assert.is(notProject.status, 2);
  assert.match(notProject.stderr, /is not inside a git project/);
  const other = join(f.sb.dir, 'work', 'other');
  mkdirSync(other, { recursive: true });
  f.git(other, 'init', '-q', '-b', 'main');
  const unknown = await cli('pr-list', '--project-root', other);
  assert.is(unknown.status, 1);
  assert.match(unknown.stderr, /is not a project on this runner's watch list \[unknown_project\]/);
});

test.run();
