// The cost reports' statements (functions/cost/routes.ts and sessions.ts read as validate → call →
// present): cost grouped by day, project, model, session, issue, pull request or run; models without a
// price; agent sessions with their requests; the activity feed. Prices are prices.ts's, budgets budget.ts's.
// Everything is limited to the projects the caller may see (instance admins: all, including rows no
// project was attributed to).
import type { Runtime } from '../../protocol/usage.ts';
import type { Totals } from '../../protocol/api/cost.ts';
import type { Principal } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable, Sql } from '../lib/db/index.ts';
import { DATE } from './schema.ts';
import type { ActivityQuery, CostQuery, GROUPS, Range, SessionsQuery } from './schema.ts';

const n = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));

/** Rows (by `column`) of the projects the caller may see. */
export function visibleProjects(principal: Principal, column: Sql): Sql {
  const user = principal.user;
  return user.instanceAdmin ? sql`true` : sql`${column} in (select m.project_id from project_members m where m.user_id = ${user.id})`;
}

/** Rows the caller may see, of one project when `projectId` is given (the caller's role on it is checked before). */
const visibleIn = (principal: Principal, column: Sql, projectId: string | undefined): Sql[] => [
  visibleProjects(principal, column),
  projectId ? sql`${column} = ${projectId}` : sql`true`,
];

/** `column` within from/to (docs/cost.md: a date is a whole day in tz; `to` as a date is inclusive). */
export function inRange(column: Sql, q: Range): Sql {
  const parts: Sql[] = [];
  if (q.from) parts.push(DATE.test(q.from) ? sql`${column} >= (${q.from}::date)::timestamp at time zone ${q.tz}` : sql`${column} >= ${q.from}::timestamptz`);
  if (q.to) parts.push(DATE.test(q.to) ? sql`${column} < ((${q.to}::date) + 1)::timestamp at time zone ${q.tz}` : sql`${column} < ${q.to}::timestamptz`);
  return parts.length ? sql.join(parts, ' and ') : sql`true`;
}

/** The sums of requests `r`, read back with totals() (also the pull request record's, codehost/record.ts). */
export const TOTALS = sql`
  coalesce(sum(r.input_tokens), 0)::text as input_tokens, coalesce(sum(r.output_tokens), 0)::text as output_tokens,
  coalesce(sum(r.cache_write_5m_tokens), 0)::text as cache_write_5m_tokens, coalesce(sum(r.cache_write_1h_tokens), 0)::text as cache_write_1h_tokens,
  coalesce(sum(r.cache_read_tokens), 0)::text as cache_read_tokens, coalesce(sum(r.reasoning_tokens), 0)::text as reasoning_tokens,
  coalesce(sum(r.cost_usd), 0)::text as cost_usd, sum(r.reported_cost_usd)::text as reported_cost_usd,
  count(*)::int as requests, (count(*) filter (where r.cost_usd is null))::int as unpriced_requests`;

export const totals = (row: Record<string, unknown>): Totals => ({
  inputTokens: n(row.input_tokens),
  outputTokens: n(row.output_tokens),
  cacheWrite5mTokens: n(row.cache_write_5m_tokens),
  cacheWrite1hTokens: n(row.cache_write_1h_tokens),
  cacheReadTokens: n(row.cache_read_tokens),
  reasoningTokens: n(row.reasoning_tokens),
  costUsd: n(row.cost_usd),
  reportedCostUsd: row.reported_cost_usd == null ? null : Number(row.reported_cost_usd),
  requests: n(row.requests),
  unpricedRequests: n(row.unpriced_requests),
});

// ---- cost ----

/**
 * Attribution (docs/cost.md, "Attribution"): the request's own svc.* attributes first, then its
 * session's slot issue and run; a pull request through the branch (the run's, else the session's)
 * that a pr.opened event of the same runner and project names (the runner sends pr and branch in the
 * event's `data`, runner/fleet.ts fleetSpoolEvent; older test seeds put them at the top level).
 */
function groupKey(groupBy: (typeof GROUPS)[number], tz: string): Sql {
  switch (groupBy) {
    case 'day':
      return sql`to_char(r.at at time zone ${tz}, 'YYYY-MM-DD')`;
    case 'project':
      return sql`r.project_id`;
    case 'model':
      return sql`r.model`;
    case 'session':
      return sql`s.id`;
    case 'issue':
      return sql`coalesce(r.issue, s.issue)`;
    case 'run':
      return sql`coalesce(r.run_id, s.run_id)`;
    case 'pull_request':
      return sql`pr.number`;
  }
}

const PR_JOIN = sql`
  left join skill_runs sr on sr.id = coalesce(r.run_id, s.run_id) and sr.project_id = r.project_id
  left join lateral (
    select coalesce(e.payload -> 'data' -> 'pr', e.payload -> 'pr') ->> 'number' as number from runner_events e
     where e.kind = 'pr.opened' and e.runner_id = r.runner_id and e.payload ->> 'project' = r.project_id
       and coalesce(e.payload -> 'data' ->> 'branch', e.payload ->> 'branch') = coalesce(sr.branch, s.branch)
     order by e.ts desc limit 1) pr on true`;

