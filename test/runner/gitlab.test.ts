// The GitLab code host on the runner (issue 42; docs/gitlab.md): the daemon's collectors and the
// code-host commands' adapter against the fake GitLab (test/fakes/gitlab.ts, REST v4 shapes typed by
// @gitbeaker/core) — nested groups and URL-encoded project paths under a path prefix, pagination by
// Link and by x-next-page alone, 429 with Retry-After, a token without write scope, a retried
// pipeline's checks changing once per real change, an MR merged in GitLab's UI, approvals refused by
// the project's rules, and a GitLab token never sent to GitHub.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CodeHost } from '../../runner/codehost/poller.ts';
import { validateConfig } from '../../runner/config.ts';
import type { ProjectEntry } from '../../runner/config.ts';
import type { NewEvent } from '../../runner/spool.ts';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';

const PATH = 'acme/platform/svc-app';
let gl: GitLabFake;
let dir: string;
let events: NewEvent[];

test.before.each(async () => {
  gl = await gitlabFake({ prefix: '/gitlab' });
  gl.project(PATH);
  dir = mkdtempSync(join(tmpdir(), 'svc-gitlab-'));
  events = [];
});
test.after.each(async () => {
  await gl.close();
  rmSync(dir, { recursive: true, force: true });
});

function host(env: Record<string, string> = { GITLAB_TOKEN: gl.token }) {
  const config = validateConfig('runner.json', { profiles: [], codehost: { apiUrl: 'http://127.0.0.1:9/never' } });
  const projects: ProjectEntry[] = [{ id: 'p1', root: dir, host: { kind: 'gitlab', baseUrl: gl.url, path: PATH } }];
  return new CodeHost({ config, env: { ...env, XDG_STATE_HOME: join(dir, 'state'), HOME: dir, SVC_CODEHOST_BACKOFF_MS: '1000' }, projects: () => projects, append: (e) => events.push(...e) });
}
const prEvents = () => events.filter((e) => e.kind.startsWith('pr.')).map((e) => `${e.kind}:${(e.payload as any).data.pr.number}${(e.payload as any).data.state ? `:${(e.payload as any).data.state}` : ''}`);

test('the queue: open issues of a nested-group project, its path URL-encoded as one segment, every page followed by Link', async () => {
  for (let i = 0; i < 130; i++) gl.addIssue(PATH, { title: `Issue ${i}`, labels: i % 2 ? ['svc'] : [] });
  const h = host();
  const [r] = await h.pollQueue('p1', true);
  assert.is(r.count, 130);
  assert.equal(r.issues[1], { number: 2, title: 'Issue 1', url: `${gl.url}/${PATH}/-/issues/2`, labels: ['svc'] });
  const lists = gl.requests.filter((x) => x.path.startsWith('/api/v4/projects/acme%2Fplatform%2Fsvc-app/issues'));
  assert.is(lists.length, 2, 'two pages of 100');
  assert.ok(lists.every((x) => x.token === gl.token));
  assert.equal(gl.unexpected, []);
  const q = events.find((e) => e.kind === 'codehost.queue')!;
  assert.is((q.payload as any).repo, PATH);
});

test('pagination by x-next-page alone (no Link header) reaches every page', async () => {
  gl.paging = 'headers';
  for (let i = 0; i < 250; i++) gl.addIssue(PATH, { title: `I${i}` });
  const [r] = await host().pollQueue('p1', true);
  assert.is(r.count, 250);
  assert.is(gl.requests.filter((x) => x.path.includes('/issues?')).length, 3);
  assert.ok(gl.requests.some((x) => /page=3/.test(x.path)));
});

test('429 with Retry-After: the command fails rate_limited and nothing more is sent until then; timed polls skip', async () => {
  gl.limit(1, 120);
  const h = host();
  const err = await h.pollQueue('p1', true).then(() => null, (e) => e);
  assert.is(err?.code, 'rate_limited');
  const before = gl.requests.length;
  const again = await h.pollQueue('p1', true).then(() => null, (e) => e);
  assert.is(again?.code, 'rate_limited');
  assert.is(gl.requests.length, before, 'no request past the Retry-After');
  assert.equal(await h.pollQueue(), [], 'a timed poll leaves the waiting host out');
});

