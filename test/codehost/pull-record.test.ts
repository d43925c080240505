// A record per pull request against the real server (issue #40 part 3; docs/orchestrator.md, "A record
// per pull request"): a paired protocol client reports a pull request of svc's agents, the sessions and
// the run that made it with their LLM requests; the pull request is approved three ways — through the
// commands API with a token (api), with a browser session (page) and with an action link (link) —, its
// checks change, and it merges. GET /api/projects/:projectId/pulls/:number/record then holds the issue,
// the sessions and the run with their cost (the same sums as GET /api/cost by pull request), each
// approval with the checks at that moment and the merge with the checks then, and each step's audit
// record, verified against the whole chain recomputed from the audit rows (GET /api/audit) with
// functions/audit's own hash. Another project's pull request and an unknown number are 404; a viewer of
// another project gets 404.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GENESIS, recordHash } from '../../functions/audit/audit.ts';
import type { AuditRecord } from '../../functions/audit/audit.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { meta, send, tok, transcriptReq, uid } from '../helpers/usage-events.ts';
import type { Ev } from '../helpers/usage-events.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { act, signIn, tokenOf } from '../act/_harness.ts';
import type { Session } from '../act/_harness.ts';
import { KEY, makeProject, waitFor } from '../triggers/_harness.ts';

let server: RunningServer;
let ws: Client;
let projectA = '';
let projectB = '';
const u: Record<'operator' | 'approver' | 'viewerA' | 'viewerB', TestUser> = {} as never;
let page: Session;
let linkSession: Session;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
const BRANCH = 'svc/w1/issue-7';
const PR_URL = 'https://github.com/acme/app/pull/5';
const SHA1 = 'c'.repeat(40);
const SHA2 = 'd'.repeat(40);
const runId = `run-${uid()}`;
const sessions = { a: `sa-${uid()}`, b: `sb-${uid()}`, run: `sr-${uid()}`, other: `so-${uid()}` };

const now = () => new Date().toISOString();
const pr = (kind: string, id: string, data: Record<string, unknown>, project = projectA): Ev => ({ id, source: `project:${project}`, kind, ts: now(), payload: { project, slot: 'w1', issue: 7, data } });
const checks = (project: string, number: number, seq: number, state: string, sha: string) =>
  pr('pr.checks_changed', `gh.${project}.${number}.1.checks.${seq}`, { pr: { number, url: PR_URL }, state, summary: `3 ${state}`, sha }, project);

/** Send a project command as `who` (a token, or a browser session) and answer it as the runner. */
async function approveThrough(who: { token: string } | Session): Promise<number> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if ('token' in who) headers.authorization = `Bearer ${who.token}`;
  else Object.assign(headers, { cookie: who.cookie, 'x-csrf-token': who.csrf });
  const res = fetch(`${server.url}/api/projects/${projectA}/commands`, { method: 'POST', headers, body: JSON.stringify({ name: 'pr.approve', args: { number: 5 } }) });
  const cmd = await ws.next('command');
  assert.equal([cmd.name, cmd.args], ['pr.approve', { projectId: projectA, number: 5 }]);
  ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { approved: true } });
  return (await res).status;
}

