// Gemini CLI's OTLP log records (reference agent-formats-more.md §1 "OpenTelemetry"; gemini-cli
// packages/core/src/telemetry/types.ts): `gemini_cli.api_response` (event.name) with model,
// input_token_count (includes cached), output_token_count (excludes thoughts), cached_content_token_count,
// thoughts_token_count, tool_token_count, duration_ms, and the common session.id. The GenAI copy
// (`gen_ai.client.inference.operation.details`) is not read, so a request is never counted twice.
// Mapped as the chat files are (transcript.ts geminiTokens); the request id is geminiRequestId, so the
// server merges a record with its chat message (docs/cost.md "Gemini CLI"). Gemini reports no cost.
import { attribution, count, numeric, recordTime, required, text, Unmappable } from '../../otlp/attrs.ts';
import type { Attrs, OtlpMapper } from '../../otlp/attrs.ts';
import type { LogRecord } from '../../otlp/gen/logs_pb.ts';
import { geminiRequestId, geminiTokens } from './transcript.ts';

export const API_RESPONSE = 'gemini_cli.api_response';

function gemini(r: LogRecord, a: Attrs, resource: Attrs, now: () => Date): unknown {
  const model = required(a, 'model');
  const sessionId = text(a.get('session.id')) ?? text(resource.get('session.id'));
  if (!sessionId) throw new Unmappable('session.id: missing');
  const at = recordTime(r, a, now);
  const t = {
    input: count(a, 'input_token_count'),
    output: count(a, 'output_token_count'),
    cached: count(a, 'cached_content_token_count'),
    thoughts: count(a, 'thoughts_token_count'),
    tool: count(a, 'tool_token_count'),
  };
  const total = numeric(a.get('total_token_count'), 'total_token_count');
  const duration = numeric(a.get('duration_ms'), 'duration_ms');
  return {
    key: `gemini:otlp:${sessionId}:${text(a.get('event.timestamp')) ?? at}:${text(a.get('prompt_id')) ?? ''}`,
    runtime: 'gemini',
    source: 'otlp',
    sessionId,
    requestId: geminiRequestId(sessionId, model, t),
    model,
    at,
    ...geminiTokens({ ...t, total: total ?? null }),
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    speed: 'standard',
    durationMs: duration === undefined ? null : Math.round(duration),
    reportedCostUsd: null,
    ...attribution(resource, a),
  };
}

export const geminiOtlp: OtlpMapper = { kind: API_RESPONSE, matches: (names) => names.includes(API_RESPONSE), map: gemini };
