// The code host (docs/runner.md, "Code host"; issue 15): the real runner bundle polling the fake GitHub
// (test/fakes/github.ts) for a project's queue and pull requests — pr.* events exactly once, also across
// a restart; conditional requests; rate limits; failure backoff without an event storm; the status;
// issue.create, issues.refresh, collector.poll and pr.inspect (3,000 files).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import { assertMatchesGitHub } from '../fakes/openapi-check.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { fleet } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { runCli, startDaemon, waitUntil } from './_harness.ts';

const REPO = 'octo/app';
const FAST = { SVC_PR_POLL_MS: '150', SVC_QUEUE_POLL_MS: '150', SVC_CODEHOST_BACKOFF_MS: '1000' };

let f: Fleet;
let gh: GitHubFake;
test.before.each(async () => {
  f = await fleet('codehost');
  gh = await githubFake();
  gh.repo(REPO);
  f.fake.options.projects = [{ id: 'p1', root: f.root, repo: REPO } as { id: string; root: string }];
});
test.after.each(async () => {
  await f.cleanup();
  await gh.close();
});

const config = (extra: Record<string, unknown> = {}) => ({
  profiles: [{ id: 'cc', runtime: 'claude', env: { GH_TOKEN: gh.token }, args: [] }],
  codehost: { apiUrl: gh.url },
  ...extra,
});

/** pr.* events received, one per id (a resend is the same event), as "type:number:state". */
const prEvents = () => {
  const seen = new Set<string>();
  return f.fake.received
    .filter((e) => e.kind.startsWith('pr.') && !seen.has(e.id) && seen.add(e.id))
    .map((e) => `${e.kind}:${(e.payload as any).data.pr.number}${(e.payload as any).data.state ? `:${(e.payload as any).data.state}` : ''}`);
};
const pullPolls = () => gh.requests.filter((r) => r.path.startsWith(`/repos/${REPO}/pulls?state=open`)).length;
const afterPolls = async (n: number) => {
  const at = pullPolls();
  await waitUntil(() => pullPolls() >= at + n, 30_000, `${n} more pull request polls`);
};

test('pr.* events: the first poll records silently; opened, checks passed/failed/restarted, merged and closed each once, with the catalogue payload; nothing twice across a restart', async () => {
  const old = gh.addPull(REPO, { title: 'Old work', head: 'old' });
  await f.start(config(), FAST);
  await afterPolls(2);
  assert.equal(prEvents(), [], 'no events for pull requests open before the first poll');

  const a = gh.addPull(REPO, { title: 'Fix the parser', head: 'svc/fix-parser' });
  await waitUntil(() => prEvents().includes(`pr.opened:${a.number}`), 30_000, 'pr.opened');
  const opened = f.fake.received.find((e) => e.kind === 'pr.opened')!;
  assert.equal(opened.source, 'project:p1');
  assert.equal((opened.payload as any).project, 'p1');
  assert.equal((opened.payload as any).data, { pr: { number: a.number, url: `https://github.example/${REPO}/pull/${a.number}` }, title: 'Fix the parser', branch: 'svc/fix-parser' });

  gh.repo(REPO).checkRuns[a.sha] = [{ name: 'test', status: 'in_progress', conclusion: null }];
  await afterPolls(2);
  assert.equal(prEvents(), [`pr.opened:${a.number}`], 'pending from nothing is not a change worth an event');
  gh.repo(REPO).checkRuns[a.sha] = [{ name: 'test', status: 'completed', conclusion: 'failure' }];
  await waitUntil(() => prEvents().length === 2, 30_000, 'checks failed');
  const failed = f.fake.received.find((e) => e.kind === 'pr.checks_changed')!;
  assert.match((failed.payload as any).data.summary, /^1 checks: 0 passed, 1 failed, 0 pending \(failed: test\)$/);
  gh.repo(REPO).checkRuns[a.sha] = [{ name: 'test', status: 'queued', conclusion: null }];
  await waitUntil(() => prEvents().length === 3, 30_000, 'checks restarted');
  gh.repo(REPO).statuses[a.sha] = [{ context: 'ci/lint', state: 'success' }];
  gh.repo(REPO).checkRuns[a.sha] = [{ name: 'test', status: 'completed', conclusion: 'success' }];
  await waitUntil(() => prEvents().length === 4, 30_000, 'checks passed');
  await afterPolls(3);
  assert.equal(prEvents(), [`pr.opened:${a.number}`, `pr.checks_changed:${a.number}:failed`, `pr.checks_changed:${a.number}:restarted`, `pr.checks_changed:${a.number}:passed`]);

  // Restart: what was seen is on disk, so nothing is reported again; changes while down are reported once.
  await f.daemon!.kill();
  Object.assign(gh.repo(REPO).pulls.find((p) => p.number === a.number)!, { state: 'closed', merged: true });
  Object.assign(gh.repo(REPO).pulls.find((p) => p.number === old.number)!, { state: 'closed' });
  f.daemon = startDaemon(f.sb, { ...f.env, ...FAST });
  await waitUntil(() => prEvents().length === 6, 30_000, () => `merged and closed after the restart: ${prEvents()}`);
  await afterPolls(3);
  assert.equal(prEvents().slice(4).sort(), [`pr.closed:${old.number}`, `pr.merged:${a.number}`]);
  const merged = f.fake.received.find((e) => e.kind === 'pr.merged')!;
  assert.equal((merged.payload as any).data, { pr: { number: a.number, url: `https://github.example/${REPO}/pull/${a.number}` }, title: 'Fix the parser' });
  assert.is(prEvents().length, 6, 'no event twice');
});

