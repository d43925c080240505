// GitLab hooks applied to the server's state at once (issue 42; functions/codehost/gitlab-apply.ts;
// docs/gitlab.md "Webhook"), with the real server, the real runner bundle and the fake GitLab. First with
// no runner daemon running, so nothing but the hook can change the state: an Issue Hook puts the issue in
// the queue before its 202, a Note Hook renames it, a close closes it; a Merge Request Hook opens the pull
// request (pr.opened), a Pipeline Hook with a retried job makes pr.checks_changed `passed` once, a hook
// older than the state changes nothing. Then with the daemon polling: a new merge request, its pipeline
// and its merge, each seen by a hook and by the poll, make one event each.
// Bodies: test/fakes/gitlab-hooks.ts (GitLab's documented shapes, typed against @gitbeaker/core).
// needs: git
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';
import { issueHook, issueNoteHook, mrHook, pipelineHook } from '../fakes/gitlab-hooks.ts';
import { killDaemons, startDaemon, waitUntil } from '../runner/_harness.ts';
import { gitlabProject } from './_gitlab.ts';
import type { GitlabProject } from './_gitlab.ts';

const PATH = 'acme/hooks/app';
const SHA = 'c'.repeat(40);
let gl: GitLabFake;
let g: GitlabProject;
let uuid = 0;

test.before(async () => {
  gl = await gitlabFake();
  gl.project(PATH);
  g = await gitlabProject(gl, PATH, { keyByte: 8 });
});
test.after(async () => {
  await killDaemons();
  await g?.cleanup();
  await gl?.close();
});

const post = async (event: string, body: unknown) => {
  const res = await fetch(g.codehost.webhookUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gitlab-token': g.codehost.webhookSecret, 'x-gitlab-event': event, 'x-gitlab-event-uuid': `hook-${++uuid}` },
    body: JSON.stringify(body),
  });
  assert.is(res.status, 202, await res.clone().text());
};
const queue = async () => (await (await g.server.api(`/api/projects/${g.projectId}/queue`)).json()).issues as { number: number; title: string; state: string; labels: string[] }[];
/** The pr.* events of the project for pull request `n`, as the event list has them. */
async function prEvents(n: number): Promise<string[]> {
  const body = await (await g.server.api('/api/events?limit=500&type=pr.opened&type=pr.checks_changed&type=pr.merged&type=pr.closed')).json();
  return (body.events as { type: string; project: { id: string } | null; data: { pr?: { number: number }; state?: string } }[])
    .filter((e) => e.project?.id === g.projectId && e.data.pr?.number === n)
    .map((e) => (e.type === 'pr.checks_changed' ? `${e.type}:${e.data.state}` : e.type));
}
const T = (minute: number) => new Date(Date.UTC(2026, 10, 29, 10, minute)).toISOString().replace('.000', '');

