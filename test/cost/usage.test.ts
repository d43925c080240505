// Sessions, LLM requests and cost on the server (docs/cost.md, "Server"): protocol clients paired as
// runners send session.meta and llm.request events through the real server's hub ingest; the API
// serves sessions, their requests and cost totals by project role.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_PRICES, costUsd, findPrice } from '../../protocol/prices.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

let server: RunningServer;
let wsA: Client; // runner A serves p1, p2
let wsB: Client; // runner B serves p3
let p1 = '';
let p2 = '';
let p3 = '';
let viewer: TestUser; // viewer of p1 only
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
const uid = () => randomBytes(5).toString('hex');
let seq = 0;

type Ev = { id: string; source: string; kind: string; ts: string; payload: Record<string, unknown> };
const ev = (kind: string, payload: Record<string, unknown>, id = `${kind}.${++seq}.${uid()}`): Ev => ({ id, source: 'sessions', kind, ts: new Date().toISOString(), payload });

const meta = (sessionId: string, extra: Record<string, unknown> = {}) =>
  ev('session.meta', { runtime: 'claude', sessionId, source: 'transcript', models: ['claude-sonnet-4-5'], firstAt: iso(-3600_000), lastAt: iso(-60_000), ...extra });

interface Tokens {
  inputTokens: number;
  outputTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  cacheReadTokens: number;
}
const tok = (i: number, o: number, w5 = 0, w1 = 0, r = 0): Tokens => ({ inputTokens: i, outputTokens: o, cacheWrite5mTokens: w5, cacheWrite1hTokens: w1, cacheReadTokens: r });

/** A transcript line's request (key as the runner makes it). */
const transcriptReq = (sessionId: string, requestId: string | null, t: Tokens, extra: Record<string, unknown> = {}) => {
  const messageId = `msg_${uid()}`;
  return ev('llm.request', {
    key: requestId ? `claude:${messageId}:${requestId}` : `claude:line:${sessionId}:${uid()}`,
    runtime: 'claude',
    source: 'transcript',
    sessionId,
    requestId,
    messageId,
    model: 'claude-sonnet-4-5',
    at: iso(-120_000),
    ...t,
    ...extra,
  });
};
/** The OTel api_request record of a request. */
const otelReq = (sessionId: string, requestId: string, t: Tokens, extra: Record<string, unknown> = {}) =>
  ev('llm.request', {
    key: `claude:otlp:${requestId}`,
    runtime: 'claude',
    source: 'otlp',
    sessionId,
    requestId,
    model: 'claude-sonnet-4-5',
    at: iso(-119_000),
    durationMs: 4321,
    reportedCostUsd: 0.0123,
    ...t,
    ...extra,
  });

function iso(offsetMs: number): string {
  return new Date(Date.now() + offsetMs).toISOString();
}

/** Expected cost at the seeded price. */
const cost = (model: string, t: Tokens) => costUsd(t, findPrice(model, DEFAULT_PRICES)!);

async function send(ws: Client, events: Ev[]): Promise<void> {
  ws.send({ type: 'events', events });
  const ack = await ws.next('ack');
  assert.equal(ack.ids, events.map((e) => e.id));
}

async function sessionOf(runtimeSessionId: string, token?: string): Promise<Record<string, any> | undefined> {
  const list = await call('/api/sessions?limit=200', { token });
  assert.is(list.status, 200);
  return list.body.sessions.find((s: { sessionId: string }) => s.sessionId === runtimeSessionId);
}

async function requestsOf(runtimeSessionId: string): Promise<Record<string, any>[]> {
  const s = await sessionOf(runtimeSessionId);
  assert.ok(s, `session ${runtimeSessionId} listed`);
  const detail = await call(`/api/sessions/${s!.id}`);
  assert.is(detail.status, 200);
  return detail.body.requests;
}