test('conditional requests: an unchanged poll sends If-None-Match, gets 304 and spends no rate limit; the queue is reported once per change', async () => {
  gh.repo(REPO).issues.push({ number: 1, title: 'First task', body: '', labels: ['agent'], state: 'open' });
  gh.addPull(REPO, { title: 'A', head: 'a' });
  await f.start(config(), FAST);
  await afterPolls(3);
  const spent = gh.rate.limit - gh.rate.remaining;
  const before = gh.requests.length;
  await afterPolls(5);
  const later = gh.requests.slice(before);
  assert.ok(later.length >= 10, `${later.length} requests`);
  assert.ok(later.every((r) => r.status === 304 && r.conditional), JSON.stringify(later.filter((r) => r.status !== 304).slice(0, 3)));
  assert.is(gh.rate.limit - gh.rate.remaining, spent, 'no rate limit spent by unchanged polls');
  const queue = () => [...new Map(f.fake.received.filter((e) => e.kind === 'codehost.queue').map((e) => [e.id, e])).values()];
  assert.is(queue().length, 1);
  assert.equal((queue()[0].payload as any).issues, [{ number: 1, title: 'First task', url: `https://github.example/${REPO}/issues/1`, labels: ['agent'] }], 'pull requests are not queue items');
  gh.repo(REPO).issues.push({ number: 7, title: 'Second task', body: '', labels: [], state: 'open' });
  await waitUntil(() => queue().length === 2, 30_000, 'the queue change');
  assert.is((queue()[1].payload as any).count, 2);
});