test('with no runner running: issue, note, merge request and pipeline hooks change the state before the answer, once', async () => {
  const p = gl.project(PATH);
  const issue = gl.addIssue(PATH, { title: 'Hooked', labels: ['svc'] });
  await post('Issue Hook', issueHook(p, issue, gl.url, 'open', T(1)));
  assert.equal((await queue()).map((i) => [i.number, i.title, i.state, i.labels]), [[issue.iid, 'Hooked', 'open', ['svc']]], 'in the queue when the hook was answered');
  issue.title = 'Hooked, renamed';
  await post('Note Hook', issueNoteHook(p, issue, gl.url, 'a comment', T(2)));
  assert.is((await queue())[0].title, 'Hooked, renamed');
  const stale = { ...issue, title: 'Older than the state' };
  await post('Issue Hook', issueHook(p, stale, gl.url, 'update', T(0)));
  assert.is((await queue())[0].title, 'Hooked, renamed', 'a hook older than the row changes nothing');

  const mr = gl.addMr(PATH, { title: 'Hooked MR', source: `svc/a/issue-${issue.iid}`, sha: SHA });
  await post('Merge Request Hook', mrHook(p, mr, gl.url, 'open', T(3)));
  await waitUntil(async () => (await prEvents(mr.iid)).length > 0, 20_000, 'pr.opened');
  // A pipeline running, then its job failed and was retried: the retry passed.
  await post('Pipeline Hook', pipelineHook(p, gl.url, { id: 50, sha: SHA, status: 'running', mr, builds: [{ id: 1, name: 'test', status: 'running' }] }, '2026-11-29 10:04:00 UTC'));
  await post('Pipeline Hook', pipelineHook(p, gl.url, { id: 50, sha: SHA, status: 'success', mr, builds: [{ id: 1, name: 'test', status: 'failed' }, { id: 2, name: 'test', status: 'success' }, { id: 3, name: 'lint', status: 'failed', allowFailure: true }] }, '2026-11-29 10:05:00 UTC'));
  await waitUntil(async () => (await prEvents(mr.iid)).length > 1, 20_000, 'pr.checks_changed');
  // The same pipeline hook again (GitLab retries a hook it thinks failed, with a new UUID): no change.
  await post('Pipeline Hook', pipelineHook(p, gl.url, { id: 50, sha: SHA, status: 'success', mr, builds: [{ id: 2, name: 'test', status: 'success' }] }, '2026-11-29 10:05:00 UTC'));
  // A close older than the merge request's state: nothing.
  await post('Merge Request Hook', mrHook(p, { ...mr, state: 'closed' }, gl.url, 'close', T(2)));
  assert.equal(await prEvents(mr.iid), ['pr.opened', 'pr.checks_changed:passed']);

  await post('Issue Hook', issueHook(p, { ...issue, state: 'closed' }, gl.url, 'close', T(6)));
  assert.is((await queue())[0].state, 'closed');
});

test('with the runner polling: a merge request, its pipeline and its merge seen by the hooks and by the poll make one event each', async () => {
  const p = gl.project(PATH);
  const daemon = startDaemon(g.sb, { SVC_PR_POLL_MS: '200', SVC_QUEUE_POLL_MS: '200' });
  // The runner's first poll records what is open without events: wait for it, so what follows is a change to both.
  const listed = () => gl.requests.filter((r) => r.method === 'GET' && r.path.includes('/merge_requests?state=opened') && r.status === 200).length;
  await waitUntil(() => listed() > 0, 30_000, () => `the runner's first poll\n${daemon.output().slice(-1500)}`);
  const sha = 'd'.repeat(40);
  const mr = gl.addMr(PATH, { title: 'Both see it', source: 'svc/b/issue-9', sha });
  await post('Merge Request Hook', mrHook(p, mr, gl.url, 'open', T(30)));
  gl.pipeline(PATH, sha, { test: 'success' });
  await post('Pipeline Hook', pipelineHook(p, gl.url, { id: 60, sha, status: 'success', mr, builds: [{ id: 9, name: 'test', status: 'success' }] }, '2026-11-29 10:31:00 UTC'));
  gl.mergeInUi(PATH, mr.iid);
  await post('Merge Request Hook', mrHook(p, mr, gl.url, 'merge', T(32)));
  // A merge request only the poll can see: once its pr.opened is stored, a poll after all the above is in.
  const sentinel = gl.addMr(PATH, { title: 'Poll only', source: 'svc/c/issue-10', sha: 'e'.repeat(40) });
  await waitUntil(async () => (await prEvents(sentinel.iid)).includes('pr.opened'), 30_000, () => `the poll's pr.opened\n${daemon.output().slice(-1500)}`);
  const seen = listed();
  await waitUntil(() => listed() > seen + 1, 30_000, 'two more polls');
  assert.equal(await prEvents(mr.iid), ['pr.opened', 'pr.checks_changed:passed', 'pr.merged']);
  assert.equal(gl.unexpected, []);
});

test.run();