const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} ≠ ${b}`);

test.before(async () => {
  server = await startServer({ admin: true });
  const a = await pairRunner(server.api, server.url, 'cost-a');
  const b = await pairRunner(server.api, server.url, 'cost-b');
  const mk = async (name: string, runnerId: string) => (await call('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId, rootPath: `/srv/${name}` } })).body.id;
  p1 = await mk('cost-one', a.runnerId);
  p2 = await mk('cost-two', a.runnerId);
  p3 = await mk('cost-three', b.runnerId);
  viewer = await makeUser(server, 'costviewer');
  assert.is((await call(`/api/projects/${p1}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  wsA = connect(server.url, a.token);
  wsB = connect(server.url, b.token);
  await wsA.next('welcome');
  await wsB.next('welcome');
});
test.after(async () => {
  wsA?.ws.close();
  wsB?.ws.close();
  await server?.cleanup();
});

test('session.meta and llm.request: a session with its requests and cost; the same batch twice and a re-read (new event ids) change nothing', async () => {
  const sid = `s-${uid()}`;
  const t1 = tok(1000, 500, 2000, 100, 30_000);
  const t2 = tok(10, 20);
  const batch = [meta(sid, { project: p1, slot: 'w1', issue: '17', branch: 'feat-a' }), transcriptReq(sid, `req_${uid()}`, t1), transcriptReq(sid, null, t2)];
  await send(wsA, batch);
  await send(wsA, batch); // not acked in time: sent again
  await send(wsA, batch.map((e) => ({ ...e, id: `reread-${e.id}` }))); // the file read again after offsets were lost
  const s = await sessionOf(sid);
  assert.ok(s);
  assert.equal(
    [s!.projectId, s!.runtime, s!.slot, s!.issue, s!.branch, s!.models, s!.requests],
    [p1, 'claude', 'w1', '17', 'feat-a', ['claude-sonnet-4-5'], 2],
  );
  assert.is(s!.inputTokens, 1010);
  assert.is(s!.cacheReadTokens, 30_000);
  close(s!.costUsd, cost('claude-sonnet-4-5', t1) + cost('claude-sonnet-4-5', t2), 'session cost');
  const reqs = await requestsOf(sid);
  assert.is(reqs.length, 2);
  assert.ok(reqs.every((r) => r.priced && r.sources.join() === 'transcript'));

  // The session grows: times widen, models accumulate, nothing narrows.
  await send(wsA, [meta(sid, { models: ['claude-haiku-4-5'], firstAt: iso(-1800_000), lastAt: iso(-1000) })]);
  const grown = (await sessionOf(sid))!;
  assert.equal(grown.models, ['claude-haiku-4-5', 'claude-sonnet-4-5']);
  assert.is(grown.firstAt, s!.firstAt, 'firstAt only moves earlier');
  assert.ok(grown.lastAt > s!.lastAt, 'lastAt moved later');
  assert.equal([grown.projectId, grown.issue], [p1, '17'], 'a later meta without them keeps project and issue');
});

test('the seeded table prices as protocol/prices.ts does: long context (gpt-5.4 over 272k input), tiers above 200k (sonnet-4-5), fast mode (opus-4-6)', async () => {
  const sid = `s-${uid()}`;
  const cases: [string, Tokens, 'fast' | null][] = [
    ['gpt-5.4', tok(250_000, 1_000, 0, 0, 40_000), null],
    ['claude-sonnet-4-5', tok(250_000, 1_000, 210_000, 0, 300_000), null],
    ['claude-opus-4-6', tok(1_000, 2_000, 3_000, 4_000, 5_000), 'fast'],
  ];
  await send(wsA, [meta(sid, { project: p1 }), ...cases.map(([model, t, speed]) => transcriptReq(sid, `req_${uid()}`, t, { model, ...(speed ? { speed } : {}) }))]);
  const reqs = await requestsOf(sid);
  assert.is(reqs.length, cases.length);
  for (const [model, t, speed] of cases) {
    const row = reqs.find((r) => r.model === model)!;
    close(row.costUsd, costUsd(t, findPrice(model, DEFAULT_PRICES)!, speed), model);
  }
  // Each case differs from the plain per-token price, so the special rule was applied.
  const plain = (model: string, t: Tokens) => {
    const p = findPrice(model, DEFAULT_PRICES)!;
    return (t.inputTokens * p.input + t.outputTokens * p.output + t.cacheWrite5mTokens * p.cacheWrite5m + t.cacheWrite1hTokens * p.cacheWrite1h + t.cacheReadTokens * p.cacheRead) / 1e6;
  };
  for (const [model, t] of cases) assert.ok(Math.abs(reqs.find((r) => r.model === model)!.costUsd - plain(model, t)) > 1e-6, `${model}: a special price applies`);
});

