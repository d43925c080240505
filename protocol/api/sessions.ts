// Answers of the sessions and activity API (docs/cost.md, "Server"): what functions/cost/sessions.ts
// sends (declared in its `responses`, held to them by CHECK_ANSWERS) and web-static/pages/sessions.ts
// and activity.ts read (type imports only).
import * as z from 'zod';
import { ACTIVITY_KINDS } from '../activity.ts';
import { RUNTIMES } from '../usage.ts';
import { nextPage } from './common.ts';
import { requestSpan, tokenCounts, totalsAnswer } from './cost.ts';

/** An agent session with the totals of its LLM requests. */
export const sessionAnswer = totalsAnswer.extend({
  id: z.string(),
  runtime: z.enum(RUNTIMES),
  sessionId: z.string(),
  runnerId: z.string(),
  projectId: z.string().nullable(),
  projectName: z.string().nullable(),
  slot: z.string().nullable(),
  issue: z.string().nullable(),
  runId: z.string().nullable(),
  branch: z.string().nullable(),
  models: z.array(z.string()),
  ...requestSpan,
});
export type SessionAnswer = z.output<typeof sessionAnswer>;

/** GET /api/sessions: a page, newest first. */
export const sessionList = z.object({ sessions: z.array(sessionAnswer), ...nextPage });
export type SessionList = z.output<typeof sessionList>;

/** One LLM request of a session; sources: which reports of it arrived. */
export const requestAnswer = tokenCounts.extend({
  id: z.string(),
  requestId: z.string().nullable(),
  messageId: z.string().nullable(),
  model: z.string(),
  at: z.string(),
  sources: z.array(z.enum(['transcript', 'otlp'])),
  reasoningTokens: z.number().nullable(),
  speed: z.string().nullable(),
  sidechain: z.boolean(),
  durationMs: z.number().nullable(),
  /** Its cost by our prices (priced: there was one, else null) and as the runtime reported it. */
  ...{ costUsd: z.number().nullable(), priced: z.boolean(), reportedCostUsd: z.number().nullable() },
  issue: z.string().nullable(),
  runId: z.string().nullable(),
  slot: z.string().nullable(),
});
export type RequestAnswer = z.output<typeof requestAnswer>;

/** GET /api/sessions/:sessionId: the detail's `requests` is the list (it replaces the count of the same name). */
export const sessionDetail = sessionAnswer.omit({ requests: true }).extend({ requests: z.array(requestAnswer), requestsTruncated: z.boolean() });
export type SessionDetail = z.output<typeof sessionDetail>;

/**
 * An item of the activity feed (protocol/activity.ts lists the kinds); data depends on the kind: a
 * catalogue event's allowlisted `data` with its slot, issue and eventId; a run's runId, skill and state;
 * a trigger's triggerId, trigger, deliveryId, runId or reason; a runner's runnerId and name; … Runner
 * items (runner.online, runner.offline) have no project but a runnerId.
 */
export const activityItem = z.object({
  id: z.number().int(),
  projectId: z.string().nullable(),
  runnerId: z.string().nullable(),
  kind: z.enum(ACTIVITY_KINDS),
  data: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});
export type ActivityItem = z.output<typeof activityItem>;

export const activityList = z.object({ items: z.array(activityItem), nextBefore: z.number().int().nullable() });
export type ActivityList = z.output<typeof activityList>;
