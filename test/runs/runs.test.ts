// Skill run records on the server (docs/skill-runs.md, "On the server"): a protocol client paired as a
// runner sends skill_run.* events through the real server's hub ingest; GET /api/runs and
// GET /api/runs/:runId serve the records, by project role, with at most 128 KiB of the patch.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { makeUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

let server: RunningServer;
let runner: { runnerId: string; token: string };
let other: { runnerId: string; token: string };
let ws: Client;
let p1: string;
let p2: string;
let seq = 0;

interface Answer {
  status: number;
  body: any;
}
async function call(path: string, token?: string): Promise<Answer> {
  const res = await server.api(path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const base = (runId: string, project: string, extra: Record<string, unknown> = {}) => ({
  runId,
  project,
  skill: 'review',
  args: ['--since', 'x; rm -rf /'],
  output: 'pull_request',
  profile: 'cc',
  runtime: 'claude',
  model: 'claude-opus-4-1',
  timeoutSec: 600,
  createdAt: '2026-11-23T10:00:00.000Z',
  branch: `svc/run-${runId}`,
  ...extra,
});
const stateEv = (runId: string, state: string, extra: Record<string, unknown> = {}, project = p1) => ({
  id: `run.${runId}.${state}`,
  source: `project:${project}`,
  kind: 'skill_run.state',
  ts: new Date().toISOString(),
  payload: { ...base(runId, project), state, at: new Date().toISOString(), ...extra },
});

/** Send one events frame as `client` and wait for its ack. */
async function send(events: unknown[], client = ws): Promise<void> {
  client.send({ type: 'events', events });
  const ack = await client.next('ack');
  assert.equal(ack.ids, (events as { id: string }[]).map((e) => e.id));
}

test.before(async () => {
  server = await startServer({ admin: true });
  runner = await pairRunner(server.api, server.url, 'runs-a');
  other = await pairRunner(server.api, server.url, 'runs-b');
  const mk = async (name: string, runnerId: string) => (await (await server.api('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId, rootPath: `/srv/${name}` } })).json()).id;
  p1 = await mk('runs-one', runner.runnerId);
  p2 = await mk('runs-two', runner.runnerId);
  ws = connect(server.url, runner.token);
  await ws.next('welcome');
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

test('a run from queued to succeeded: record, progress lines, report, result, patch; GET /api/runs lists it and GET /api/runs/:id shows it', async () => {
  const id = `r${++seq}-${randomBytes(4).toString('hex')}`;
  await send([stateEv(id, 'queued')]);
  let list = await call(`/api/runs?projectId=${p1}`);
  assert.is(list.status, 200);
  assert.equal(list.body.runs.map((r: any) => [r.id, r.state]), [[id, 'queued']]);
  await send([stateEv(id, 'starting'), stateEv(id, 'running', { startedAt: '2026-11-23T10:00:01.000Z' })]);
  await send([{ id: `run.${id}.p1`, source: `project:${p1}`, kind: 'skill_run.progress', ts: new Date().toISOString(), payload: { runId: id, project: p1, lines: [{ seq: 1, text: 'session started' }, { seq: 2, text: 'tool: Bash ls' }] } }]);
  const patch = 'diff --git a/x b/x\n+hello\n';
  await send([
    { id: `run.${id}.patch`, source: `project:${p1}`, kind: 'skill_run.patch', ts: new Date().toISOString(), payload: { runId: id, project: p1, bytes: patch.length, sha256: 'ab'.repeat(32), text: patch, truncated: false } },
    stateEv(id, 'succeeded', {
      startedAt: '2026-11-23T10:00:01.000Z',
      endedAt: '2026-11-23T10:00:09.000Z',
      result: {
        report: 'All good.',
        reportTruncated: false,
        reportBytes: 9,
        exitCode: 0,
        durationMs: 8000,
        sessionId: 'sess-1',
        costUsd: 0.0123,
        usage: { input_tokens: 10, output_tokens: 5 },
        turns: 3,
        pullRequest: { branch: `svc/run-${id}`, base: 'a'.repeat(40), head: 'b'.repeat(40), commits: 1, files: 1, patchBytes: patch.length, patchSha256: 'ab'.repeat(32), url: 'https://github.com/acme/app/pull/12', number: 12 },
      },
    }),
  ]);
  list = await call(`/api/runs?projectId=${p1}`);
  const summary = list.body.runs[0];
  assert.equal([summary.state, summary.costUsd, summary.progressLines, summary.lastProgress, summary.finishedAt], ['succeeded', 0.0123, 2, 'tool: Bash ls', '2026-11-23T10:00:09.000Z']);
  assert.equal(summary.args, ['--since', 'x; rm -rf /']);
  const one = await call(`/api/runs/${id}`);
  assert.is(one.status, 200);
  assert.equal([one.body.report, one.body.exitCode, one.body.durationMs, one.body.patch, one.body.patchBytes, one.body.patchTruncated], ['All good.', 0, 8000, patch, patch.length, false]);
  assert.equal([one.body.pullRequest.commits, one.body.pullRequest.url, one.body.pullRequest.number], [1, 'https://github.com/acme/app/pull/12', 12], 'the record links the pull request the runner opened');
  assert.equal(one.body.progress, [{ seq: 1, text: 'session started' }, { seq: 2, text: 'tool: Bash ls' }]);
  assert.equal([one.body.projectId, one.body.runnerId, one.body.output, one.body.branch, one.body.startedAt], [p1, runner.runnerId, 'pull_request', `svc/run-${id}`, '2026-11-23T10:00:01.000Z']);
});

test('a pull request the runner could not open: openError is kept in the record (a token without the scope)', async () => {
  const id = `r${++seq}-${randomBytes(4).toString('hex')}`;
  const openError = 'the code-host token may not open pull requests on acme/app (POST /repos/acme/app/pulls: HTTP 403: Resource not accessible by personal access token); give the token write access';
  const pullRequest = { branch: `svc/run-${id}`, base: 'a'.repeat(40), head: 'b'.repeat(40), commits: 1, files: 1, patchBytes: 10, patchSha256: 'ab'.repeat(32), openError };
  await send([stateEv(id, 'succeeded', { result: { report: 'r', reportTruncated: false, exitCode: 0, durationMs: 1, sessionId: null, costUsd: null, usage: null, pullRequest } })]);
  const one = await call(`/api/runs/${id}`);
  assert.equal([one.body.state, one.body.pullRequest.openError, one.body.pullRequest.url], ['succeeded', openError, undefined]);
});

test('re-sent and late events change nothing: a final state stays final, progress is stored once', async () => {
  const id = `r${++seq}-${randomBytes(4).toString('hex')}`;
  const progress = { id: `run.${id}.p1`, source: `project:${p1}`, kind: 'skill_run.progress', ts: new Date().toISOString(), payload: { runId: id, project: p1, lines: [{ seq: 1, text: 'one' }] } };
  await send([stateEv(id, 'queued'), stateEv(id, 'running'), progress, stateEv(id, 'cancelled')]);
  await send([stateEv(id, 'running'), { ...progress, id: `run.${id}.p1-again` }, stateEv(id, 'failed', { error: 'late' })]);
  const one = await call(`/api/runs/${id}`);
  assert.equal([one.body.state, one.body.error, one.body.progressLines, one.body.progress.length], ['cancelled', null, 1, 1]);
});

test('the server keeps at most 128 KiB of a patch and says it cut it', async () => {
  const id = `r${++seq}-${randomBytes(4).toString('hex')}`;
  const line = `+${'y'.repeat(99)}\n`;
  const text = line.repeat(1400); // 140,000 bytes: a runner that did not cut
  await send([stateEv(id, 'queued'), { id: `run.${id}.patch`, source: `project:${p1}`, kind: 'skill_run.patch', ts: new Date().toISOString(), payload: { runId: id, project: p1, bytes: 150_000, sha256: 'cd'.repeat(32), text, truncated: false } }]);
  const one = await call(`/api/runs/${id}`);
  assert.ok(Buffer.byteLength(one.body.patch) <= 128 * 1024, `${Buffer.byteLength(one.body.patch)} bytes kept`);
  assert.ok(one.body.patch.endsWith('\n') && text.startsWith(one.body.patch), 'cut after a whole line');
  assert.equal([one.body.patchTruncated, one.body.patchBytes], [true, 150_000]);
});

test('ignored: a run of a project another runner serves, another runner writing a run it did not start, payloads that do not parse — and the batch is still acknowledged', async () => {
  const id = `r${++seq}-${randomBytes(4).toString('hex')}`;
  const c2 = connect(server.url, other.token);
  await c2.next('welcome');
  await send([stateEv(`${id}-foreign`, 'queued')], c2); // p1 is not served by the other runner
  await send([stateEv(id, 'queued')]);
  await send([stateEv(id, 'failed', { error: 'hijack' })], c2);
  await send([{ ...stateEv(id, 'succeeded'), payload: { runId: id, state: 'succeeded' } }, { ...stateEv(`${id}-bad`, 'queued'), payload: { runId: '../x' } }]);
  c2.ws.close();
  assert.is((await call(`/api/runs/${id}-foreign`)).status, 404);
  assert.is((await call(`/api/runs/${id}`)).body.state, 'queued');
});

test('roles: a viewer of one project sees its runs only; others get 404; filters and paging; bad queries 400', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const id = `r${++seq}-${randomBytes(4).toString('hex')}`;
    ids.push(id);
    await send([stateEv(id, 'queued', { createdAt: `2026-11-24T10:00:0${i}.000Z` }, p2)]);
  }
  const viewer = await makeUser(server, 'runs-viewer');
  const outsider = await makeUser(server, 'runs-outsider');
  assert.is((await server.api(`/api/projects/${p2}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  const seen = await call('/api/runs', viewer.token);
  assert.equal(seen.body.runs.map((r: any) => r.id), [...ids].reverse());
  assert.is((await call(`/api/runs/${ids[0]}`, viewer.token)).status, 200);
  const runOfP1 = (await call(`/api/runs?projectId=${p1}`)).body.runs[0].id;
  assert.is((await call(`/api/runs/${runOfP1}`, viewer.token)).status, 404);
  assert.is((await call(`/api/runs?projectId=${p1}`, viewer.token)).status, 404);
  assert.equal((await call('/api/runs', outsider.token)).body.runs, []);
  assert.is((await call(`/api/runs/${ids[0]}`, outsider.token)).status, 404);
  assert.is((await call(`/api/runs/${ids[0]}`, 'svc_pat_nope')).status, 401);

  const page1 = await call(`/api/runs?projectId=${p2}&limit=2`);
  assert.equal(page1.body.runs.map((r: any) => r.id), [ids[2], ids[1]]);
  const page2 = await call(`/api/runs?projectId=${p2}&limit=2&before=${page1.body.nextBefore}`);
  assert.equal([page2.body.runs.map((r: any) => r.id), page2.body.nextBefore], [[ids[0]], null]);
  assert.is((await call(`/api/runs?state=succeeded&projectId=${p2}`)).body.runs.length, 0);
  assert.is((await call(`/api/runs?state=queued&projectId=${p2}`)).body.runs.length, 3);
  for (const q of ['state=done', 'limit=0', 'limit=201', 'projectId=..%2Fx', 'extra=1', 'before=a%20b']) assert.is((await call(`/api/runs?${q}`)).status, 400, q);
  assert.is((await call('/api/runs/..%2Fetc')).status, 400);
  assert.is((await call('/api/runs/does-not-exist')).status, 404);
});

test.run();
