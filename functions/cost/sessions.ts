// Agent sessions and the activity feed over HTTP (docs/cost.md, "Server"). GET /api/sessions lists the
// sessions of the projects you can see (instance admins: all, including sessions no project was
// matched to), newest first, with their totals; GET /api/sessions/:id is one session with its LLM
// requests. GET /api/activity is the activity feed (sessions started, budget thresholds reached),
// kept ACTIVITY_RETENTION_DAYS. A session or item of a project you have no role on does not exist for you.
// Statements: queries.ts.
import type { ActivityKind } from '../../protocol/activity.ts';
import * as z from 'zod';
import { activityList, sessionDetail, sessionList } from '../../protocol/api/sessions.ts';
import type { RequestAnswer, SessionAnswer } from '../../protocol/api/sessions.ts';
import { projectRole } from '../auth/auth.ts';
import { route } from '../lib/context.ts';
import type { Principal, Route } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { activityRows, sessionRequests, sessionRow, sessionRows, totals } from './queries.ts';
import type { SessionRow } from './queries.ts';
import { reportRoute } from './report-route.ts';
import { activityQuery, id, sessionsQuery } from './schema.ts';

const TAG = 'cost';
const iso = (d: Date) => new Date(d).toISOString();
const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
/** The most requests one GET /api/sessions/:id returns (requestsTruncated says when there are more). */
export const SESSION_REQUESTS_MAX = 5000;

const toSession = (r: SessionRow & Record<string, unknown>): SessionAnswer => ({
  id: r.id,
  runtime: r.runtime,
  sessionId: r.session_id,
  runnerId: r.runner_id,
  projectId: r.project_id,
  projectName: r.project_name,
  slot: r.slot,
  issue: r.issue,
  runId: r.run_id,
  branch: r.branch,
  models: r.models,
  firstAt: iso(r.first_at),
  lastAt: iso(r.last_at),
  ...totals(r),
});

/** A stored request (llm_requests) as the session detail lists it. */
const toRequest = (r: Record<string, unknown>) =>
  ({
    id: String(r.id),
    requestId: r.request_id,
    messageId: r.message_id,
    model: r.model,
    at: iso(r.at as Date),
    sources: [...(r.transcript_key !== null ? ['transcript'] : []), ...(r.otlp_key !== null ? ['otlp'] : [])],
    inputTokens: n(r.input_tokens),
    outputTokens: n(r.output_tokens),
    cacheWrite5mTokens: n(r.cache_write_5m_tokens),
    cacheWrite1hTokens: n(r.cache_write_1h_tokens),
    cacheReadTokens: n(r.cache_read_tokens),
    reasoningTokens: n(r.reasoning_tokens),
    speed: r.speed,
    sidechain: r.sidechain,
    durationMs: n(r.duration_ms),
    costUsd: n(r.cost_usd),
    priced: r.cost_usd !== null,
    reportedCostUsd: n(r.reported_cost_usd),
    issue: r.issue,
    runId: r.run_id,
    slot: r.slot,
  }) as RequestAnswer;

async function canSee(principal: Principal, db: Queryable, projectId: string | null): Promise<boolean> {
  if (principal.user.instanceAdmin) return true;
  return projectId !== null && (await projectRole(db, principal.user, projectId)) !== null;
}

/** Rows newest first, one more than `limit`: the page and the cursor of the next one. */
function paged<R, I>(rows: R[], limit: number, cursor: (last: R) => I): { page: R[]; nextBefore: I | null } {
  const page = rows.slice(0, limit);
  return { page, nextBefore: rows.length > limit ? cursor(page[page.length - 1]) : null };
}

export const routes: Route[] = [
  reportRoute({
    path: '/api/sessions',
    summary: 'Agent sessions of the projects you can see, newest first, with their token and cost totals; filter by project, runtime, model, time',
    query: sessionsQuery,
    responses: { 200: { description: 'a page of sessions', schema: sessionList } },
    async handler({ principal, query }, ctx) {
      const { page, nextBefore } = paged(await sessionRows(ctx.db, principal, query), query.limit, (s) => s.id);
      return json({ sessions: page.map(toSession), nextBefore });
    },
  }),
  route({ method: 'GET', path: '/api/sessions/:sessionId', tag: TAG, access: 'user', params: z.strictObject({ sessionId: id }),
    summary: `One agent session with its LLM requests, oldest first (at most ${SESSION_REQUESTS_MAX})`,
    responses: { 200: { description: 'the session with its requests', schema: sessionDetail } },
    async handler({ principal, params }, ctx) {
      const s = await sessionRow(ctx.db, params.sessionId);
      if (!s || !(await canSee(principal!, ctx.db, s.project_id))) throw notFound('no such session');
      const reqs = await sessionRequests(ctx.db, s, SESSION_REQUESTS_MAX + 1);
      return json({
        ...toSession(s),
        requests: reqs.slice(0, SESSION_REQUESTS_MAX).map(toRequest),
        requestsTruncated: reqs.length > SESSION_REQUESTS_MAX,
      });
    },
  }),
  reportRoute({
    path: '/api/activity',
    summary: 'The activity feed of the projects you can see (every fleet event: slots, pull requests, runs, triggers, schedules, sessions, budgets; runners for the admins of their projects), newest first, by project and kind',
    query: activityQuery,
    responses: { 200: { description: 'a page of the feed', schema: activityList } },
    async handler({ principal, query }, ctx) {
      const { page, nextBefore } = paged(await activityRows(ctx.db, principal, query), query.limit, (a) => Number(a.id));
      return json({
        items: page.map((a) => ({ id: Number(a.id), projectId: a.project_id, runnerId: a.runner_id, kind: a.kind as ActivityKind, data: a.data, createdAt: iso(a.created_at) })),
        nextBefore,
      });
    },
  }),
];
