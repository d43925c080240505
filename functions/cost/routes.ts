// Cost over HTTP (docs/cost.md, "Server"): the versioned price table (admins edit it; each edit is a
// new version effective from its time, so no stored cost changes), cost totals grouped by day,
// project, model, session, issue, pull request or run, models seen without a price, and project
// budgets. Everything is by project role: a caller sees the requests of projects they belong to
// (instance admins: all, including requests no project was attributed to).
import * as z from 'zod';
import { findPrice } from '../../protocol/prices.ts';
import { audited } from '../audit/audit.ts';
import { requireProjectRole } from '../auth/auth.ts';
import { route } from '../lib/context.ts';
import type { Principal, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { Sql } from '../lib/db/port.ts';
import { json, notFound } from '../lib/errors.ts';
import { budgetState, checkBudget } from './budget.ts';
import { loadPrices, priceRequest, toVersion } from './prices.ts';
import type { PriceRow } from './prices.ts';

const price = z.number().finite().min(0).max(1_000_000);
export const priceBody = z.strictObject({
  inputUsdPerMTok: price,
  outputUsdPerMTok: price,
  cacheReadUsdPerMTok: price.default(0),
  cacheWrite5mUsdPerMTok: price.default(0).describe('5-minute cache writes'),
  cacheWrite1hUsdPerMTok: price.default(0).describe('1-hour cache writes'),
  above200k: z
    .strictObject({ input: price.optional(), output: price.optional(), cacheWrite5m: price.optional(), cacheWrite1h: price.optional(), cacheRead: price.optional() })
    .nullable()
    .default(null)
    .describe("Prices of each term's tokens beyond 200,000 in one request"),
  longContext: z
    .strictObject({ above: z.number().int().positive(), input: price, output: price, cacheWrite5m: price, cacheWrite1h: price, cacheRead: price })
    .nullable()
    .default(null)
    .describe("Prices for a whole request whose input (cached included) is over `above` tokens (OpenAI's long context)"),
  fastMultiplier: z.number().finite().positive().max(100).nullable().default(null).describe('Multiplier for fast-mode requests (1 when null, as ccusage)'),
  effectiveFrom: z.iso.datetime({ offset: true }).optional().describe('When this version takes effect; default now. Earlier requests keep their cost.'),
});
const modelName = z.string().regex(/^[A-Za-z0-9._:@-]{1,100}$/, { message: 'must be 1-100 letters, digits or ._:@-' });
const modelParams = z.strictObject({ model: modelName });
const projectId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a project id' });

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const n = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));

const toPrice = (r: PriceRow) => {
  const v = toVersion(r);
  return {
    model: v.model,
    inputUsdPerMTok: v.input,
    outputUsdPerMTok: v.output,
    cacheReadUsdPerMTok: v.cacheRead,
    cacheWrite5mUsdPerMTok: v.cacheWrite5m,
    cacheWrite1hUsdPerMTok: v.cacheWrite1h,
    above200k: v.above200k ?? null,
    longContext: v.longContext ?? null,
    fastMultiplier: v.fastMultiplier ?? null,
    effectiveFrom: v.effectiveFrom.toISOString(),
    updatedAt: iso(r.updated_at)!,
  };
};

/** The version shown as a model's price: the newest in force now, else (only future ones) the next. */
function current(rows: PriceRow[], now = Date.now()): PriceRow | null {
  const past = rows.filter((r) => new Date(r.effective_from).getTime() <= now);
  return past.length ? past[past.length - 1] : (rows[0] ?? null);
}

async function versionsOf(db: Queryable, model: string): Promise<PriceRow[]> {
  return db.query<PriceRow>(sql`select * from model_prices where model = ${model} order by effective_from`);
}

/**
 * Requests that had no price and now have one (a price added or made effective earlier): priced now.
 * Costs already stored are never changed. Returns the projects whose spend grew.
 */
