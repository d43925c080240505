// Project schedules as stored (sql/0012_project_schedules.sql; docs/schedules.md): the API's view of a
// row, and plan() — when a schedule is due, whether its pending time still runs or was missed.
import { Cron } from 'croner';
import type { ScheduleSettings } from './schema.ts';
import { poolTargetOf } from '../runs/pool-target.ts';
import type { PoolTargetRow } from '../runs/pool-target.ts';
import type { ScheduleAnswer } from '../../protocol/api/schedules.ts';

export interface ScheduleRow extends PoolTargetRow {
  id: string;
  project_id: string;
  name: string;
  cron: string;
  timezone: string;
  skill: string;
  args: string[];
  profile: string | null;
  model: string | null;
  output: 'report' | 'pull_request';
  enabled: boolean;
  disabled_reason: string | null;
  cap_usd: string | null;
  consecutive_failures: number;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_result: 'started' | 'succeeded' | 'failed' | 'skipped' | 'cancelled' | null;
  last_reason: string | null;
  last_detail: string | null;
  last_run_id: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

/** What a run of a schedule came to (schedules/runner.ts), also the answer of "Run now". */
export interface RunOutcome {
  scheduledFor: string;
  result: 'started' | 'failed' | 'skipped';
  reason: string | null;
  detail: string | null;
  runId: string | null;
}

/** The job_runs name a schedule's due times are claimed under (functions/jobs/scheduler.ts claimAndRun). */
export const jobName = (scheduleId: string) => `schedule:${scheduleId}`;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export const settingsOf = (r: ScheduleRow): ScheduleSettings => ({
  name: r.name,
  cron: r.cron,
  timezone: r.timezone,
  skill: r.skill,
  args: r.args,
  profile: r.profile,
  model: r.model,
  output: r.output,
  enabled: r.enabled,
  capUSD: r.cap_usd === null ? null : Number(r.cap_usd),
  ...poolTargetOf(r),
});

/** The API's view of a schedule (protocol/api/schedules.ts). */
export function toSchedule(r: ScheduleRow): ScheduleAnswer {
  return {
    id: r.id,
    projectId: r.project_id,
    ...settingsOf(r),
    disabledReason: r.disabled_reason,
    consecutiveFailures: r.consecutive_failures,
    nextRunAt: r.enabled ? iso(r.next_run_at) : null,
    lastRun: r.last_run_at
      ? { scheduledFor: iso(r.last_run_at), result: r.last_result, reason: r.last_reason, detail: r.last_detail, runId: r.last_run_id, runUrl: r.last_run_id ? `/api/runs/${encodeURIComponent(r.last_run_id)}` : null }
      : null,
    createdBy: r.created_by,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

/** The schedule's first time after `nowMs`, in its time zone; null when the pattern has no further time. */
export function nextTime(cron: string, timezone: string, nowMs: number): Date | null {
  return new Cron(cron, { timezone, paused: true }).nextRun(new Date(nowMs));
}

export interface Plan {
  /** The pending time to run now, or null. */
  run: Date | null;
  /** The pending time that was missed by more than one interval (not run), or null. */
  missed: Date | null;
  /** What becomes the pending time. */
  next: Date | null;
}

/**
 * A schedule whose pending time `pending` has come (docs/schedules.md, "Missed runs"): it runs once if it
 * is less than one interval late — now is before the time that follows it — else it is recorded as
 * missed and not run; either way the next pending time is the first one after now, so several missed
 * times never run one after another.
 */
export function plan(cron: string, timezone: string, pending: Date, nowMs: number): Plan {
  if (pending.getTime() > nowMs) return { run: null, missed: null, next: pending };
  const c = new Cron(cron, { timezone, paused: true });
  const following = c.nextRun(pending);
  const next = c.nextRun(new Date(nowMs));
  const inTime = following === null || nowMs < following.getTime();
  return { run: inTime ? pending : null, missed: inTime ? null : pending, next };
}