test('transcript line and OTel record of one request, in either order → one row: transcript counts, OTel duration and reported cost', async () => {
  for (const order of ['transcript first', 'otel first'] as const) {
    const sid = `s-${uid()}`;
    const rid = `req_${uid()}`;
    const fromTranscript = tok(3, 700, 5000, 0, 12_000);
    const fromOtel = tok(4, 690, 5000, 0, 12_000); // OTel counts differ slightly: the transcript's win
    const t = transcriptReq(sid, rid, fromTranscript);
    const o = otelReq(sid, rid, fromOtel);
    await send(wsA, [meta(sid, { project: p1 })]);
    if (order === 'transcript first') {
      await send(wsA, [t]);
      await send(wsA, [o]);
    } else {
      await send(wsA, [o]);
      const [alone] = await requestsOf(sid);
      assert.is(alone.outputTokens, 690, 'seen only through OTel: its own counts');
      close(alone.costUsd, cost('claude-sonnet-4-5', fromOtel), 'OTel-only cost');
      await send(wsA, [t]);
    }
    await send(wsA, [o, t]); // both again: still one row
    const reqs = await requestsOf(sid);
    assert.is(reqs.length, 1, order);
    const [r] = reqs;
    assert.equal(
      [r.requestId, r.sources, r.inputTokens, r.outputTokens, r.cacheWrite5mTokens, r.cacheReadTokens, r.durationMs, r.reportedCostUsd],
      [rid, ['transcript', 'otlp'], 3, 700, 5000, 12_000, 4321, 0.0123],
      order,
    );
    close(r.costUsd, cost('claude-sonnet-4-5', fromTranscript), `${order}: cost from the transcript's counts`);
    assert.is(r.at, t.payload.at, "the transcript's time");
  }
});

test("a runner naming another runner's project: stored without a project, never in that project", async () => {
  const sid = `s-${uid()}`;
  await send(wsB, [meta(sid, { project: p1 }), transcriptReq(sid, `req_${uid()}`, tok(100, 100), { project: p1 })]);
  const s = await sessionOf(sid); // as instance admin
  assert.ok(s, 'stored');
  assert.is(s!.projectId, null, 'not attributed to p1');
  const [r] = await requestsOf(sid);
  assert.ok(r.priced);
  assert.not.ok(await sessionOf(sid, viewer.token), "p1's viewer does not see it");
  const p1Cost = await call(`/api/cost?groupBy=session&projectId=${p1}`);
  assert.not.ok(p1Cost.body.groups.some((g: { key: string }) => g.key === s!.id), "not in p1's cost");
});

