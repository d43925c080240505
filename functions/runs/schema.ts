// Shapes of skill runs (docs/skill-runs.md): the runner's skill_run.* event payloads as the server
// reads them, and the API's answers (GET /api/runs, GET /api/runs/:runId) for validation and OpenAPI.
import * as z from 'zod';
import { RUN_STATES } from '../../protocol/runs.ts';

// The same rules as the skill.run command's arguments (protocol/commands.ts), checked at save time;
// triggers and project schedules (functions/triggers/schema.ts, functions/schedules/schema.ts) use them.
export const skill = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a skill name (1–64 of A-Z a-z 0-9 _ -)' });
export const profile = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a profile id (1–64 of A-Z a-z 0-9 _ -)' });
export const model = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/\[\]-]{0,99}$/, { message: 'must be a model name (letters, digits, . _ : / [ ] -)' });

export const runId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a run id' });
const short = (max: number) => z.string().transform((s) => s.slice(0, max));
const time = z.iso.datetime({ offset: true });

const pullRequest = z.object({
  branch: short(255),
  base: short(64),
  head: short(64),
  commits: z.number().int().nonnegative(),
  files: z.number().int().nonnegative(),
  patchBytes: z.number().int().nonnegative(),
  patchSha256: short(64),
  /** The pull request the runner opened from the branch, or why it could not. */
  url: z.string().max(2048).refine((u) => /^https?:\/\//.test(u), { message: 'must be an http(s) URL' }).optional(),
  number: z.number().int().positive().optional(),
  openError: short(2000).optional(),
});

export const stateEventPayload = z.object({
  runId,
  project: z.string().max(64),
  skill: short(64),
  args: z.array(z.string()).max(64),
  output: z.enum(['report', 'pull_request']),
  profile: short(64).default(''),
  runtime: short(32).default(''),
  model: short(100).optional(),
  timeoutSec: z.number().int().positive().optional(),
  createdAt: time,
  branch: short(255).optional(),
  state: z.enum(RUN_STATES),
  at: time,
  error: short(2000).optional(),
  startedAt: time.optional(),
  endedAt: time.optional(),
  result: z
    .object({
      report: z.string().nullable(),
      reportTruncated: z.boolean().default(false),
      exitCode: z.number().int().nullable(),
      durationMs: z.number().nullable(),
      sessionId: short(200).nullable(),
      costUsd: z.number().nullable(),
      usage: z.record(z.string(), z.number()).nullable(),
      pullRequest: pullRequest.nullable(),
      patchError: short(2000).optional(),
    })
    .optional(),
});
export type StateEventPayload = z.infer<typeof stateEventPayload>;

export const progressEventPayload = z.object({
  runId,
  lines: z.array(z.object({ seq: z.number().int().positive(), text: short(1000) })).max(500),
});

export const patchEventPayload = z.object({
  runId,
  bytes: z.number().int().nonnegative(),
  sha256: short(64),
  text: z.string(),
  truncated: z.boolean(),
});

// ---- API answers ----

const runSummary = z.object({
  id: z.string(),
  projectId: z.string(),
  runnerId: z.string(),
  skill: z.string(),
  args: z.array(z.string()),
  output: z.enum(['report', 'pull_request']),
  profileId: z.string(),
  runtime: z.string(),
  model: z.string().nullable(),
  timeoutSec: z.number().nullable(),
  state: z.enum(RUN_STATES),
  error: z.string().nullable(),
  branch: z.string().nullable(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  updatedAt: z.string(),
  costUsd: z.number().nullable(),
  progressLines: z.number(),
  lastProgress: z.string().nullable(),
});
export const runList = z.object({ runs: z.array(runSummary), nextBefore: z.string().nullable() });
export const runDetail = runSummary.extend({
  report: z.string().nullable(),
  reportTruncated: z.boolean(),
  exitCode: z.number().nullable(),
  durationMs: z.number().nullable(),
  sessionId: z.string().nullable(),
  usage: z.record(z.string(), z.number()).nullable(),
  pullRequest: pullRequest.nullable(),
  patch: z.string().nullable().describe('At most 128 KiB of the patch; the full patch is runs/<runId>/patch.diff on the runner'),
  patchBytes: z.number().nullable().describe('Size of the full patch'),
  patchSha256: z.string().nullable(),
  patchTruncated: z.boolean().describe('True when the patch here is cut (it was larger than 128 KiB)'),
  progress: z.array(z.object({ seq: z.number(), text: z.string() })),
});

/** A run that did not start (GET /api/failed-starts; runs/start-failures.ts). */
const failedStart = z.object({
  id: z.string(),
  projectId: z.string(),
  source: z.enum(['trigger', 'schedule']),
  sourceId: z.string(),
  sourceName: z.string(),
  action: z.enum(['skill', 'next_round']),
  skill: z.string().nullable(),
  reason: z.string().describe('no_profile, runner_offline, command_refused, command_timeout, budget_exceeded, creator_not_authorized, interrupted'),
  words: z.string().describe('The reason in words'),
  remedy: z.string().nullable(),
  detail: z.string().nullable().describe("The runner's or server's own message"),
  deliveryId: z.string().nullable(),
  createdAt: z.string(),
});
export const failedStartList = z.object({ failedStarts: z.array(failedStart), nextBefore: z.string().nullable() });
