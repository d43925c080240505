// Project budgets (docs/cost.md, "Budgets"): a monthly amount in USD and an action, warn or stop.
// Spend is the month-to-date cost of the project's LLM requests (calendar month in UTC, by the time
// each request ran; requests of a model without a price add nothing and are listed as unpriced).
//   80 % and 100 %  → one notification per threshold and month, for the project's admins (the
//                     notifications list; no webhook event), and an activity item
//   stop, at 100 %  → budgetExceeded() is true: inbound triggers skip with `budget_exceeded`
//                     (triggers/fire.ts) and orchestrator.start is refused (runners/routes.ts)
// A budget of 0 is spent from the start.
import type { BudgetState } from '../../protocol/api/cost.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import { notify } from '../notifications/notify.ts';

export const THRESHOLDS = [80, 100] as const;
export const BUDGET_NOTIFICATION = 'budget.threshold';

/**
 * This month's running totals of project `p` (sql/0022_project_month_spend.sql, one row per runner that
 * worked for it this month), read instead of summing its requests.
 */
const THIS_MONTH = sql`from project_month_spend s where s.project_id = p.id and s.month = (date_trunc('month', now() at time zone 'UTC'))::date`;
const MONTH_SPEND = sql`coalesce((select sum(s.cost_usd) ${THIS_MONTH}), 0)`;

export type { BudgetState };

/** The project's budget and this month's spend so far; null when there is no such project. */
export async function budgetState(q: Queryable, projectId: string): Promise<BudgetState | null> {
  const [row] = await q.query<{ budget_usd: string | null; budget_action: 'warn' | 'stop'; month: string; spent: string; unpriced: number }>(budgetStateQuery(projectId));
  if (!row) return null;
  const budget = row.budget_usd === null ? null : Number(row.budget_usd);
  const spent = Number(row.spent);
  const exceeded = budget !== null && spent >= budget;
  return {
    budgetUsd: budget,
    action: row.budget_action,
    month: row.month,
    monthToDateUsd: spent,
    unpricedRequests: row.unpriced,
    percent: budget ? (spent / budget) * 100 : null,
    exceeded,
    stopped: exceeded && row.budget_action === 'stop',
  };
}

/** The statement of budgetState (exported for test/cost/budget-plan.test.ts). */
export const budgetStateQuery = (projectId: string) => sql`
  select p.budget_usd, p.budget_action, to_char(now() at time zone 'UTC', 'YYYY-MM') as month,
         ${MONTH_SPEND} as spent,
         (select coalesce(sum(s.unpriced), 0)::int ${THIS_MONTH}) as unpriced
    from projects p where p.id = ${projectId}`;

/** True when the project's budget is set to stop and this month's spend has reached it. */
export async function budgetExceeded(db: Queryable, projectId: string): Promise<boolean> {
  const [row] = await db.query<{ stopped: boolean }>(stoppedQuery(projectId));
  return row?.stopped ?? false;
}

/**
 * The statement of budgetExceeded, asked for every claim of an inbound trigger, every scheduled run and
 * every orchestrator.start, mostly of projects with no budget at all: the month's spend is read only when
 * the project has a budget whose action is stop (a CASE evaluates its branch only when reached), and
 * then from the running totals. Exported for test/cost/budget-plan.test.ts.
 */
export const stoppedQuery = (projectId: string) => sql`
  select case when p.budget_usd is null or p.budget_action <> 'stop' then false
              else ${MONTH_SPEND} >= p.budget_usd
         end as stopped
    from projects p where p.id = ${projectId}`;

/**
 * Tell the project's admins about each threshold this month's spend has reached and nobody was told
 * of yet (once per project, month and threshold, across replicas: the notice row is the claim).
 * Returns the thresholds newly notified.
 */
export async function checkBudget(db: Db, projectId: string): Promise<number[]> {
  return db.transaction(async (tx) => {
    const state = await budgetState(tx, projectId);
    if (!state || state.budgetUsd === null) return [];
    const reached = THRESHOLDS.filter((t) => state.monthToDateUsd >= (state.budgetUsd! * t) / 100);
    if (reached.length === 0) return [];
    const added = await tx.query<{ threshold: number }>(sql`
      insert into budget_notices (project_id, month, threshold, budget_usd, cost_usd)
      select ${projectId}, (date_trunc('month', now() at time zone 'UTC'))::date, x.t::int, ${state.budgetUsd}, ${state.monthToDateUsd}
        from jsonb_array_elements_text(${sql.json(reached)}) as x(t)
      on conflict do nothing
      returning threshold`);
    if (added.length === 0) return [];
    const [p] = await tx.query<{ name: string }>(sql`select name from projects where id = ${projectId}`);
    for (const { threshold } of added) {
      const data = {
        projectId,
        projectName: p.name,
        month: state.month,
        threshold,
        budgetUsd: state.budgetUsd,
        costUsd: state.monthToDateUsd,
        action: state.action,
        stopped: threshold === 100 && state.action === 'stop',
      };
      await notify(tx, { kind: BUDGET_NOTIFICATION, projectId, data });
      await tx.query(sql`insert into activity_items (project_id, kind, data) values (${projectId}, 'budget.threshold', ${sql.json(data)})`);
    }
    return added.map((a) => a.threshold).sort((a, b) => a - b);
  });
}

/** This month's notices of the project (budgetState's month), lowest threshold first. */
export const budgetNotices = (q: Queryable, projectId: string) =>
  q.query<{ threshold: number; notified_at: Date; cost_usd: string; budget_usd: string }>(sql`
    select threshold, notified_at, cost_usd, budget_usd from budget_notices
     where project_id = ${projectId} and month = (date_trunc('month', now() at time zone 'UTC'))::date order by threshold`);

/** The project's budget settings, the row locked (inside a transaction); null when there is no such project. */
export async function lockBudget(q: Queryable, projectId: string): Promise<{ budgetUsd: number | null; action: string } | null> {
  const [row] = await q.query<{ budget_usd: string | null; budget_action: string }>(sql`
    select budget_usd, budget_action from projects where id = ${projectId} for update`);
  return row ? { budgetUsd: row.budget_usd === null ? null : Number(row.budget_usd), action: row.budget_action } : null;
}

export async function setBudget(q: Queryable, projectId: string, b: { budgetUsd: number | null; action: 'warn' | 'stop' }): Promise<void> {
  await q.query(sql`update projects set budget_usd = ${b.budgetUsd}, budget_action = ${b.action}, updated_at = now() where id = ${projectId}`);
}