test('an unknown model: cost null (not $0), flagged and listed; a price effective before it prices it, later edits change no stored cost', async () => {
  const model = `mystery-${uid()}`;
  const sid = `s-${uid()}`;
  const t = tok(1_000_000, 1_000_000);
  await send(wsA, [meta(sid, { project: p1 }), transcriptReq(sid, `req_${uid()}`, t, { model, at: iso(-5 * 86400_000) })]);
  const [r] = await requestsOf(sid);
  assert.equal([r.costUsd, r.priced], [null, false]);
  const unknown = await call('/api/cost/unknown-models');
  const row = unknown.body.models.find((m: { model: string }) => m.model === model);
  assert.ok(row, 'listed');
  assert.equal([row.requests, row.inputTokens], [1, 1_000_000]);
  const totals = (await call(`/api/cost?groupBy=model&projectId=${p1}`)).body.groups.find((g: { key: string }) => g.key === model);
  assert.equal([totals.costUsd, totals.unpricedRequests, totals.requests], [0, 1, 1]);

  // A price effective later does not reach back: still unpriced.
  const now = await call(`/api/prices/${model}`, { method: 'PUT', json: { inputUsdPerMTok: 1, outputUsdPerMTok: 2, effectiveFrom: iso(10 * 86400_000) } });
  assert.is(now.status, 200);
  assert.equal((await requestsOf(sid))[0].costUsd, null);
  // One effective before the request prices it: $1 + $2.
  const earlier = await call(`/api/prices/${model}`, { method: 'PUT', json: { inputUsdPerMTok: 1, outputUsdPerMTok: 2, effectiveFrom: iso(-30 * 86400_000) } });
  assert.is(earlier.status, 200);
  close((await requestsOf(sid))[0].costUsd, 3, 'priced at the version in force then');
  assert.not.ok((await call('/api/cost/unknown-models')).body.models.some((m: { model: string }) => m.model === model), 'no longer listed');

  // A new version (effective since yesterday) changes nothing stored; a late request from before it keeps the old price,
  // one after it gets the new one.
  const v3 = await call(`/api/prices/${model}`, { method: 'PUT', json: { inputUsdPerMTok: 10, outputUsdPerMTok: 20, effectiveFrom: iso(-86400_000) } });
  assert.is(v3.status, 200);
  const versions = (await call(`/api/prices/${model}`)).body;
  assert.is(versions.versions.length, 3);
  assert.equal([versions.inputUsdPerMTok, versions.outputUsdPerMTok], [10, 20], 'the version in force now is shown (not the future one)');
  close((await requestsOf(sid))[0].costUsd, 3, 'earlier cost unchanged');
  await send(wsA, [transcriptReq(sid, `req_${uid()}`, t, { model, at: iso(-2 * 86400_000) }), transcriptReq(sid, `req_${uid()}`, t, { model, at: iso(-1000) })]);
  const costs = (await requestsOf(sid)).map((x) => x.costUsd);
  assert.equal(costs.length, 3);
  close(costs[0], 3, 'first');
  close(costs[1], 3, 'late request from before the edit: old price');
  close(costs[2], 30, 'after the edit: new price');
  const audit = await call(`/api/audit?action=price.set&targetId=${model}`);
  assert.is(audit.status, 200);
  assert.is(audit.body.records.length, 3, 'each edit audited');
});