test('rate limit: 403 with x-ratelimit-remaining 0 → no request until the reset, `status` says rate limited; polls resume after it', async () => {
  gh.addPull(REPO, { title: 'A', head: 'a' });
  await f.start(config(), FAST);
  await afterPolls(2);
  gh.rate.remaining = 0;
  // Long enough for `status` and two commands on a loaded machine; the fake opens a new window at it.
  const reset = (gh.rate.reset = Math.floor(Date.now() / 1000) + 12);
  await waitUntil(() => gh.requests.some((r) => r.status === 403), 30_000, 'a 403');
  const first = gh.requests.find((r) => r.status === 403)!;
  await waitUntil(async () => /codehost: rate limited: no requests until/.test((await runCli(f.sb, ['status'])).stdout), 30_000, 'status to say rate limited');
  const at = gh.requests.length;
  const describe = await f.conn!.command('runner.describe');
  assert.is(describe.data.codehost.state, 'rate_limited');
  const refresh = await f.conn!.command('issues.refresh', { projectId: 'p1' });
  assert.equal([refresh.ok, refresh.error?.code], [false, 'rate_limited'], 'a command is not sent past the limit either');
  await waitUntil(() => gh.requests.slice(at).some((r) => r.status === 200 || r.status === 304), 30_000, 'polls to resume after the reset');
  // Requests already in flight when the first 403 came may arrive just after it; none later before the reset.
  const during = gh.requests.filter((r) => r.at > first.at + 1000 && r.at < reset * 1000);
  assert.is(during.length, 0, `nothing sent while the limit is spent: ${JSON.stringify(during)}`);
  assert.ok(gh.requests.slice(at).every((r) => r.at >= reset * 1000), 'the first request after it came at the reset');
  await waitUntil(async () => /codehost: ok/.test((await runCli(f.sb, ['status'])).stdout), 30_000, 'status ok again');
  assert.equal(prEvents(), [], 'a rate limit is no change of any pull request');
});

test('secondary rate limit: 429 with retry-after is waited out', async () => {
  await f.start(config(), FAST);
  await afterPolls(1);
  gh.rate.secondary = 3;
  await waitUntil(() => gh.requests.some((r) => r.status === 429), 30_000, 'a 429');
  const first = gh.requests.find((r) => r.status === 429)!;
  const at = gh.requests.length;
  await waitUntil(() => Date.now() > first.at + 3000, 10_000);
  const within = gh.requests.filter((r) => r.at > first.at + 1000 && r.at < first.at + 2900);
  assert.is(within.length, 0, `nothing sent within the retry-after: ${JSON.stringify(within)}`);
  gh.rate.secondary = null;
  await waitUntil(() => gh.requests.slice(at).some((r) => r.status === 200 || r.status === 304), 30_000, 'polls to resume');
});

for (const mode of ['500', 'garbage', 'drop'] as const) {
  test(`code host failing (${mode}): polls back off (1 s, 2 s, 4 s …), no pr.* event, status says failing; recovery reports nothing that did not happen`, async () => {
    const a = gh.addPull(REPO, { title: 'A', head: 'a' });
    await f.start(config(), FAST);
    await afterPolls(2);
    gh.fail(1_000_000, mode);
    const at = gh.requests.length;
    const t0 = Date.now();
    await waitUntil(async () => /codehost: failing, backing off until/.test((await runCli(f.sb, ['status'])).stdout), 30_000, 'status to say failing');
    await waitUntil(() => Date.now() - t0 > 6000, 20_000);
    const failed = gh.requests.length - at;
    const elapsed = Date.now() - t0;
    // Backing off 1 s, 2 s, 4 s …: at most ⌈log2(elapsed/1 s + 1)⌉ + 1 retries in the time, each at most
    // two requests (the queue and pull request pollers may fire together). Unbounded, two pollers every
    // 150 ms would send about 13 per second.
    const bound = 2 * (Math.ceil(Math.log2(elapsed / 1000 + 1)) + 1) + 1;
    assert.ok(failed >= 2 && failed <= bound, `${failed} requests in ${elapsed} ms while failing (at most ${bound})`);
    gh.fail(0, mode);
    await waitUntil(async () => /codehost: ok/.test((await runCli(f.sb, ['status'])).stdout), 60_000, 'status ok again');
    await afterPolls(2);
    assert.equal(prEvents(), [], 'no pull request closed or opened because the host failed');
    gh.repo(REPO).pulls.find((p) => p.number === a.number)!.state = 'closed';
    await waitUntil(() => prEvents().length === 1, 30_000, 'the real close');
    assert.equal(prEvents(), [`pr.closed:${a.number}`]);
  });
}

