// Sessions and LLM requests from runner events (docs/cost.md, "Server"). The events pipeline calls this
// for every ingested batch after storing it (functions/events/sinks/cost.ts); batches arrive at least
// once, so everything here is idempotent:
//   session.meta  upsert the session of (runner, runtime, session id); first/last time only widen,
//                 models accumulate, slot/issue/run/branch/project take the newest known value
//   llm.request   ONE row per (runner, runtime, merge key), merge key = `request:<request id>` when the
//                 event has one (a transcript line also needs a message id), else the source's own dedup key. Transcript and OTel record of the same
//                 request land on one row in either order: the transcript's model, time and token counts
//                 win; the OTel record gives duration and the runtime's reported cost; a request seen
//                 only through OTel keeps its own counts. Cost is computed from the price in force at
//                 the request's time; no price → cost null (listed as unpriced), never $0.
// A project named by an event counts only when it is a project this runner serves; otherwise the
// session or request is stored without a project (visible to instance admins only), never in another
// runner's project. A payload that does not parse is skipped (it stays in runner_events).
import { randomUUID } from 'node:crypto';
import type { RunnerEvent } from '../../protocol/frames.ts';
import { LLM_REQUEST, SESSION_META, llmRequestPayload, sessionMetaPayload } from '../../protocol/usage.ts';
import type { LlmRequest, SessionMeta } from '../../protocol/usage.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import { checkBudget } from './budget.ts';
import { loadPrices, priceRequest } from './prices.ts';
import type { PriceVersion } from './prices.ts';
import { servedProjectRows } from '../runners/served.ts';

// PostgreSQL text cannot hold NUL (the hub refuses such frames already; this keeps the hook safe alone).
const clean = (s: string | null | undefined) => (s == null ? null : s.replace(/\0/g, ''));

/**
 * The merge key of a request (docs/cost.md): its request id when it has one, else the source's key. A
 * transcript line without a message id is never deduplicated (ccusage counts each such line), so it
 * keeps its own key even when it names a request id.
 */
export const mergeKey = (p: Pick<LlmRequest, 'key' | 'requestId' | 'messageId' | 'source'>) =>
  p.requestId && (p.source === 'otlp' || p.messageId) ? `request:${p.requestId}` : p.key;

async function upsertSession(q: Queryable, runnerId: string, m: SessionMeta, served: ReadonlySet<string>): Promise<string | null> {
  const project = m.project && served.has(m.project) ? m.project : null;
  const models = [...new Set(m.models.map((x) => clean(x)!))];
  const [row] = await q.query<{ id: string; project_id: string | null; inserted: boolean }>(sql`
    insert into agent_sessions as s (id, runner_id, runtime, session_id, project_id, slot, issue, run_id, branch, models, first_at, last_at)
    values (${randomUUID()}, ${runnerId}, ${m.runtime}, ${clean(m.sessionId)}, ${project}, ${clean(m.slot)}, ${clean(m.issue)}, ${clean(m.run)},
            ${clean(m.branch)}, ${sql.json(models)}, ${m.firstAt}, ${m.lastAt})
    on conflict (runner_id, runtime, session_id) do update set
      project_id = coalesce(excluded.project_id, s.project_id),
      slot = coalesce(excluded.slot, s.slot),
      issue = coalesce(excluded.issue, s.issue),
      run_id = coalesce(excluded.run_id, s.run_id),
      branch = coalesce(excluded.branch, s.branch),
      models = (select coalesce(jsonb_agg(distinct x.m order by x.m), '[]'::jsonb)
                  from (select jsonb_array_elements_text(s.models) union select jsonb_array_elements_text(excluded.models)) as x(m)),
      first_at = least(s.first_at, excluded.first_at),
      last_at = greatest(s.last_at, excluded.last_at),
      updated_at = now()
    returning id, project_id, (xmax = 0) as inserted`);
  if (row.project_id) {
    // Requests that arrived before their session learnt its project.
    await q.query(sql`
      update llm_requests set project_id = ${row.project_id}, updated_at = now()
       where runner_id = ${runnerId} and runtime = ${m.runtime} and session_id = ${clean(m.sessionId)} and project_id is null`);
  }
  if (row.inserted) {
    const data = { sessionId: row.id, runtime: m.runtime, runnerId, slot: m.slot ?? null, issue: m.issue ?? null, run: m.run ?? null, branch: m.branch ?? null };
    await q.query(sql`insert into activity_items (project_id, kind, data, created_at) values (${row.project_id}, 'session.started', ${sql.json(data)}, now())`);
  }
  return row.project_id;
}

