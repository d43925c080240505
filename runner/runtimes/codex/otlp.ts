// Codex's OTLP log records (reference agent-formats.md §3), with otlp.codexExperimental only:
// `codex.sse_event` with event.kind `response.completed`: input_token_count (includes cached),
// cached_token_count, output_token_count (includes reasoning), reasoning_token_count, model,
// conversation.id; key `codex:otlp:<conversation.id>:<event.timestamp>`. Codex reports no cost.
import { attribution, count, numeric, recordTime, required, text, Unmappable } from '../../otlp/attrs.ts';
import type { Attrs, MapOptions, OtlpMapper } from '../../otlp/attrs.ts';
import type { LogRecord } from '../../otlp/gen/logs_pb.ts';

const SSE = 'codex.sse_event';

function codex(r: LogRecord, a: Attrs, resource: Attrs, now: () => Date): unknown {
  const model = required(a, 'model');
  const conversation = text(a.get('conversation.id')) ?? text(resource.get('conversation.id'));
  if (!conversation) throw new Unmappable('conversation.id: missing');
  const at = recordTime(r, a, now);
  const stamp = text(a.get('event.timestamp')) ?? at;
  const input = count(a, 'input_token_count');
  const cached = count(a, 'cached_token_count');
  if (cached > input) throw new Unmappable('cached_token_count: larger than input_token_count');
  const duration = numeric(a.get('duration_ms'), 'duration_ms');
  return {
    key: `codex:otlp:${conversation}:${stamp}`,
    runtime: 'codex',
    source: 'otlp',
    sessionId: conversation,
    model,
    at,
    inputTokens: input - cached,
    outputTokens: count(a, 'output_token_count'),
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: cached,
    reasoningTokens: count(a, 'reasoning_token_count'),
    durationMs: duration === undefined ? null : Math.round(duration),
    reportedCostUsd: null,
    ...attribution(resource, a),
  };
}

export const codexOtlp: OtlpMapper = {
  kind: SSE,
  matches: (names, a, opts: MapOptions) => opts.codexExperimental && names.includes(SSE) && text(a.get('event.kind')) === 'response.completed',
  map: codex,
};
