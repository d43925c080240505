// Claude Code's OTLP log records (reference agent-formats.md §2): `api_request` (event.name `api_request`,
// or a body / event name `claude_code.api_request`): model, request_id, input/output/cache_read/
// cache_creation tokens (cache creation counts as 5-minute cache writes: the export has no TTL split),
// duration_ms, cost_usd (or cost_usd_micros), speed, session.id; key `claude:otlp:<request_id>`.
import { attribution, count, numeric, recordTime, required, text } from '../../otlp/attrs.ts';
import type { Attrs, OtlpMapper } from '../../otlp/attrs.ts';
import type { LogRecord } from '../../otlp/gen/logs_pb.ts';

const NAMES = new Set(['api_request', 'claude_code.api_request']);

function claude(r: LogRecord, a: Attrs, resource: Attrs, now: () => Date): unknown {
  const model = required(a, 'model');
  const requestId = required(a, 'request_id');
  const cost = numeric(a.get('cost_usd'), 'cost_usd');
  const micros = cost === undefined ? numeric(a.get('cost_usd_micros'), 'cost_usd_micros') : undefined;
  const duration = numeric(a.get('duration_ms'), 'duration_ms');
  const speed = text(a.get('speed'));
  const sessionId = text(a.get('session.id')) ?? text(resource.get('session.id')) ?? null;
  return {
    key: `claude:otlp:${requestId}`,
    runtime: 'claude',
    source: 'otlp',
    sessionId: sessionId || null,
    requestId,
    model,
    at: recordTime(r, a, now),
    inputTokens: count(a, 'input_tokens'),
    outputTokens: count(a, 'output_tokens'),
    cacheWrite5mTokens: count(a, 'cache_creation_tokens'),
    cacheWrite1hTokens: 0,
    cacheReadTokens: count(a, 'cache_read_tokens'),
    durationMs: duration === undefined ? null : Math.round(duration),
    reportedCostUsd: cost ?? (micros === undefined ? null : micros / 1e6),
    speed: speed === 'fast' ? 'fast' : speed === 'normal' || speed === 'standard' ? 'standard' : null,
    ...attribution(resource, a),
  };
}

export const claudeOtlp: OtlpMapper = { kind: 'api_request', matches: (names) => names.some((x) => NAMES.has(x)), map: claude };