interface RequestRow {
  id: string;
  transcript_key: string | null;
  otlp_key: string | null;
  session_id: string | null;
  request_id: string | null;
  message_id: string | null;
  project_id: string | null;
  slot: string | null;
  issue: string | null;
  run_id: string | null;
  model: string;
  at: Date;
  input_tokens: string;
  output_tokens: string;
  cache_write_5m_tokens: string;
  cache_write_1h_tokens: string;
  cache_read_tokens: string;
  reasoning_tokens: string | null;
  speed: 'standard' | 'fast' | null;
  sidechain: boolean;
  duration_ms: string | null;
  reported_cost_usd: string | null;
}

const num = (v: string | null) => (v === null ? null : Number(v));

/** The row after this event: the merge rule of the header, in one place. */
function merge(cur: RequestRow | undefined, p: LlmRequest, project: string | null) {
  const transcript = p.source === 'transcript';
  const own = {
    model: clean(p.model)!,
    at: new Date(p.at),
    inputTokens: p.inputTokens,
    outputTokens: p.outputTokens,
    cacheWrite5mTokens: p.cacheWrite5mTokens,
    cacheWrite1hTokens: p.cacheWrite1hTokens,
    cacheReadTokens: p.cacheReadTokens,
    reasoningTokens: p.reasoningTokens ?? null,
  };
  // Counts: the transcript's when it was seen (what ccusage counts), else this OTel record's own.
  const counts =
    !cur || transcript || cur.transcript_key === null
      ? own
      : {
          model: cur.model,
          at: new Date(cur.at),
          inputTokens: Number(cur.input_tokens),
          outputTokens: Number(cur.output_tokens),
          cacheWrite5mTokens: Number(cur.cache_write_5m_tokens),
          cacheWrite1hTokens: Number(cur.cache_write_1h_tokens),
          cacheReadTokens: Number(cur.cache_read_tokens),
          reasoningTokens: num(cur.reasoning_tokens),
        };
  // Duration and reported cost: the OTel record's when it was seen, else the transcript's.
  const fromOtel = <T>(mine: T | null | undefined, theirs: T | null): T | null =>
    !cur ? (mine ?? null) : !transcript ? (mine ?? theirs) : cur.otlp_key !== null ? (theirs ?? mine ?? null) : (mine ?? theirs);
  return {
    ...counts,
    transcriptKey: transcript ? clean(p.key) : (cur?.transcript_key ?? null),
    otlpKey: transcript ? (cur?.otlp_key ?? null) : clean(p.key),
    sessionId: clean(p.sessionId) ?? cur?.session_id ?? null,
    requestId: clean(p.requestId) ?? cur?.request_id ?? null,
    messageId: clean(p.messageId) ?? cur?.message_id ?? null,
    projectId: project ?? cur?.project_id ?? null,
    slot: clean(p.slot) ?? cur?.slot ?? null,
    issue: clean(p.issue) ?? cur?.issue ?? null,
    runId: clean(p.run) ?? cur?.run_id ?? null,
    speed: p.speed ?? cur?.speed ?? null,
    sidechain: Boolean(p.sidechain) || Boolean(cur?.sidechain),
    durationMs: fromOtel(p.durationMs, num(cur?.duration_ms ?? null)),
    reportedCostUsd: fromOtel(p.reportedCostUsd, num(cur?.reported_cost_usd ?? null)),
  };
}

