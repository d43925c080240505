// Sub-shapes that several answers of the API share (protocol/api/*.ts), declared once so that the same
// field is the same shape everywhere: times, a role on a project, a row's stamps, the paging cursor, a
// budget's action and an outbound receiver's circuit breaker. Like the other answer modules, the pages
// import these as types only.
import * as z from 'zod';
import { ROLE_NAMES } from '../commands.ts';

/** A time: ISO 8601 text. */
export const iso = z.string();
/** Text (or a time) that may be absent: null. */
export const maybe = z.string().nullable();

/** A user's role on a project. */
export const role = z.enum(ROLE_NAMES);

/** When a row was made and last changed (null: not recorded). */
export const stamps = { createdAt: iso.nullable(), updatedAt: iso.nullable() };

/** The cursor of a list's next page; null on the last page. */
export const cursor = z.string().nullable();
/** The paging envelope of a list newest first: pass `nextBefore` as the next call's `before`. */
export const nextPage = { nextBefore: cursor };

/** What a project's budget does at 100 %: warn, or stop triggers and new orchestrator rounds too. */
export const budgetAction = z.enum(['warn', 'stop']);

/** The circuit breaker of an outbound receiver (a webhook, a chat channel): its state in code and words, and the failures in a row. */
export const circuitState = {
  circuit: z.enum(['closed', 'open', 'half-open']),
  circuitLabel: z.string(),
  consecutiveFailures: z.number().int(),
};

/** Where a trigger's or a schedule's skill runs go (functions/runs/pool-target.ts; docs/runner.md "Runner pools"). */
export const poolTarget = {
  target: z.enum(['primary', 'pool']),
  targetTags: z.array(z.string()),
  queueTimeoutMinutes: z.number(),
  retryOnRunnerLoss: z.boolean(),
};