async function priceUnpriced(db: Db, model: string): Promise<Set<string>> {
  const versions = await loadPrices(db);
  const mine = versions.filter((v) => v.model === model);
  const models = (await db.query<{ model: string }>(sql`select distinct model from llm_requests where cost_usd is null`))
    .map((r) => r.model)
    .filter((m) => findPrice(m, mine) !== null);
  const touched = new Set<string>();
  if (models.length === 0) return touched;
  const rows = await db.query<{ id: string; model: string; at: Date; speed: 'fast' | 'standard' | null; project_id: string | null } & Record<string, string>>(sql`
    select id, model, at, speed, project_id, input_tokens, output_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_read_tokens
      from llm_requests where cost_usd is null and model in (select jsonb_array_elements_text(${sql.json(models)}))`);
  for (const r of rows) {
    const tokens = {
      inputTokens: n(r.input_tokens),
      outputTokens: n(r.output_tokens),
      cacheWrite5mTokens: n(r.cache_write_5m_tokens),
      cacheWrite1hTokens: n(r.cache_write_1h_tokens),
      cacheReadTokens: n(r.cache_read_tokens),
    };
    const { costUsd, price: p } = priceRequest(versions, r.model, new Date(r.at), tokens, r.speed);
    if (costUsd === null || !p) continue;
    await db.query(sql`
      update llm_requests set cost_usd = ${costUsd}, price_model = ${p.model}, price_effective_from = ${p.effectiveFrom}, updated_at = now()
       where id = ${r.id} and cost_usd is null`);
    if (r.project_id) touched.add(r.project_id);
  }
  return touched;
}

/** Requests (alias r) of the projects the caller may see. */
export function visibleProjects(principal: Principal, column: Sql): Sql {
  const user = principal.user;
  return user.instanceAdmin ? sql`true` : sql`${column} in (select m.project_id from project_members m where m.user_id = ${user.id})`;
}

// ---- time ranges ----

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const bound = z.union([z.iso.datetime({ offset: true }), z.string().regex(DATE, { message: 'must be YYYY-MM-DD or an ISO 8601 time' })]);
const timeZone = z.string().refine(
  (tz) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: tz });
      return /^[A-Za-z_+\-/0-9]{1,64}$/.test(tz);
    } catch {
      return false;
    }
  },
  { message: 'must be an IANA time zone, e.g. UTC or Europe/Berlin' },
);
export const range = {
  from: bound.optional().describe('Start, inclusive: an ISO time, or YYYY-MM-DD (midnight in tz)'),
  to: bound.optional().describe('End: an ISO time (exclusive), or YYYY-MM-DD (that whole day included, in tz)'),
  tz: timeZone.default('UTC').describe('Time zone of days and of YYYY-MM-DD bounds'),
};

/** `column` within from/to (docs/cost.md: a date is a whole day in tz; `to` as a date is inclusive). */
export function inRange(column: Sql, q: { from?: string; to?: string; tz: string }): Sql {
  const parts: Sql[] = [];
  if (q.from) parts.push(DATE.test(q.from) ? sql`${column} >= (${q.from}::date)::timestamp at time zone ${q.tz}` : sql`${column} >= ${q.from}::timestamptz`);
  if (q.to) parts.push(DATE.test(q.to) ? sql`${column} < ((${q.to}::date) + 1)::timestamp at time zone ${q.tz}` : sql`${column} < ${q.to}::timestamptz`);
  return parts.length ? sql.join(parts, ' and ') : sql`true`;
}

// ---- cost ----

export const GROUPS = ['day', 'project', 'model', 'session', 'issue', 'pull_request', 'run'] as const;
const costQuery = z.strictObject({
  groupBy: z.enum(GROUPS).default('day'),
  projectId: projectId.optional(),
  runtime: z.enum(['claude', 'codex']).optional(),
  ...range,
});

const TOTALS = sql`
  coalesce(sum(r.input_tokens), 0)::text as input_tokens, coalesce(sum(r.output_tokens), 0)::text as output_tokens,
  coalesce(sum(r.cache_write_5m_tokens), 0)::text as cache_write_5m_tokens, coalesce(sum(r.cache_write_1h_tokens), 0)::text as cache_write_1h_tokens,
  coalesce(sum(r.cache_read_tokens), 0)::text as cache_read_tokens, coalesce(sum(r.reasoning_tokens), 0)::text as reasoning_tokens,
  coalesce(sum(r.cost_usd), 0)::text as cost_usd, sum(r.reported_cost_usd)::text as reported_cost_usd,
  count(*)::int as requests, (count(*) filter (where r.cost_usd is null))::int as unpriced_requests`;

