// Answers of the cost API (docs/cost.md, "Server"): prices, cost reports, unpriced models and project
// budgets — the shapes functions/cost/routes.ts sends (declared in its `responses`, so the OpenAPI
// document shows them and CHECK_ANSWERS holds the handlers to them) and web-static/pages/cost*.ts read
// (type imports only, so zod stays out of the pages' bundle). Sessions and activity: ./sessions.ts.
import * as z from 'zod';
import { budgetAction, iso } from './common.ts';

const usdPerMTok = z.number();

/** Tokens of LLM requests by kind (as protocol/prices.ts TokenCounts). */
export const tokenCounts = z.object({
  inputTokens: z.number(), outputTokens: z.number(),
  cacheWrite5mTokens: z.number(), cacheWrite1hTokens: z.number(), cacheReadTokens: z.number(),
});

/** Token and cost sums of a set of LLM requests; reportedCostUsd is null when no runtime reported one. */
export const totalsAnswer = tokenCounts.extend({
  reasoningTokens: z.number(),
  costUsd: z.number(), reportedCostUsd: z.number().nullable(),
  requests: z.number().int(), unpricedRequests: z.number().int(),
});
export type Totals = z.output<typeof totalsAnswer>;

/** When the first and the last of a set of LLM requests were made. */
export const requestSpan = { firstAt: iso, lastAt: iso };

/** One version of a model's price, in USD per million tokens. */
export const priceAnswer = z.object({
  model: z.string(),
  inputUsdPerMTok: usdPerMTok,
  outputUsdPerMTok: usdPerMTok,
  cacheReadUsdPerMTok: usdPerMTok,
  cacheWrite5mUsdPerMTok: usdPerMTok,
  cacheWrite1hUsdPerMTok: usdPerMTok,
  above200k: z
    .object({ input: usdPerMTok.optional(), output: usdPerMTok.optional(), cacheWrite5m: usdPerMTok.optional(), cacheWrite1h: usdPerMTok.optional(), cacheRead: usdPerMTok.optional() })
    .nullable(),
  longContext: z.object({ above: z.number(), input: usdPerMTok, output: usdPerMTok, cacheWrite5m: usdPerMTok, cacheWrite1h: usdPerMTok, cacheRead: usdPerMTok }).nullable(),
  fastMultiplier: z.number().nullable(),
  effectiveFrom: z.string(),
  updatedAt: z.string(),
});
export type PriceAnswer = z.output<typeof priceAnswer>;

/** GET /api/prices: per model the version in force now, with how many versions it has. */
export const priceList = z.object({ prices: z.array(priceAnswer.extend({ versions: z.number().int() })) });
export type PriceList = z.output<typeof priceList>;

/** GET /api/prices/:model: the version in force now, with all versions, oldest first. */
export const priceDetail = priceAnswer.extend({ versions: z.array(priceAnswer) });
export type PriceDetail = z.output<typeof priceDetail>;

/** One group of GET /api/cost: label for projects (the name) and sessions (the runtime's id), with runtime. */
export const costGroup = totalsAnswer.extend({
  key: z.string().nullable(),
  label: z.string().nullable().optional(),
  runtime: z.string().nullable().optional(),
});
export type CostGroup = z.output<typeof costGroup>;

export const costAnswer = z.object({
  groupBy: z.enum(['day', 'project', 'model', 'session', 'issue', 'pull_request', 'run']),
  from: z.string().nullable(),
  to: z.string().nullable(),
  tz: z.string(),
  groups: z.array(costGroup),
  totals: totalsAnswer,
});
export type CostAnswer = z.output<typeof costAnswer>;

/** A model seen without a price: its requests' tokens (no cost: it is unknown). */
export const unknownModel = totalsAnswer.omit({ costUsd: true, unpricedRequests: true }).extend({
  model: z.string(),
  runtime: z.string(),
  ...requestSpan,
});
export type UnknownModel = z.output<typeof unknownModel>;
export const unknownModels = z.object({ models: z.array(unknownModel) });
export type UnknownModels = z.output<typeof unknownModels>;

/** A project's budget and this month's spend (functions/cost/budget.ts budgetState). */
export const budgetStateAnswer = z.object({
  budgetUsd: z.number().nullable(),
  action: budgetAction,
  /** The current month (YYYY-MM, UTC), its spend so far and its requests without a price. */
  ...{ month: z.string(), monthToDateUsd: z.number(), unpricedRequests: z.number().int() },
  /** Spend over budget in percent; null without a budget (or a budget of 0). */
  percent: z.number().nullable(),
  /** exceeded: over budget; stopped: the budget stops triggers and new orchestrator rounds now. */
  ...{ exceeded: z.boolean(), stopped: z.boolean() },
});
export type BudgetState = z.output<typeof budgetStateAnswer>;

/** GET/PUT /api/projects/:projectId/budget: the state with the notices sent this month. */
export const budgetAnswer = budgetStateAnswer.extend({
  projectId: z.string(),
  notices: z.array(z.object({ threshold: z.number().int(), notifiedAt: z.string(), costUsd: z.number(), budgetUsd: z.number() })),
});
export type BudgetAnswer = z.output<typeof budgetAnswer>;
