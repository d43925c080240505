// Shapes of the cost API's requests (docs/cost.md, "Server"): price bodies, cost and session queries,
// time ranges and budget bodies, validated at the boundary; every refusal is a 400 naming its field.
import { ACTIVITY_KINDS, kindsOf } from '../../protocol/activity.ts';
import * as z from 'zod';
import { RUNTIMES } from '../../protocol/usage.ts';

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
export type PriceBody = z.output<typeof priceBody>;

const modelName = z.string().regex(/^[A-Za-z0-9._:@-]{1,100}$/, { message: 'must be 1-100 letters, digits or ._:@-' });
export const modelParams = z.strictObject({ model: modelName });
export const projectId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a project id' });
export const id = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be an id' });

// ---- time ranges ----

export const DATE = /^\d{4}-\d{2}-\d{2}$/;
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
export interface Range {
  from?: string;
  to?: string;
  tz: string;
}

// ---- reports ----

export const GROUPS = ['day', 'project', 'model', 'session', 'issue', 'pull_request', 'run'] as const;
export const costQuery = z.strictObject({
  groupBy: z.enum(GROUPS).default('day'),
  projectId: projectId.optional(),
  runtime: z.enum(RUNTIMES).optional(),
  ...range,
});
export type CostQuery = z.output<typeof costQuery>;

export const sessionsQuery = z.strictObject({
  projectId: id.optional(),
  runtime: z.enum(RUNTIMES).optional(),
  model: z.string().min(1).max(256).optional().describe('Sessions that used this model'),
  ...range,
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: id.optional().describe('The last session id of the previous page (nextBefore)'),
});
export type SessionsQuery = z.output<typeof sessionsQuery>;

export const activityQuery = z.strictObject({
  projectId: id.optional(),
  kind: z
    .union([z.string().max(2000), z.array(z.string().max(200)).max(50)])
    .transform((v, c) => kindsOf(v) ?? (c.addIssue({ code: 'custom', message: `must name activity kinds or families (pr.*): ${ACTIVITY_KINDS.join(', ')}` }), z.NEVER))
    .optional()
    .describe('Only these kinds: repeat it or give a comma list; a family such as pr.* names all its kinds'),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z.coerce.number().int().positive().optional().describe('The last item id of the previous page (nextBefore)'),
});
export type ActivityQuery = z.output<typeof activityQuery>;

// ---- budgets ----

export const budgetBody = z.strictObject({
  budgetUsd: z.number().finite().min(0).max(1_000_000_000).nullable().describe('Monthly budget in USD; null for none'),
  action: z.enum(['warn', 'stop']).describe('warn: notify at 80 % and 100 %; stop: also skip triggers and refuse new orchestrator rounds at 100 %'),
});

/** A spend cap in USD (docs/cost.md, "Caps"): positive, or null for none. */
export const capUsd = z.number().finite().positive().max(1_000_000).nullable();
