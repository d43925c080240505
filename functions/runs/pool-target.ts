// Where a trigger's or a schedule's skill runs go (issue #37; docs/runner.md "Runner pools"): the four
// settings both share, as the API names them (validated here) and as their rows store them (sql/0030).
// The trigger and schedule schemas spread `poolTargetFields` into their create and patch bodies; the
// pool (functions/runs/pool.ts) reads the row fields when it queues a run.
import * as z from 'zod';
import { runnerTags } from '../../protocol/frames.ts';

export const DEFAULT_QUEUE_TIMEOUT_MINUTES = 30;
/** A day: a run that waited longer has lost whatever made it worth starting. */
export const MAX_QUEUE_TIMEOUT_MINUTES = 1440;

export const poolTargetFields = {
  target: z.enum(['primary', 'pool']).describe('primary: the project\'s runner (default); pool: any online runner of the project\'s pool with a free place, least loaded first'),
  targetTags: runnerTags.describe('Tags a pool runner must all have (pool target only)'),
  queueTimeoutMinutes: z
    .number()
    .positive()
    .max(MAX_QUEUE_TIMEOUT_MINUTES)
    .describe('A pool run that waits longer for a free runner ends failed with no_runner_available (minutes, fractions allowed; default 30)'),
  retryOnRunnerLoss: z.boolean().describe('A pool run lost with its runner (runner_lost) is tried once more on another pool runner, as a new run naming it (retryOf)'),
};

/** The settings as the API shows them. */
export interface PoolTarget {
  target: 'primary' | 'pool';
  targetTags: string[];
  queueTimeoutMinutes: number;
  retryOnRunnerLoss: boolean;
}

/** The columns of triggers and project_schedules that hold them. */
export interface PoolTargetRow {
  target: 'primary' | 'pool';
  target_tags: string[];
  queue_timeout_minutes: string | number;
  retry_on_runner_loss: boolean;
}

export const poolTargetOf = (r: PoolTargetRow): PoolTarget => ({
  target: r.target,
  targetTags: r.target_tags,
  queueTimeoutMinutes: Number(r.queue_timeout_minutes),
  retryOnRunnerLoss: r.retry_on_runner_loss,
});

/** A pool run's target settings as runs/pool.ts queuePoolRun takes them, from a trigger's or schedule's row. */
export const poolRunTarget = (r: PoolTargetRow) => ({
  targetTags: r.target_tags,
  queueTimeoutMinutes: Number(r.queue_timeout_minutes),
  retryOnLoss: r.retry_on_runner_loss,
});

/** The defaults of a create body (spread after poolTargetFields' shapes by the trigger and schedule schemas). */
export const poolTargetDefaults = {
  target: poolTargetFields.target.default('primary'),
  targetTags: poolTargetFields.targetTags.default([]),
  queueTimeoutMinutes: poolTargetFields.queueTimeoutMinutes.default(DEFAULT_QUEUE_TIMEOUT_MINUTES),
  retryOnRunnerLoss: poolTargetFields.retryOnRunnerLoss.default(false),
};
/** The same fields, each optional, for a patch body. */
export const poolTargetPatch = {
  target: poolTargetFields.target.optional(),
  targetTags: poolTargetFields.targetTags.optional(),
  queueTimeoutMinutes: poolTargetFields.queueTimeoutMinutes.optional(),
  retryOnRunnerLoss: poolTargetFields.retryOnRunnerLoss.optional(),
};

/**
 * The rule across the fields (docs/triggers.md, docs/schedules.md): targetTags and retryOnRunnerLoss mean
 * something for the pool target only, so given with `primary` they are refused (naming the field) rather
 * than silently ignored; switching to `primary` clears them. Tags are kept each once, sorted, as runner
 * tags are. Answers the settings to store and the problems by field.
 */
export function settlePoolTarget<T extends PoolTarget>(merged: T, given: Partial<PoolTarget>): { settled: T; problems: Record<string, string> } {
  const problems: Record<string, string> = {};
  if (merged.target === 'primary') {
    if (given.targetTags?.length) problems.targetTags = 'is only for the pool target';
    if (given.retryOnRunnerLoss) problems.retryOnRunnerLoss = 'is only for the pool target';
    return { settled: { ...merged, targetTags: [], retryOnRunnerLoss: false }, problems };
  }
  return { settled: { ...merged, targetTags: [...new Set(merged.targetTags)].sort() }, problems };
}
