// Cost over HTTP (docs/cost.md, "Server"): the versioned price table (admins edit it; each edit is a
// new version effective from its time, so no stored cost changes), cost totals grouped by day,
// project, model, session, issue, pull request or run, models seen without a price, and project
// budgets. Everything is by project role: a caller sees the requests of projects they belong to
// (instance admins: all, including requests no project was attributed to). Statements: queries.ts
// (reports), prices.ts (the price table), budget.ts (budgets).
import { budgetAnswer, costAnswer, priceAnswer, priceDetail, priceList, unknownModels } from '../../protocol/api/cost.ts';
import type { BudgetAnswer, CostGroup } from '../../protocol/api/cost.ts';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { projectRoute } from '../lib/project-routes.ts';
import { budgetNotices, budgetState, checkBudget, lockBudget, setBudget } from './budget.ts';
import { costReport, totals, unknownModelRows } from './queries.ts';
import { reportRoute } from './report-route.ts';
import { current, insertPrice, priceRows, priceUnpriced, toPrice, versionsOf } from './prices.ts';
import type { PriceRow } from './prices.ts';
import { budgetBody, costQuery, modelParams, priceBody } from './schema.ts';

const TAG = 'cost';
const iso = (d: Date) => new Date(d).toISOString();

async function budgetOf(db: Queryable, id: string): Promise<BudgetAnswer> {
  const state = await budgetState(db, id);
  if (!state) throw notFound('no such project');
  const notices = await budgetNotices(db, id);
  return {
    projectId: id,
    ...state,
    notices: notices.map((x) => ({ threshold: x.threshold, notifiedAt: iso(x.notified_at), costUsd: Number(x.cost_usd), budgetUsd: Number(x.budget_usd) })),
  };
}

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/prices', tag: TAG, access: 'user',
    summary: 'LLM prices in USD per million tokens: per model the version in force now',
    responses: { 200: { description: 'per model the version in force now', schema: priceList } },
    async handler(_input, { db }) {
      const byModel = new Map<string, PriceRow[]>();
      for (const r of await priceRows(db)) byModel.set(r.model, [...(byModel.get(r.model) ?? []), r]);
      return json({ prices: [...byModel.values()].map((v) => ({ ...toPrice(current(v)!), versions: v.length })) });
    },
  }),
  route({ method: 'GET', path: '/api/prices/:model', tag: TAG, access: 'user', params: modelParams,
    summary: "One model's price in force now, with all its versions (oldest first)",
    responses: { 200: { description: 'the price with its versions', schema: priceDetail } },
    async handler({ params }, { db }) {
      const rows = await versionsOf(db, params.model);
      if (!rows.length) throw notFound(`no price for model ${params.model}`);
      return json({ ...toPrice(current(rows)!), versions: rows.map(toPrice) });
    },
  }),
  route({ method: 'PUT', path: '/api/prices/:model', tag: TAG, access: 'instanceAdmin', params: modelParams,
    summary: "Set a model's price: a new version effective from effectiveFrom (default now); costs of earlier requests never change",
    body: priceBody,
    responses: { 200: { description: 'the version saved', schema: priceAnswer } },
    async handler({ params, body, principal, requestId }, { db }) {
      const { model } = params;
      const out = await audited(
        db,
        (r: { before: unknown; after: unknown }) => ({ actor: principal!, action: 'price.set', target: { type: 'model_price', id: model }, diff: r, requestId }),
        async (tx) => {
          const before = current(await versionsOf(tx, model));
          const row = await insertPrice(tx, model, body, principal!.user.id);
          return { before: before && toPrice(before), after: toPrice(row) };
        },
      );
      for (const project of await priceUnpriced(db, model)) await checkBudget(db, project);
      return json(out.after);
    },
  }),
  reportRoute({
    path: '/api/cost',
    summary: 'LLM cost and tokens of the projects you can see, grouped by day, project, model, session, issue, pull_request or run',
    query: costQuery,
    responses: { 200: { description: 'the groups and the totals', schema: costAnswer } },
    async handler({ principal, query }, ctx) {
      const { rows, all } = await costReport(ctx.db, principal, query);
      return json({
        groupBy: query.groupBy,
        from: query.from ?? null,
        to: query.to ?? null,
        tz: query.tz,
        groups: rows.map(
          (r): CostGroup => ({
            key: r.key === null ? null : String(r.key),
            ...(r.label !== undefined ? { label: r.label as string | null } : {}),
            ...(r.runtime !== undefined ? { runtime: r.runtime as string | null } : {}),
            ...totals(r),
          }),
        ),
        totals: totals(all),
      });
    },
  }),
  route({ method: 'GET', path: '/api/cost/unknown-models', tag: TAG, access: 'user',
    summary: 'Models seen in LLM requests without a price (their cost is unknown, never $0): add a price to count them',
    responses: { 200: { description: 'the models without a price', schema: unknownModels } },
    async handler({ principal }, ctx) {
      const rows = await unknownModelRows(ctx.db, principal!);
      return json({
        models: rows.map((r) => {
          const { costUsd: _c, unpricedRequests: _u, ...t } = totals(r);
          return { model: r.model, runtime: r.runtime, ...t, firstAt: iso(r.first_at), lastAt: iso(r.last_at) };
        }),
      });
    },
  }),
  projectRoute('viewer', { method: 'GET', path: '/budget', tag: TAG,
    summary: "A project's monthly budget, this month's spend (UTC) and the notices sent",
    responses: { 200: { description: 'the budget and this month', schema: budgetAnswer } },
    handler: async ({ params }, ctx) => json(await budgetOf(ctx.db, params.projectId)),
  }),
  projectRoute('admin', { method: 'PUT', path: '/budget', tag: TAG,
    summary: "Set a project's monthly budget (USD) and action (warn or stop)",
    body: budgetBody,
    responses: { 200: { description: 'the budget as saved and this month', schema: budgetAnswer } },
    async handler({ params, body, principal, requestId }, ctx) {
      await audited(
        ctx.db,
        (r: { before: unknown; after: unknown }) => ({ actor: principal!, action: 'project.budget_set', target: { type: 'project', id: params.projectId }, diff: r, requestId }),
        async (tx) => {
          const before = await lockBudget(tx, params.projectId);
          if (!before) throw notFound('no such project');
          await setBudget(tx, params.projectId, body);
          return { before, after: { budgetUsd: body.budgetUsd, action: body.action } };
        },
      );
      await checkBudget(ctx.db, params.projectId); // a lowered budget may be reached already
      return json(await budgetOf(ctx.db, params.projectId));
    },
  }),
];
