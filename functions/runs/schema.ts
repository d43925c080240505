// Shapes of skill runs (docs/skill-runs.md): the runner's skill_run.* event payloads as the server
// reads them. The API's answers (GET /api/runs, GET /api/runs/:runId, GET /api/failed-starts) are
// protocol/api/runs.ts.
import * as z from 'zod';
import { pullRequest } from '../../protocol/api/runs.ts';
import { RUN_STATES } from '../../protocol/runs.ts';

// The same rules as the skill.run command's arguments (protocol/commands.ts), checked at save time;
// triggers and project schedules (functions/triggers/schema.ts, functions/schedules/schema.ts) use them.
export const skill = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a skill name (1–64 of A-Z a-z 0-9 _ -)' });
export const profile = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a profile id (1–64 of A-Z a-z 0-9 _ -)' });
export const model = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/\[\]-]{0,99}$/, { message: 'must be a model name (letters, digits, . _ : / [ ] -)' });

export const runId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a run id' });
const short = (max: number) => z.string().transform((s) => s.slice(0, max));
const time = z.iso.datetime({ offset: true });

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