test('merge requests: opened, checks from the newest pipeline, a retried job changes the checks once, merged in the UI → pr.merged', async () => {
  const h = host();
  await h.pollPulls('p1', true); // baseline
  const mr = gl.addMr(PATH, { title: 'Fix the parser', source: 'svc/run-r1', sha: 'b'.repeat(40) });
  const pl = gl.pipeline(PATH, mr.sha, { lint: 'success', test: 'running' });
  await h.pollPulls('p1', true);
  assert.equal(prEvents(), [`pr.opened:${mr.iid}`]);
  pl.jobs[1].status = 'failed';
  await h.pollPulls('p1', true);
  await h.pollPulls('p1', true);
  assert.equal(prEvents().slice(1), [`pr.checks_changed:${mr.iid}:failed`], 'failed once, not once per poll');
  gl.retry(pl, 'test', 'running');
  await h.pollPulls('p1', true);
  gl.retry(pl, 'test', 'success');
  await h.pollPulls('p1', true);
  await h.pollPulls('p1', true);
  assert.equal(prEvents().slice(2), [`pr.checks_changed:${mr.iid}:restarted`, `pr.checks_changed:${mr.iid}:passed`], 'the retry restarts, then passes: one event per real change');
  assert.ok(gl.requests.every((x) => !x.path.includes('include_retried=true')), 'retried attempts are never asked for');
  gl.mergeInUi(PATH, mr.iid);
  await h.pollPulls('p1', true);
  await h.pollPulls('p1', true);
  assert.equal(prEvents().slice(4), [`pr.merged:${mr.iid}`]);
  assert.equal(gl.unexpected, []);
});

test('inspect, approve and merge through the API; GitLab refusing a merge (approval rules) says why', async () => {
  const h = host();
  const a = h.adapter({ id: 'p1', root: dir, host: { kind: 'gitlab', baseUrl: gl.url, path: PATH } });
  const mr = gl.addMr(PATH, { title: 'Change', source: 'feature', sha: 'c'.repeat(40) });
  mr.requiredApprovals = 2;
  mr.diffs = [{ old_path: 'a.ts', new_path: 'a.ts', new_file: false, renamed_file: false, deleted_file: false, diff: '@@ -1 +1,2 @@\n-old\n+new\n+more\n', a_mode: '100644', b_mode: '100644', generated_file: false }];
  gl.pipeline(PATH, mr.sha, { test: 'success' });
  const i = (await a.inspect(PATH, mr.iid))!;
  assert.equal([i.state, i.branch, i.base, i.additions, i.deletions, i.files[0].status, i.checks[0].state, i.mergeable], ['open', 'feature', 'main', 2, 1, 'modified', 'passed', false]);
  assert.equal(await a.approve!(PATH, mr.iid), { approved: false });
  const refused = await a.merge!(PATH, mr.iid).then(() => null, (e) => e as Error);
  assert.match(refused?.message ?? '', /approvals missing/);
  mr.requiredApprovals = 1;
  assert.equal(await a.merge!(PATH, mr.iid), { merged: true, sha: 'e'.repeat(40) });
  assert.is(await a.inspect(PATH, 999), null);
});

test('a token without write scope: reading works, creating an issue is refused with GitLab\'s reason', async () => {
  const ro = 'glpat-read-only-0000000000';
  gl.readOnly.add(ro);
  const h = host({ GITLAB_TOKEN: ro });
  gl.addIssue(PATH, { title: 'one' });
  const [r] = await h.pollQueue('p1', true);
  assert.is(r.count, 1);
  const a = h.adapter({ id: 'p1', root: dir, host: { kind: 'gitlab', baseUrl: gl.url, path: PATH } });
  const err = await a.createIssue(PATH, { title: 't', body: 'b', labels: ['svc', 'bug'] }).then(() => null, (e) => e);
  assert.is(err?.status, 403);
  assert.match(err.message, /insufficient_scope/);
  assert.not.ok(err.message.includes(ro));
});

test("the server's token for the project path wins over GITLAB_TOKEN and is never a GitHub repository's token", async () => {
  const h = host({ GITLAB_TOKEN: 'glpat-wrong-000000000' });
  const exp = new Date(Date.now() + 3_600_000).toISOString();
  h.setServerTokens([{ kind: 'gitlab', repo: PATH, token: gl.token, expiresAt: exp }], true);
  const [r] = await h.pollQueue('p1', true);
  assert.is(r.count, 0);
  assert.ok(gl.requests.every((x) => x.token === gl.token));
  assert.is(h.tokens.serverToken(PATH), null, 'the GitHub side does not hold the GitLab token');
  const created = await h.adapter({ id: 'p1', root: dir, host: { kind: 'gitlab', baseUrl: gl.url, path: PATH } }).createIssue(PATH, { title: 'Queue me', body: 'x', labels: ['svc'] });
  assert.equal(created, { number: 1, url: `${gl.url}/${PATH}/-/issues/1` });
  assert.equal(gl.requests.at(-1)!.body, { title: 'Queue me', description: 'x', labels: 'svc' });
});

test.run();
