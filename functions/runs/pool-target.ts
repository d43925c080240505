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