test('issue.create {title, body, labels} → {number, url}; labels omitted when absent; issues.refresh and collector.poll poll now', async () => {
  // The pull request exists before the daemon starts: its timed first poll (1 s after start) and
  // collector.poll are both a first look at it, whichever comes first on a loaded machine (CI once ran
  // the timed poll between an addPull made here later and collector.poll, which then reported pr.opened).
  const pr = gh.addPull(REPO, { title: 'Pushed', head: 'pushed' });
  const conn = await f.start(config({ queue: { pollSeconds: 3600 }, fleet: { prPollSeconds: 3600 } }));
  const r = await conn.command('issue.create', { projectId: 'p1', title: 'Broken build', body: 'It fails.', labels: ['bug', 'agent'] });
  assert.is(r.ok, true, JSON.stringify(r));
  assert.equal(r.data, { number: 2, url: `https://github.example/${REPO}/issues/2` }, 'issues and pull requests share numbers, as on GitHub');
  const posts = gh.requests.filter((x) => x.method === 'POST');
  assert.equal(posts[0].body, { title: 'Broken build', body: 'It fails.', labels: ['bug', 'agent'] });
  const r2 = await conn.command('issue.create', { projectId: 'p1', title: 'No labels' });
  assert.equal(r2.data.number, 3);
  assert.equal(gh.requests.filter((x) => x.method === 'POST')[1].body, { title: 'No labels', body: '' }, 'no labels key');
  assert.is(gh.repo(REPO).issues.length, 2);

  const refresh = await conn.command('issues.refresh', { projectId: 'p1' });
  assert.equal([refresh.data.count, refresh.data.issues.map((i: any) => i.title)], [2, ['No labels', 'Broken build']]);
  const poll1 = await conn.command('collector.poll', {});
  assert.equal(poll1.data.projects, [{ projectId: 'p1', issues: 2, pullRequests: 1, events: [] }], 'the first poll is the baseline');
  gh.repo(REPO).pulls.find((p) => p.number === pr.number)!.state = 'closed';
  const poll2 = await conn.command('collector.poll', { projectId: 'p1' });
  assert.equal(poll2.data.projects[0].events, ['pr.closed']);
  await waitUntil(() => prEvents().includes(`pr.closed:${pr.number}`), 30_000, 'the event sent');

  const bad = await conn.command('issue.create', { projectId: 'p1', title: '' });
  assert.equal([bad.ok, bad.error.code], [false, 'invalid_args']);
  const unknown = await conn.command('issue.create', { projectId: 'nope', title: 'x' });
  assert.equal([unknown.ok, unknown.error.code], [false, 'unknown_project']);
});

test('issue.create with a token without write access → codehost_403 naming the reason, the token never shown', async () => {
  gh.readOnly.add('ghp_readonly_token_000000000000000000');
  const conn = await f.start({ profiles: [{ id: 'cc', runtime: 'claude', env: { GITHUB_TOKEN: 'ghp_readonly_token_000000000000000000' }, args: [] }], codehost: { apiUrl: gh.url } });
  const r = await conn.command('issue.create', { projectId: 'p1', title: 'x' });
  assert.equal([r.ok, r.error.code], [false, 'codehost_403']);
  assert.match(r.error.message, /Resource not accessible by personal access token/);
  assert.not.match(r.error.message + f.daemon!.output(), /ghp_readonly_token/);
});

