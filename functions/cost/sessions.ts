// Agent sessions and the activity feed over HTTP (docs/cost.md, "Server"). GET /api/sessions lists the
// sessions of the projects you can see (instance admins: all, including sessions no project was
// matched to), newest first, with their totals; GET /api/sessions/:id is one session with its LLM
// requests. GET /api/activity is the activity feed (sessions started, budget thresholds reached),
// kept ACTIVITY_RETENTION_DAYS. A session or item of a project you have no role on does not exist for you.
import * as z from 'zod';
import { projectRole, requireProjectRole } from '../auth/auth.ts';
import { route } from '../lib/context.ts';
import type { Principal, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { range, inRange, totals, visibleProjects } from './routes.ts';

const id = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be an id' });
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
/** The most requests one GET /api/sessions/:id returns (requestsTruncated says when there are more). */
export const SESSION_REQUESTS_MAX = 5000;

interface SessionRow {
  id: string;
  runner_id: string;
  runtime: string;
  session_id: string;
  project_id: string | null;
  project_name: string | null;
  slot: string | null;
  issue: string | null;
  run_id: string | null;
  branch: string | null;
  models: string[];
  first_at: Date;
  last_at: Date;
}

const AGG = sql`
  left join lateral (
    select coalesce(sum(r.input_tokens), 0)::text as input_tokens, coalesce(sum(r.output_tokens), 0)::text as output_tokens,
           coalesce(sum(r.cache_write_5m_tokens), 0)::text as cache_write_5m_tokens, coalesce(sum(r.cache_write_1h_tokens), 0)::text as cache_write_1h_tokens,
           coalesce(sum(r.cache_read_tokens), 0)::text as cache_read_tokens, coalesce(sum(r.reasoning_tokens), 0)::text as reasoning_tokens,
           coalesce(sum(r.cost_usd), 0)::text as cost_usd, sum(r.reported_cost_usd)::text as reported_cost_usd,
           count(*)::int as requests, (count(*) filter (where r.cost_usd is null))::int as unpriced_requests
      from llm_requests r where r.runner_id = s.runner_id and r.runtime = s.runtime and r.session_id = s.session_id) agg on true`;

const toSession = (r: SessionRow & Record<string, unknown>) => ({
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

const listQuery = z.strictObject({
  projectId: id.optional(),
  runtime: z.enum(['claude', 'codex']).optional(),
  model: z.string().min(1).max(256).optional().describe('Sessions that used this model'),
  ...range,
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: id.optional().describe('The last session id of the previous page (nextBefore)'),
});

async function canSee(principal: Principal, db: Parameters<typeof projectRole>[0], projectId: string | null): Promise<boolean> {
  if (principal.user.instanceAdmin) return true;
  return projectId !== null && (await projectRole(db, principal.user, projectId)) !== null;
}

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/sessions',
    summary: 'Agent sessions of the projects you can see, newest first, with their token and cost totals; filter by project, runtime, model, time',
    tag: 'cost',
    access: 'user',
    query: listQuery,
    async handler({ principal, query }, ctx) {
      if (query.projectId) await requireProjectRole(ctx.db, principal!, query.projectId, 'viewer');
      const where = [
        visibleProjects(principal!, sql`s.project_id`),
        query.projectId ? sql`s.project_id = ${query.projectId}` : sql`true`,
        query.runtime ? sql`s.runtime = ${query.runtime}` : sql`true`,
        query.model
          ? sql`(s.models @> ${sql.json([query.model])} or exists (select 1 from llm_requests r where r.runner_id = s.runner_id and r.runtime = s.runtime and r.session_id = s.session_id and r.model = ${query.model}))`
          : sql`true`,
        // A session overlaps the range: it ended after `from` and began before `to`.
        query.from ? inRange(sql`s.last_at`, { from: query.from, tz: query.tz }) : sql`true`,
        query.to ? inRange(sql`s.first_at`, { to: query.to, tz: query.tz }) : sql`true`,
        query.before ? sql`(s.first_at, s.id) < (select first_at, id from agent_sessions where id = ${query.before})` : sql`true`,
      ];
      const rows = await ctx.db.query<SessionRow & Record<string, unknown>>(sql`
        select s.*, p.name as project_name, agg.* from agent_sessions s left join projects p on p.id = s.project_id ${AGG}
         where ${sql.join(where, ' and ')} order by s.first_at desc, s.id desc limit ${query.limit + 1}`);
      const page = rows.slice(0, query.limit);
      return json({ sessions: page.map(toSession), nextBefore: rows.length > query.limit ? page[page.length - 1].id : null });
    },
  }),
  route({
    method: 'GET',
    path: '/api/sessions/:sessionId',
    summary: `One agent session with its LLM requests, oldest first (at most ${SESSION_REQUESTS_MAX})`,
    tag: 'cost',
    access: 'user',
    params: z.strictObject({ sessionId: id }),
    async handler({ principal, params }, ctx) {
      const [s] = await ctx.db.query<SessionRow & Record<string, unknown>>(sql`
        select s.*, p.name as project_name, agg.* from agent_sessions s left join projects p on p.id = s.project_id ${AGG} where s.id = ${params.sessionId}`);
      if (!s || !(await canSee(principal!, ctx.db, s.project_id))) throw notFound('no such session');
      const reqs = await ctx.db.query<Record<string, unknown>>(sql`
        select * from llm_requests where runner_id = ${s.runner_id} and runtime = ${s.runtime} and session_id = ${s.session_id}
         order by at, id limit ${SESSION_REQUESTS_MAX + 1}`);
      return json({
        ...toSession(s),
        requests: reqs.slice(0, SESSION_REQUESTS_MAX).map((r) => ({
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
        })),
        requestsTruncated: reqs.length > SESSION_REQUESTS_MAX,
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/activity',
    summary: 'The activity feed of the projects you can see (sessions started, budget thresholds reached), newest first',
    tag: 'cost',
    access: 'user',
    query: z.strictObject({
      projectId: id.optional(),
      kind: z.string().regex(/^[a-z][a-z0-9_.]{0,63}$/, { message: 'must be an activity kind' }).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
      before: z.coerce.number().int().positive().optional().describe('The last item id of the previous page (nextBefore)'),
    }),
    async handler({ principal, query }, ctx) {
      if (query.projectId) await requireProjectRole(ctx.db, principal!, query.projectId, 'viewer');
      const where = [
        visibleProjects(principal!, sql`a.project_id`),
        query.projectId ? sql`a.project_id = ${query.projectId}` : sql`true`,
        query.kind ? sql`a.kind = ${query.kind}` : sql`true`,
        query.before ? sql`a.id < ${query.before}` : sql`true`,
      ];
      const rows = await ctx.db.query<{ id: string; project_id: string | null; kind: string; data: unknown; created_at: Date }>(sql`
        select a.* from activity_items a where ${sql.join(where, ' and ')} order by a.id desc limit ${query.limit + 1}`);
      const page = rows.slice(0, query.limit);
      return json({
        items: page.map((a) => ({ id: Number(a.id), projectId: a.project_id, kind: a.kind, data: a.data, createdAt: iso(a.created_at) })),
        nextBefore: rows.length > query.limit ? Number(page[page.length - 1].id) : null,
      });
    },
  }),
];