/** GET /api/cost: a row per group (key, label and runtime where the grouping has them, the sums) and the sums of all. */
export async function costReport(q: Queryable, principal: Principal, query: CostQuery) {
  const where = sql.join(
    [...visibleIn(principal, sql`r.project_id`, query.projectId), query.runtime ? sql`r.runtime = ${query.runtime}` : sql`true`, inRange(sql`r.at`, query)],
    ' and ',
  );
  const from = sql`
    from llm_requests r
    left join agent_sessions s on s.runner_id = r.runner_id and s.runtime = r.runtime and s.session_id = r.session_id
    ${query.groupBy === 'pull_request' ? PR_JOIN : sql``}
    where ${where}`;
  const key = groupKey(query.groupBy, query.tz);
  const extra =
    query.groupBy === 'project'
      ? sql`, (select name from projects p where p.id = r.project_id) as label`
      : query.groupBy === 'session'
        ? sql`, min(s.session_id) as label, min(s.runtime) as runtime`
        : query.groupBy === 'model'
          ? sql`, min(r.runtime) as runtime`
          : sql``;
  const order = query.groupBy === 'day' ? sql`order by key` : sql`order by coalesce(sum(r.cost_usd), 0) desc, key nulls last`;
  const rows = await q.query<Record<string, unknown>>(sql`
    select ${key} as key ${extra}, ${TOTALS} ${from} group by 1 ${order}`);
  const [all] = await q.query<Record<string, unknown>>(sql`select ${TOTALS} ${from}`);
  return { rows, all };
}

/** Models of requests without a price, most requests first. */
export const unknownModelRows = (q: Queryable, principal: Principal) =>
  q.query<{ model: string; runtime: string; requests: number; first_at: Date; last_at: Date } & Record<string, unknown>>(sql`
    select r.model, min(r.runtime) as runtime, ${TOTALS}, min(r.at) as first_at, max(r.at) as last_at
      from llm_requests r where r.cost_usd is null and ${visibleProjects(principal, sql`r.project_id`)}
     group by r.model order by count(*) desc, r.model`);

// ---- sessions ----

export interface SessionRow {
  id: string;
  runner_id: string;
  runtime: Runtime;
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

/** A session with its project's name and the sums of its requests. */
const SESSIONS = sql`
  select s.*, p.name as project_name, agg.* from agent_sessions s left join projects p on p.id = s.project_id
  left join lateral (select ${TOTALS}
      from llm_requests r where r.runner_id = s.runner_id and r.runtime = s.runtime and r.session_id = s.session_id) agg on true`;

/** GET /api/sessions: newest first, one more than `limit` (so the caller knows there is a next page). */
export function sessionRows(q: Queryable, principal: Principal, query: SessionsQuery) {
  const where = [
    ...visibleIn(principal, sql`s.project_id`, query.projectId),
    query.runtime ? sql`s.runtime = ${query.runtime}` : sql`true`,
    query.model
      ? sql`(s.models @> ${sql.json([query.model])} or exists (select 1 from llm_requests r where r.runner_id = s.runner_id and r.runtime = s.runtime and r.session_id = s.session_id and r.model = ${query.model}))`
      : sql`true`,
    // A session overlaps the range: it ended after `from` and began before `to`.
    query.from ? inRange(sql`s.last_at`, { from: query.from, tz: query.tz }) : sql`true`,
    query.to ? inRange(sql`s.first_at`, { to: query.to, tz: query.tz }) : sql`true`,
    query.before ? sql`(s.first_at, s.id) < (select first_at, id from agent_sessions where id = ${query.before})` : sql`true`,
  ];
  return q.query<SessionRow & Record<string, unknown>>(sql`
    ${SESSIONS} where ${sql.join(where, ' and ')} order by s.first_at desc, s.id desc limit ${query.limit + 1}`);
}

export async function sessionRow(q: Queryable, id: string): Promise<(SessionRow & Record<string, unknown>) | null> {
  const [s] = await q.query<SessionRow & Record<string, unknown>>(sql`${SESSIONS} where s.id = ${id}`);
  return s ?? null;
}

/** A session's requests, oldest first, at most `max`. */
export const sessionRequests = (q: Queryable, s: SessionRow, max: number) =>
  q.query<Record<string, unknown>>(sql`
    select * from llm_requests where runner_id = ${s.runner_id} and runtime = ${s.runtime} and session_id = ${s.session_id}
     order by at, id limit ${max}`);

// ---- activity ----

/**
 * The activity items the caller may see (alias `a`): a project's to its members; a runner's (no
 * project) to the admins of the projects on that runner; instance admins everything.
 */
function activityVisible(principal: Principal): Sql {
  const user = principal.user;
  if (user.instanceAdmin) return sql`true`;
  return sql`(${visibleProjects(principal, sql`a.project_id`)} or (a.project_id is null and a.runner_id in (
    select p.runner_id from projects p join project_members m on m.project_id = p.id where m.user_id = ${user.id} and m.role = 'admin')))`;
}

/** GET /api/activity: newest first, one more than `limit`. */
export function activityRows(q: Queryable, principal: Principal, query: ActivityQuery) {
  const where = [
    activityVisible(principal),
    query.projectId ? sql`a.project_id = ${query.projectId}` : sql`true`,
    query.kind?.length ? sql`a.kind in (select jsonb_array_elements_text(${sql.json(query.kind)}))` : sql`true`,
    query.before ? sql`a.id < ${query.before}` : sql`true`,
  ];
  return q.query<{ id: string; project_id: string | null; runner_id: string | null; kind: string; data: Record<string, unknown>; created_at: Date }>(sql`
    select a.* from activity_items a where ${sql.join(where, ' and ')} order by a.id desc limit ${query.limit + 1}`);
}
