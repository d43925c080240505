// Answers of the schedules API (docs/schedules.md): the shapes functions/schedules/routes.ts and
// functions/jobs/routes.ts send (declared in their `responses`, so the OpenAPI document shows them and
// CHECK_ANSWERS holds the handlers to them) and web-static/pages/schedules.ts reads (type imports only,
// so zod stays out of the pages' bundle).
import * as z from 'zod';
import { iso, poolTarget, stamps } from './common.ts';

const result = z.enum(['started', 'succeeded', 'failed', 'skipped', 'cancelled']);
/** What became of a scheduled run: why it did not start (a code and in words), or the run it started. */
const outcome = { reason: z.string().nullable(), detail: z.string().nullable(), runId: z.string().nullable() };

/** A project schedule with its next run and last result. */
export const scheduleAnswer = z.object({
  id: z.string(),
  projectId: z.string(),
  name: z.string(),
  cron: z.string(),
  timezone: z.string(),
  skill: z.string(),
  args: z.array(z.string()),
  profile: z.string().nullable(),
  model: z.string().nullable(),
  output: z.enum(['report', 'pull_request']),
  enabled: z.boolean(),
  /** The cap of each run it starts (docs/cost.md, "Caps"); null: the project's perRunUSD. */
  capUSD: z.number().nullable(),
  ...poolTarget,
  disabledReason: z.string().nullable(),
  consecutiveFailures: z.number().int(),
  nextRunAt: iso.nullable(),
  lastRun: z.object({ scheduledFor: iso.nullable(), result: result.nullable(), ...outcome, runUrl: z.string().nullable() }).nullable(),
  createdBy: z.string(),
  ...stamps,
});
export type ScheduleAnswer = z.output<typeof scheduleAnswer>;

export const scheduleList = z.object({ schedules: z.array(scheduleAnswer) });

/** "Run now": what the runner answered for this run. */
export const scheduleRunAnswer = z.object({
  scheduleId: z.string(),
  scheduledFor: iso,
  result: z.enum(['started', 'failed', 'skipped']),
  ...outcome,
});
export type ScheduleRunAnswer = z.output<typeof scheduleRunAnswer>;

/** A system job (instance admins) beside the project schedules on GET /api/schedules. */
export const jobAnswer = z.object({
  name: z.string(),
  kind: z.literal('system'),
  description: z.string(),
  cron: z.string(),
  nextRunAt: iso.nullable(),
  lastRun: z
    .object({ scheduledFor: iso, status: z.string(), attempt: z.number().int(), startedAt: iso, finishedAt: iso.nullable(), result: z.unknown(), error: z.string().nullable() })
    .nullable(),
});
export type JobAnswer = z.output<typeof jobAnswer>;

/** GET /api/schedules: system jobs (empty for anyone but instance admins) and the caller's projects' schedules. */
export const schedulesOverview = z.object({
  jobs: z.array(jobAnswer),
  schedules: z.array(scheduleAnswer.extend({ kind: z.literal('project'), projectName: z.string() })),
});
export type SchedulesOverview = z.output<typeof schedulesOverview>;
