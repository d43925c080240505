// Answers of the runs API (docs/skill-runs.md): GET /api/runs, GET /api/runs/:runId and GET
// /api/failed-starts as functions/runs/routes.ts sends them (declared in its `responses`, so the OpenAPI
// document shows them and CHECK_ANSWERS holds the handlers to them) and web-static/pages/runs.ts reads
// (type imports only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { RUN_STATES } from '../runs.ts';
import { iso, nextPage } from './common.ts';

const short = (max: number) => z.string().transform((s) => s.slice(0, max));

/** A run's pull request as the runner reports it (skill_run.state's result) and the API answers it. */
export const pullRequest = z.object({
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

const runSummary = z.object({
  id: z.string(),
  projectId: z.string(),
  runnerId: z.string().nullable().describe('The runner that holds the run; null while a pool run waits in the queue'),
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
  createdAt: iso, startedAt: iso.nullable(), finishedAt: iso.nullable(), updatedAt: iso,
  costUsd: z.number().nullable(),
  progressLines: z.number(),
  lastProgress: z.string().nullable(),
  reason: z
    .string()
    .nullable()
    .describe('Why the server ended the run itself: no_runner_available, runner_lost, budget_exceeded, creator_not_authorized, interrupted (null: the runner reported its end)'),
  retryOf: z.string().nullable().describe('The run lost with its runner that this run tries again (retryOnRunnerLoss)'),
  queue: z
    .object({ position: z.number().int().positive(), reason: z.string() })
    .nullable()
    .describe('A pool run waiting for a runner: its place in the project\'s queue (1 = next) and why it waits ("3 runners busy", "no runner online with tag gpu")'),
});
export type RunSummary = z.output<typeof runSummary>;

export const runList = z.object({ runs: z.array(runSummary), ...nextPage });
export type RunList = z.output<typeof runList>;

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
export type RunDetail = z.output<typeof runDetail>;

/** A run that did not start (GET /api/failed-starts; functions/runs/start-failures.ts). */
export const failedStart = z.object({
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
export type FailedStart = z.output<typeof failedStart>;

export const failedStartList = z.object({ failedStarts: z.array(failedStart), ...nextPage });
export type FailedStartList = z.output<typeof failedStartList>;