test('/api/cost by day, project, model, session, issue, pull_request and run: exact totals; attribution from svc.* attributes, then the session', async () => {
  const day1 = new Date(Date.UTC(2026, 5, 10, 12)).toISOString(); // fixed days, far from other tests' requests
  const day2 = new Date(Date.UTC(2026, 5, 11, 9)).toISOString();
  const sA = `s-${uid()}`;
  const sB = `s-${uid()}`;
  const branch = `feat-${uid()}`;
  const run = `run-${uid()}`;
  const a1 = tok(100, 200, 300, 400, 500);
  const a2 = tok(1, 2, 3, 4, 5);
  const b1 = tok(7000, 8000, 0, 0, 9000);
  const b2 = tok(10, 10);
  await send(wsA, [
    meta(sA, { project: p2, issue: '5', branch, firstAt: day1, lastAt: day2 }),
    meta(sB, { project: p2, issue: '6', run, firstAt: day1, lastAt: day2 }),
    transcriptReq(sA, `req_${uid()}`, a1, { at: day1 }),
    transcriptReq(sA, `req_${uid()}`, a2, { at: day2, issue: '9' }), // svc.issue of the request wins
    transcriptReq(sB, `req_${uid()}`, b1, { at: day1, model: 'claude-haiku-4-5' }),
    transcriptReq(sB, `req_${uid()}`, b2, { at: day2, model: 'claude-haiku-4-5', run: `other-${run}` }),
    ev('pr.opened', { project: p2, slot: 'w1', issue: 5, pr: { number: 42, url: 'https://example.com/pr/42' }, branch, title: 't' }),
  ]);
  const c = {
    a1: cost('claude-sonnet-4-5', a1),
    a2: cost('claude-sonnet-4-5', a2),
    b1: cost('claude-haiku-4-5', b1),
    b2: cost('claude-haiku-4-5', b2),
  };
  const get = async (groupBy: string) => {
    const res = await call(`/api/cost?groupBy=${groupBy}&projectId=${p2}&from=2026-06-10&to=2026-06-11`);
    assert.is(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const check = (groups: Record<string, any>[], key: string | null, parts: Tokens[], usd: number, what: string) => {
    const g = groups.find((x) => x.key === key);
    assert.ok(g, `${what}: group ${key} in ${JSON.stringify(groups.map((x) => x.key))}`);
    const sum = (k: keyof Tokens) => parts.reduce((acc, p) => acc + p[k], 0);
    assert.equal(
      [g.inputTokens, g.outputTokens, g.cacheWrite5mTokens, g.cacheWrite1hTokens, g.cacheReadTokens, g.requests, g.unpricedRequests],
      [sum('inputTokens'), sum('outputTokens'), sum('cacheWrite5mTokens'), sum('cacheWrite1hTokens'), sum('cacheReadTokens'), parts.length, 0],
      `${what} ${key}`,
    );
    close(g.costUsd, usd, `${what} ${key} cost`);
  };
  const byDay = await get('day');
  assert.equal(byDay.groups.map((g: { key: string }) => g.key), ['2026-06-10', '2026-06-11']);
  check(byDay.groups, '2026-06-10', [a1, b1], c.a1 + c.b1, 'day');
  check(byDay.groups, '2026-06-11', [a2, b2], c.a2 + c.b2, 'day');
  check([{ ...byDay.totals, key: 'all' }], 'all', [a1, a2, b1, b2], c.a1 + c.a2 + c.b1 + c.b2, 'totals');

  const byProject = await get('project');
  assert.equal(byProject.groups.map((g: { key: string; label: string }) => [g.key, g.label]), [[p2, 'cost-two']]);
  check(byProject.groups, p2, [a1, a2, b1, b2], c.a1 + c.a2 + c.b1 + c.b2, 'project');

  const byModel = await get('model');
  check(byModel.groups, 'claude-sonnet-4-5', [a1, a2], c.a1 + c.a2, 'model');
  check(byModel.groups, 'claude-haiku-4-5', [b1, b2], c.b1 + c.b2, 'model');

  const bySession = await get('session');
  const idA = (await sessionOf(sA))!.id;
  const idB = (await sessionOf(sB))!.id;
  check(bySession.groups, idA, [a1, a2], c.a1 + c.a2, 'session');
  check(bySession.groups, idB, [b1, b2], c.b1 + c.b2, 'session');
  assert.is(bySession.groups.find((g: { key: string }) => g.key === idA).label, sA);

  const byIssue = await get('issue');
  check(byIssue.groups, '5', [a1], c.a1, 'issue (the session’s)');
  check(byIssue.groups, '9', [a2], c.a2, 'issue (svc.issue of the request)');
  check(byIssue.groups, '6', [b1, b2], c.b1 + c.b2, 'issue');

  const byRun = await get('run');
  check(byRun.groups, run, [b1], c.b1, 'run (the session’s)');
  check(byRun.groups, `other-${run}`, [b2], c.b2, 'run (svc.run of the request)');
  check(byRun.groups, null, [a1, a2], c.a1 + c.a2, 'no run');

  const byPr = await get('pull_request');
  check(byPr.groups, '42', [a1, a2], c.a1 + c.a2, 'pull request by the session’s branch');
  check(byPr.groups, null, [b1, b2], c.b1 + c.b2, 'no pull request');

  // Range bounds: one day only; an ISO time bound is exclusive at `to`.
  const one = await call(`/api/cost?groupBy=model&projectId=${p2}&from=2026-06-11&to=2026-06-11`);
  check([{ ...one.body.totals, key: 'x' }], 'x', [a2, b2], c.a2 + c.b2, 'one day');
  const iso2 = await call(`/api/cost?projectId=${p2}&from=2026-06-10T00:00:00Z&to=${encodeURIComponent(day2)}`);
  check([{ ...iso2.body.totals, key: 'x' }], 'x', [a1, b1], c.a1 + c.b1, 'to exclusive');
  // A time zone moves the day boundary: 2026-06-11T09:00Z is still the 11th in UTC+... and the 10th at UTC-10.
  const hon = await call(`/api/cost?groupBy=day&projectId=${p2}&tz=Pacific/Honolulu&from=2026-06-09&to=2026-06-11`);
  assert.equal(hon.body.groups.map((g: { key: string }) => g.key), ['2026-06-10'], 'both days fall on the 10th in Honolulu');

  // Filters of /api/sessions.
  const listed = (await call(`/api/sessions?projectId=${p2}&model=claude-haiku-4-5`)).body.sessions.map((s: { sessionId: string }) => s.sessionId);
  assert.equal(listed, [sB]);
  const none = (await call(`/api/sessions?projectId=${p2}&from=2026-06-12`)).body.sessions;
  assert.equal(none, []);
  const page = await call(`/api/sessions?projectId=${p2}&limit=1`);
  assert.is(page.body.sessions.length, 1);
  const next = await call(`/api/sessions?projectId=${p2}&limit=1&before=${page.body.nextBefore}`);
  assert.is(next.body.sessions.length, 1);
  assert.is.not(next.body.sessions[0].id, page.body.sessions[0].id);
});

test('roles: a viewer of p1 sees p1 only — sessions, cost, unknown models, activity; another project is 404', async () => {
  const sid = `s-${uid()}`;
  await send(wsB, [meta(sid, { project: p3 }), transcriptReq(sid, `req_${uid()}`, tok(5, 5), { project: p3 })]);
  const other = (await sessionOf(sid))!;
  assert.is(other.projectId, p3);
  const token = viewer.token;
  const list = await call('/api/sessions?limit=200', { token });
  assert.is(list.status, 200);
  assert.ok(list.body.sessions.length > 0);
  assert.ok(list.body.sessions.every((s: { projectId: string }) => s.projectId === p1));
  assert.is((await call(`/api/sessions/${other.id}`, { token })).status, 404);
  assert.is((await call(`/api/sessions?projectId=${p3}`, { token })).status, 404);
  assert.is((await call(`/api/cost?projectId=${p3}`, { token })).status, 404);
  const byProject = await call('/api/cost?groupBy=project', { token });
  assert.equal(byProject.body.groups.map((g: { key: string }) => g.key), [p1]);
  const mine = await call(`/api/sessions/${(await sessionOf(list.body.sessions[0].sessionId, token))!.id}`, { token });
  assert.is(mine.status, 200);
  const activity = await call('/api/activity', { token });
  assert.is(activity.status, 200);
  assert.ok(activity.body.items.length > 0);
  assert.ok(activity.body.items.every((a: { projectId: string }) => a.projectId === p1));
  assert.ok(activity.body.items.some((a: { kind: string }) => a.kind === 'session.started'));
  assert.is((await call(`/api/activity?projectId=${p3}`, { token })).status, 404);
  // The admin sees the session.started item of p3's session.
  const all = await call(`/api/activity?projectId=${p3}&kind=session.started`);
  assert.ok(all.body.items.some((a: { data: { sessionId: string } }) => a.data.sessionId === other.id));
  // Prices: readable by anyone signed in, editable by instance admins only.
  assert.is((await call('/api/prices', { token })).status, 200);
  assert.is((await call('/api/prices/x-model', { method: 'PUT', json: { inputUsdPerMTok: 1, outputUsdPerMTok: 1 }, token })).status, 403);
});

test('bad input is refused, naming the field', async () => {
  const bad = await call('/api/cost?groupBy=week');
  assert.is(bad.status, 400);
  assert.ok(bad.body.error.fields.groupBy);
  const tz = await call('/api/cost?tz=Mars/Olympus');
  assert.is(tz.status, 400);
  assert.ok(tz.body.error.fields.tz);
  const from = await call('/api/sessions?from=yesterday');
  assert.is(from.status, 400);
  assert.ok(from.body.error.fields.from);
  const price = await call('/api/prices/m-1', { method: 'PUT', json: { inputUsdPerMTok: 1, outputUsdPerMTok: 1, fastMultiplier: 0 } });
  assert.is(price.status, 400);
  assert.ok(price.body.error.fields.fastMultiplier);
  // A payload that does not parse is stored as an event, acked, and makes no session.
  const sid = `s-${uid()}`;
  await send(wsA, [ev('session.meta', { runtime: 'no-such-runtime', sessionId: sid, source: 'transcript', firstAt: iso(0), lastAt: iso(0) })]);
  assert.not.ok(await sessionOf(sid));
});

test.run();