async function upsertRequest(q: Queryable, runnerId: string, p: LlmRequest, served: ReadonlySet<string>, prices: readonly PriceVersion[]): Promise<string | null> {
  const key = clean(mergeKey(p))!;
  let project = p.project && served.has(p.project) ? p.project : null;
  if (!project && p.sessionId) {
    const [s] = await q.query<{ project_id: string | null }>(sql`
      select project_id from agent_sessions where runner_id = ${runnerId} and runtime = ${p.runtime} and session_id = ${clean(p.sessionId)}`);
    project = s?.project_id ?? null;
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    const [cur] = await q.query<RequestRow>(sql`
      select * from llm_requests where runner_id = ${runnerId} and runtime = ${p.runtime} and merge_key = ${key} for update`);
    const m = merge(cur, p, project);
    const { costUsd, price } = priceRequest(prices, m.model, m.at, m, m.speed);
    const values = sql`${m.transcriptKey}, ${m.otlpKey}, ${m.sessionId}, ${m.requestId}, ${m.messageId}, ${m.projectId}, ${m.slot}, ${m.issue}, ${m.runId},
      ${m.model}, ${m.at}, ${m.inputTokens}, ${m.outputTokens}, ${m.cacheWrite5mTokens}, ${m.cacheWrite1hTokens}, ${m.cacheReadTokens}, ${m.reasoningTokens},
      ${m.speed}, ${m.sidechain}, ${m.durationMs}, ${m.reportedCostUsd}, ${costUsd}, ${price?.model ?? null}, ${price?.effectiveFrom ?? null}`;
    const columns = sql`transcript_key, otlp_key, session_id, request_id, message_id, project_id, slot, issue, run_id,
      model, at, input_tokens, output_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_read_tokens, reasoning_tokens,
      speed, sidechain, duration_ms, reported_cost_usd, cost_usd, price_model, price_effective_from`;
    if (cur) {
      await q.query(sql`update llm_requests set (${columns}, updated_at) = (${values}, now()) where id = ${cur.id}`);
      return m.projectId;
    }
    const [added] = await q.query(sql`
      insert into llm_requests (runner_id, runtime, merge_key, ${columns}) values (${runnerId}, ${p.runtime}, ${key}, ${values})
      on conflict (runner_id, runtime, merge_key) do nothing returning 1`);
    if (added) return m.projectId;
    // Another process inserted it meanwhile: merge into that row.
  }
  throw new Error(`llm request ${key} could not be stored`);
}

/** The cost sink's work for the session.meta and llm.request events of one batch (cheap when there are none). */
export async function recordUsage(db: Db, runnerId: string, events: RunnerEvent[]): Promise<{ sessions: number; requests: number }> {
  const metas: SessionMeta[] = [];
  const requests: LlmRequest[] = [];
  for (const e of events) {
    if (e.kind === SESSION_META) {
      const p = sessionMetaPayload.safeParse(e.payload);
      if (p.success) metas.push(p.data);
    } else if (e.kind === LLM_REQUEST) {
      const p = llmRequestPayload.safeParse(e.payload);
      if (p.success) requests.push(p.data);
    }
  }
  if (metas.length === 0 && requests.length === 0) return { sessions: 0, requests: 0 };
  const touched = new Set<string>();
  await db.transaction(async (tx) => {
    // A pool member's sessions (its pool runs) count for the pool's projects too (runners/served.ts).
    const served = new Set((await servedProjectRows(tx, runnerId)).map((r) => r.id));
    for (const m of metas) {
      const project = await upsertSession(tx, runnerId, m, served);
      if (project) touched.add(project);
    }
    const prices = requests.length ? await loadPrices(tx) : [];
    for (const r of requests) {
      const project = await upsertRequest(tx, runnerId, r, served, prices);
      if (project) touched.add(project);
    }
  });
  if (touched.size === 0) return { sessions: metas.length, requests: requests.length };
  const budgeted = await db.query<{ id: string }>(sql`
    select id from projects where budget_usd is not null and id in (select jsonb_array_elements_text(${sql.json([...touched])}))`);
  for (const { id } of budgeted) await checkBudget(db, id);
  return { sessions: metas.length, requests: requests.length };
}
