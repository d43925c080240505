// Sessions and LLM requests as the runner sends them to the server (spec: Runner to server events;
// docs/cost.md). Two event kinds on the spool, both idempotent: the same request or session sent again
// (a re-read file, a backfill, an unacknowledged batch) changes nothing on the server.
//
//   session.meta   one agent session: runtime, session id, the project matched by its cwd, slot/issue/run
//                  when known, branch, models, first and last time. Sent again whenever it grows.
//   llm.request    one model request with its token counts. From a transcript line (source transcript)
//                  or from the runner's OTLP receiver (source otlp); the server merges both into ONE
//                  request (merge rule in docs/cost.md: same runtime and request id).
//
// The request `key` is the runner's dedup key for the source:
//   claude transcript  `claude:<message.id>:<requestId>` (ccusage's key); a line without message.id
//                      `claude:line:<sessionId>:<uuid>`
//   claude otlp        `claude:otlp:<request_id>`
//   codex transcript   `codex:<sessionId>:<total_tokens after this request>` (the running total only grows)
//   codex otlp         `codex:otlp:<conversation.id>:<event.timestamp>`
// Token counts follow ccusage: `inputTokens` is uncached input (Codex: input − cached), `cacheReadTokens`
// cache reads (Codex: cached), `outputTokens` includes reasoning, cache writes split by TTL (5 m / 1 h;
// a count without the split is 5 m). Prompts, responses, tool input or output, e-mail and account ids
// never appear here.
import * as z from 'zod';
import { RUNTIMES } from './runtimes.ts';
import type { Runtime } from './runtimes.ts';

export { RUNTIMES };
export type { Runtime };


export const SESSION_META = 'session.meta';
export const LLM_REQUEST = 'llm.request';

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const id = z.string().min(1).max(256);
const at = z.iso.datetime({ offset: true });
/** Direct attribution: the OTLP resource attributes svc.project/slot/issue/run, or what the runner knows. */
const attribution = {
  project: id.nullable().optional(),
  slot: z.string().max(64).nullable().optional(),
  issue: z.string().max(64).nullable().optional(),
  run: id.nullable().optional(),
};

export const sessionMetaPayload = z.object({
  runtime: z.enum(RUNTIMES),
  sessionId: id,
  source: z.enum(['transcript', 'otlp']),
  cwd: z.string().max(4096).nullable().optional(),
  branch: z.string().max(256).nullable().optional(),
  models: z.array(z.string().max(256)).max(64).default([]),
  firstAt: at,
  lastAt: at,
  ...attribution,
});
export type SessionMeta = z.infer<typeof sessionMetaPayload>;

export const llmRequestPayload = z.object({
  key: z.string().min(1).max(600),
  runtime: z.enum(RUNTIMES),
  source: z.enum(['transcript', 'otlp']),
  sessionId: id.nullable(),
  requestId: id.nullable().optional(),
  messageId: id.nullable().optional(),
  model: z.string().min(1).max(256),
  at,
  inputTokens: count,
  outputTokens: count,
  cacheWrite5mTokens: count,
  cacheWrite1hTokens: count,
  cacheReadTokens: count,
  reasoningTokens: count.optional(),
  /** `fast` when the request ran in the runtime's fast/priority mode (priced with a multiplier). */
  speed: z.enum(['standard', 'fast']).nullable().optional(),
  sidechain: z.boolean().optional(),
  durationMs: count.nullable().optional(),
  /** What the runtime itself said the request cost (Claude's OTel cost_usd, an old transcript's costUSD). */
  reportedCostUsd: z.number().nonnegative().finite().nullable().optional(),
  ...attribution,
});
export type LlmRequest = z.infer<typeof llmRequestPayload>;