/** Every audit record, oldest first, through the audit API. */
async function auditLog(): Promise<Record<string, any>[]> {
  const all: Record<string, any>[] = [];
  for (let cursor: string | null = ''; cursor !== null; ) {
    const page = await call(`/api/audit?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    assert.is(page.status, 200);
    all.push(...page.body.records);
    cursor = page.body.nextCursor;
  }
  return all.reverse();
}

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  const r = await pairRunner(server.api, server.url, 'record-box');
  projectA = await makeProject(server, r.runnerId);
  projectB = await makeProject(server, r.runnerId);
  for (const [key, project, role] of [['operator', projectA, 'operator'], ['approver', projectA, 'admin'], ['viewerA', projectA, 'viewer'], ['viewerB', projectB, 'viewer']] as const) {
    u[key] = await makeUser(server, key);
    assert.is((await call(`/api/projects/${project}/members/${u[key].id}`, { method: 'PUT', json: { role } })).status, 200);
  }
  page = await signIn(server, u.operator.email, u.operator.password);
  linkSession = await signIn(server, u.approver.email, u.approver.password);
  ws = connect(server.url, r.token);
  await ws.next('welcome');
  // The pull request, its passing checks, and one of project B with a number A does not have.
  await send(ws, [
    pr('pr.opened', `gh.${projectA}.5.1.opened`, { pr: { number: 5, url: PR_URL }, title: 'Fix the login', branch: BRANCH }),
    checks(projectA, 5, 1, 'passed', SHA1),
    pr('pr.opened', `gh.${projectB}.9.1.opened`, { pr: { number: 9, url: 'https://github.com/acme/b/pull/9' }, title: 'B', branch: 'svc/w2/issue-1' }, projectB),
  ]);
  // A skill run on the branch, two sessions on it, one session of the run (no branch of its own), one elsewhere.
  await send(ws, [
    { id: `run.${runId}.queued`, source: `project:${projectA}`, kind: 'skill_run.state', ts: now(), payload: { runId, project: projectA, skill: 'review', args: [], output: 'pull_request', profile: 'cc', runtime: 'claude', model: 'm', timeoutSec: 600, createdAt: now(), branch: BRANCH, state: 'queued', at: now() } },
  ]);
  await send(ws, [
    meta('claude', sessions.a, { project: projectA, slot: 'w1', issue: '7', branch: BRANCH }),
    transcriptReq('claude', sessions.a, 'claude-sonnet-4-5', `req_${uid()}`, tok(12_000, 3_000, 1_000, 0, 50_000)),
    transcriptReq('claude', sessions.a, 'claude-sonnet-4-5', `req_${uid()}`, tok(8_000, 2_000)),
    meta('claude', sessions.b, { project: projectA, slot: 'w1', issue: '7', branch: BRANCH }),
    transcriptReq('claude', sessions.b, 'claude-opus-4-1', `req_${uid()}`, tok(20_000, 4_000)),
    meta('claude', sessions.run, { project: projectA, run: runId }),
    transcriptReq('claude', sessions.run, 'claude-sonnet-4-5', `req_${uid()}`, tok(5_000, 1_000)),
    meta('claude', sessions.other, { project: projectA, slot: 'w2', issue: '8', branch: 'svc/w2/issue-8' }),
    transcriptReq('claude', sessions.other, 'claude-sonnet-4-5', `req_${uid()}`, tok(99_000, 9_000)),
  ]);
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

test('approved through the API, the page and a link; the checks change; it merges: the record holds it all, each step with the checks at that moment', async () => {
  assert.is(await approveThrough({ token: u.operator.token }), 200);
  assert.is(await approveThrough(page), 200);
  const n = await waitFor('the pr.ready notification', async () =>
    ((await call('/api/notifications', { token: u.approver.token })).body.notifications as { kind: string; data: any; actions: { url: string }[] }[]).find((x) => x.kind === 'pr.ready' && x.data.pr?.number === 5));
  const used = act(server, 'POST', tokenOf(n.actions[0].url), linkSession);
  const cmd = await ws.next('command');
  ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { approved: true } });
  assert.is((await used).status, 200);
  // The checks run again on a new commit, then the pull request merges.
  await send(ws, [checks(projectA, 5, 2, 'restarted', SHA2), checks(projectA, 5, 3, 'passed', SHA2)]);
  await send(ws, [pr('pr.merged', `gh.${projectA}.5.1.merged`, { pr: { number: 5, url: PR_URL }, title: 'Fix the login' })]);

  const rec = await call(`/api/projects/${projectA}/pulls/5/record`, { token: u.viewerA.token });
  assert.is(rec.status, 200, JSON.stringify(rec.body));
  const b = rec.body;
  assert.equal([b.number, b.state, b.branch, b.url, b.title, b.issue.number], [5, 'merged', BRANCH, PR_URL, 'Fix the login', 7]);
  assert.equal(b.sessions.map((s: { sessionId: string }) => s.sessionId).sort(), [sessions.a, sessions.b, sessions.run].sort(), 'the sessions on the branch and the run’s, not the other');
  assert.equal(b.runs.map((r: { id: string }) => r.id), [runId]);
  assert.is(b.runs[0].requests, 1);
  const sa = b.sessions.find((s: { sessionId: string }) => s.sessionId === sessions.a);
  assert.equal([sa.requests, sa.inputTokens, sa.outputTokens, sa.cacheWrite5mTokens, sa.cacheReadTokens], [2, 20_000, 5_000, 1_000, 50_000]);
  assert.is(b.totals.requests, 4);
  assert.is(b.totals.inputTokens, 45_000);
  const sessionSum = b.sessions.reduce((t: number, s: { costUsd: number }) => t + s.costUsd, 0);
  assert.ok(b.totals.costUsd > 0 && Math.abs(b.totals.costUsd - sessionSum) < 1e-9, `totals ${b.totals.costUsd} = the sessions' ${sessionSum}`);
  // The same attribution as the cost report by pull request.
  const byPr = await call(`/api/cost?groupBy=pull_request&projectId=${projectA}`, { token: u.viewerA.token });
  const group = byPr.body.groups.find((g: { key: string }) => g.key === '5');
  assert.equal([group.requests, group.inputTokens], [b.totals.requests, b.totals.inputTokens]);
  assert.ok(Math.abs(group.costUsd - b.totals.costUsd) < 1e-9);

  assert.equal(b.approvals.map((a: { via: string }) => a.via), ['api', 'page', 'link']);
  assert.equal(b.approvals.map((a: { userId: string }) => a.userId), [u.operator.id, u.operator.id, u.approver.id]);
  assert.equal(b.approvals.map((a: { userName: string }) => a.userName), ['operator', 'operator', 'approver']);
  for (const a of b.approvals) assert.equal([a.checks.state, a.checks.sha, a.checks.summary], ['passed', SHA1, '3 passed'], 'the checks at the approval');
  assert.equal([b.merge.step, b.merge.via, b.merge.actorLabel, b.merge.userId], ['merged', 'runner', 'codehost:runner', null]);
  assert.equal([b.merge.checks.state, b.merge.checks.sha, b.merge.headSha], ['passed', SHA2, SHA2], 'the checks at the merge: the new commit');
  assert.equal([b.checks.state, b.checks.sha], ['passed', SHA2]);
});

test("each step's audit record is in the chain recomputed from the audit rows, at its seq", async () => {
  const b = (await call(`/api/projects/${projectA}/pulls/5/record`)).body;
  const log = await auditLog();
  let prev = GENESIS;
  log.forEach((r, i) => {
    assert.is(r.seq, i + 1, 'gapless');
    assert.is(r.prevHash, prev, `record ${r.seq} links to the one before`);
    assert.is(recordHash(prev, r as AuditRecord), r.hash, `record ${r.seq} hashes to its hash`);
    prev = r.hash;
  });
  const steps = [...b.approvals, b.merge];
  assert.is(steps.length, 4);
  for (const s of steps) {
    const row = log[s.audit.seq - 1];
    assert.equal(s.audit, row, `step ${s.step} via ${s.via}: the chain's record ${s.audit.seq}`);
    assert.is(recordHash(s.audit.prevHash, s.audit), s.audit.hash, 'the step verifies on its own too');
    assert.is(s.audit.targetId, projectA);
    assert.is((s.audit.diff as { number: number }).number, 5);
    assert.is((s.audit.diff as { via: string }).via, s.via);
  }
  assert.equal(steps.map((s) => s.audit.action), ['pr.approve', 'pr.approve', 'pr.approve', 'pr.merged']);
  assert.ok(b.auditHead.seq >= b.merge.audit.seq, `the head ${JSON.stringify(b.auditHead)} is at or after the merge ${b.merge.audit.seq}`);
  assert.is(log[b.auditHead.seq - 1].hash, b.auditHead.hash, 'the head read with the record is in the chain');
  // A forged step does not verify: another via under the same hash.
  assert.is.not(recordHash(b.approvals[0].audit.prevHash, { ...b.approvals[0].audit, diff: { ...b.approvals[0].audit.diff, via: 'page' } }), b.approvals[0].audit.hash);
});

test("another project's pull request, an unknown number, a viewer of another project: 404; a bad number: 400", async () => {
  assert.is((await call(`/api/projects/${projectB}/pulls/9/record`, { token: u.viewerB.token })).status, 200, "B's own, to its viewer");
  assert.is((await call(`/api/projects/${projectA}/pulls/9/record`, { token: u.viewerA.token })).status, 404, "B's number in A");
  assert.is((await call(`/api/projects/${projectB}/pulls/5/record`, { token: u.viewerB.token })).status, 404, "A's number in B");
  assert.is((await call(`/api/projects/${projectA}/pulls/6/record`)).status, 404, 'a number never seen');
  const refused = await call(`/api/projects/${projectA}/pulls/5/record`, { token: u.viewerB.token });
  assert.is(refused.status, 404, 'a viewer of another project');
  assert.not.ok(JSON.stringify(refused.body).includes('Fix the login'));
  for (const bad of ['0', '-1', 'x', '2147483648']) assert.is((await call(`/api/projects/${projectA}/pulls/${bad}/record`)).status, 400, bad);
  const b = (await call(`/api/projects/${projectB}/pulls/9/record`)).body;
  assert.equal([b.approvals, b.merge, b.sessions, b.issue.number], [[], null, [], 1]);
});

test.run();