export const totals = (row: Record<string, unknown>) => ({
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

/**
 * Attribution (docs/cost.md, "Attribution"): the request's own svc.* attributes first, then its
 * session's slot issue and run; a pull request through the branch (the run's, else the session's)
 * that a pr.opened event of the same runner and project names.
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
    select e.payload -> 'pr' ->> 'number' as number from runner_events e
     where e.kind = 'pr.opened' and e.runner_id = r.runner_id and e.payload ->> 'project' = r.project_id
       and e.payload ->> 'branch' = coalesce(sr.branch, s.branch)
     order by e.ts desc limit 1) pr on true`;

// ---- budgets ----

const budgetBody = z.strictObject({
  budgetUsd: z.number().finite().min(0).max(1_000_000_000).nullable().describe('Monthly budget in USD; null for none'),
  action: z.enum(['warn', 'stop']).describe('warn: notify at 80 % and 100 %; stop: also skip triggers and refuse new orchestrator rounds at 100 %'),
});

async function budgetAnswer(db: Queryable, id: string) {
  const state = await budgetState(db, id);
  if (!state) throw notFound('no such project');
  const notices = await db.query<{ threshold: number; notified_at: Date; cost_usd: string; budget_usd: string }>(sql`
    select threshold, notified_at, cost_usd, budget_usd from budget_notices
     where project_id = ${id} and month = (date_trunc('month', now() at time zone 'UTC'))::date order by threshold`);
  return {
    projectId: id,
    ...state,
    notices: notices.map((x) => ({ threshold: x.threshold, notifiedAt: iso(x.notified_at), costUsd: Number(x.cost_usd), budgetUsd: Number(x.budget_usd) })),
  };
}

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/prices',
    summary: 'LLM prices in USD per million tokens: per model the version in force now',
    tag: 'cost',
    access: 'user',
    async handler(_input, { db }) {
      const rows = await db.query<PriceRow>(sql`select * from model_prices order by model, effective_from`);
      const byModel = new Map<string, PriceRow[]>();
      for (const r of rows) byModel.set(r.model, [...(byModel.get(r.model) ?? []), r]);
      return json({ prices: [...byModel.values()].map((v) => ({ ...toPrice(current(v)!), versions: v.length })) });
    },
  }),
  route({
    method: 'GET',
    path: '/api/prices/:model',
    summary: "One model's price in force now, with all its versions (oldest first)",
    tag: 'cost',
    access: 'user',
    params: modelParams,
    async handler({ params }, { db }) {
      const rows = await versionsOf(db, params.model);
      if (!rows.length) throw notFound(`no price for model ${params.model}`);
      return json({ ...toPrice(current(rows)!), versions: rows.map(toPrice) });
    },
  }),
  route({
    method: 'PUT',
    path: '/api/prices/:model',
    summary: "Set a model's price: a new version effective from effectiveFrom (default now); costs of earlier requests never change",
    tag: 'cost',
    access: 'instanceAdmin',
    params: modelParams,
    body: priceBody,
    async handler({ params, body: p, principal, requestId }, { db }) {
      const { model } = params;
      const from = p.effectiveFrom ? new Date(p.effectiveFrom) : null;
      const out = await audited(
        db,
        (r: { before: unknown; after: unknown }) => ({ actor: principal!, action: 'price.set', target: { type: 'model_price', id: model }, diff: r, requestId }),
        async (tx) => {
          const before = current(await versionsOf(tx, model));
          const [row] = await tx.query<PriceRow>(sql`
            insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok,
                                      cache_write_1h_usd_per_mtok, above_200k, long_context, fast_multiplier, effective_from, created_by)
            values (${model}, ${p.inputUsdPerMTok}, ${p.outputUsdPerMTok}, ${p.cacheReadUsdPerMTok}, ${p.cacheWrite5mUsdPerMTok},
                    ${p.cacheWrite1hUsdPerMTok}, ${sql.json(p.above200k)}, ${sql.json(p.longContext)}, ${p.fastMultiplier}, coalesce(${from}::timestamptz, now()), ${principal!.user.id})
            on conflict (model, effective_from) do update set
              input_usd_per_mtok = excluded.input_usd_per_mtok, output_usd_per_mtok = excluded.output_usd_per_mtok,
              cache_read_usd_per_mtok = excluded.cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok = excluded.cache_write_5m_usd_per_mtok,
              cache_write_1h_usd_per_mtok = excluded.cache_write_1h_usd_per_mtok, above_200k = excluded.above_200k,
              long_context = excluded.long_context, fast_multiplier = excluded.fast_multiplier, created_by = excluded.created_by, updated_at = now()
            returning *`);
          return { before: before && toPrice(before), after: toPrice(row) };
        },
      );
      for (const project of await priceUnpriced(db, model)) await checkBudget(db, project);
      return json(out.after);
    },
  }),
  route({
    method: 'GET',
    path: '/api/cost',
    summary: 'LLM cost and tokens of the projects you can see, grouped by day, project, model, session, issue, pull_request or run',
    tag: 'cost',
    access: 'user',
    query: costQuery,
    async handler({ principal, query }, ctx) {
      if (query.projectId) await requireProjectRole(ctx.db, principal!, query.projectId, 'viewer');
      const where = sql.join(
        [
          visibleProjects(principal!, sql`r.project_id`),
          query.projectId ? sql`r.project_id = ${query.projectId}` : sql`true`,
          query.runtime ? sql`r.runtime = ${query.runtime}` : sql`true`,
          inRange(sql`r.at`, query),
        ],
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
            : sql``;
      const order = query.groupBy === 'day' ? sql`order by key` : sql`order by coalesce(sum(r.cost_usd), 0) desc, key nulls last`;
      const rows = await ctx.db.query<Record<string, unknown>>(sql`
        select ${key} as key ${extra}, ${TOTALS} ${from} group by 1 ${order}`);
      const [all] = await ctx.db.query<Record<string, unknown>>(sql`select ${TOTALS} ${from}`);
      return json({
        groupBy: query.groupBy,
        from: query.from ?? null,
        to: query.to ?? null,
        tz: query.tz,
        groups: rows.map((r) => ({
          key: r.key === null ? null : String(r.key),
          ...(r.label !== undefined ? { label: r.label } : {}),
          ...(r.runtime !== undefined ? { runtime: r.runtime } : {}),
          ...totals(r),
        })),
        totals: totals(all),
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/cost/unknown-models',
    summary: 'Models seen in LLM requests without a price (their cost is unknown, never $0): add a price to count them',
    tag: 'cost',
    access: 'user',
    async handler({ principal }, ctx) {
      const rows = await ctx.db.query<{ model: string; runtime: string; requests: number; first_at: Date; last_at: Date } & Record<string, unknown>>(sql`
        select r.model, min(r.runtime) as runtime, ${TOTALS}, min(r.at) as first_at, max(r.at) as last_at
          from llm_requests r where r.cost_usd is null and ${visibleProjects(principal!, sql`r.project_id`)}
         group by r.model order by count(*) desc, r.model`);
      return json({
        models: rows.map((r) => {
          const { costUsd: _c, unpricedRequests: _u, ...t } = totals(r);
          return { model: r.model, runtime: r.runtime, ...t, firstAt: iso(r.first_at), lastAt: iso(r.last_at) };
        }),
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/projects/:projectId/budget',
    summary: "A project's monthly budget, this month's spend (UTC) and the notices sent",
    tag: 'cost',
    access: { projectRole: 'viewer', param: 'projectId' },
    params: z.strictObject({ projectId }),
    async handler({ params }, ctx) {
      return json(await budgetAnswer(ctx.db, params.projectId));
    },
  }),
  route({
    method: 'PUT',
    path: '/api/projects/:projectId/budget',
    summary: "Set a project's monthly budget (USD) and action (warn or stop)",
    tag: 'cost',
    access: { projectRole: 'admin', param: 'projectId' },
    params: z.strictObject({ projectId }),
    body: budgetBody,
    async handler({ params, body, principal, requestId }, ctx) {
      await audited(
        ctx.db,
        (r: { before: unknown; after: unknown }) => ({ actor: principal!, action: 'project.budget_set', target: { type: 'project', id: params.projectId }, diff: r, requestId }),
        async (tx) => {
          const [before] = await tx.query<{ budget_usd: string | null; budget_action: string }>(sql`
            select budget_usd, budget_action from projects where id = ${params.projectId} for update`);
          if (!before) throw notFound('no such project');
          await tx.query(sql`update projects set budget_usd = ${body.budgetUsd}, budget_action = ${body.action}, updated_at = now() where id = ${params.projectId}`);
          return {
            before: { budgetUsd: before.budget_usd === null ? null : Number(before.budget_usd), action: before.budget_action },
            after: { budgetUsd: body.budgetUsd, action: body.action },
          };
        },
      );
      await checkBudget(ctx.db, params.projectId); // a lowered budget may be reached already
      return json(await budgetAnswer(ctx.db, params.projectId));
    },
  }),
];