test('token sources: none in profiles or the environment and `gh auth token` failing → no_token; then `gh auth token` (with --hostname for an Enterprise URL) is used', async () => {
  f.sb.fakeBin('gh', 'exit 1');
  const conn = await f.start({ profiles: [], codehost: { apiUrl: gh.url } });
  const r = await conn.command('issue.create', { projectId: 'p1', title: 'x' });
  assert.equal([r.ok, r.error.code], [false, 'no_token']);
  assert.match(r.error.message, /GH_TOKEN/);
  assert.is(gh.requests.length, 0);
  await f.daemon!.kill();
  f.sb.fakeBin('gh', `echo "$@" > '${f.sb.dir}/gh-args'; [ "$1 $2" = "auth token" ] && echo ${gh.token}`);
  f.daemon = startDaemon(f.sb, f.env);
  const conn2 = await f.fake.waitConns(f.fake.conns.length + 1);
  await conn2.next('hello');
  const r2 = await conn2.command('issue.create', { projectId: 'p1', title: 'from gh' });
  assert.is(r2.ok, true, JSON.stringify(r2));
  assert.is(gh.requests.at(-1)!.token, gh.token);
  assert.is(readFileSync(join(f.sb.dir, 'gh-args'), 'utf8').trim(), 'auth token --hostname 127.0.0.1', 'the API host is not api.github.com: gh is asked for that host');
  assert.is((await conn2.command('runner.describe')).data.codehost.tokenSource, 'gh');
});

test('pr.inspect: 3,000 files over 30 pages (Link headers) with additions/deletions, checks, reviews, mergeability', async () => {
  const files = Array.from({ length: 3000 }, (_, i) => ({ filename: `src/f${i}.ts`, status: 'modified', additions: i % 7, deletions: i % 3 }));
  const p = gh.addPull(REPO, { title: 'Huge', head: 'huge', files, reviews: [{ id: 1, user: { login: 'ana' }, state: 'APPROVED', submitted_at: '2026-11-23T10:00:00Z' }] });
  gh.repo(REPO).checkRuns[p.sha] = [{ name: 'build', status: 'completed', conclusion: 'success' }];
  const conn = await f.start(config({ queue: { pollSeconds: 3600 }, fleet: { prPollSeconds: 3600 } }));
  const r = await conn.command('pr.inspect', { projectId: 'p1', number: p.number });
  assert.is(r.ok, true, JSON.stringify(r).slice(0, 500));
  assert.equal([r.data.files.length, r.data.filesComplete, r.data.files[2999]], [3000, true, { path: 'src/f2999.ts', status: 'modified', additions: 2999 % 7, deletions: 2999 % 3 }]);
  assert.equal([r.data.additions, r.data.deletions], [files.reduce((n, x) => n + x.additions, 0), files.reduce((n, x) => n + x.deletions, 0)]);
  assert.is(gh.requests.filter((x) => x.path.startsWith(`/repos/${REPO}/pulls/${p.number}/files`)).length, 30);
  assert.equal([r.data.mergeable, r.data.mergeableState, r.data.state, r.data.branch], [true, 'clean', 'open', 'huge']);
  assert.equal(r.data.checks.state, 'passed');
  assert.equal(r.data.reviews, [{ user: 'ana', state: 'APPROVED', submittedAt: '2026-11-23T10:00:00Z' }]);
  const missing = await conn.command('pr.inspect', { projectId: 'p1', number: 999 });
  assert.equal([missing.ok, missing.error.code], [false, 'not_found']);
});

test('a project without a repo on the watch list is not polled; its commands answer no_repo', async () => {
  f.fake.options.projects = [{ id: 'p1', root: f.root }];
  const conn = await f.start(config(), FAST);
  const r = await conn.command('issues.refresh', { projectId: 'p1' });
  assert.equal([r.ok, r.error.code], [false, 'no_repo']);
  const t0 = Date.now();
  await waitUntil(() => Date.now() - t0 > 1000, 5000);
  assert.is(gh.requests.length, 0);
  assert.match((await runCli(f.sb, ['status'])).stdout, /codehost: (idle|unknown)/);
});

test("every request svc made to the fake GitHub and every answer it gave match GitHub's OpenAPI description", () => assertMatchesGitHub());

test.run();
