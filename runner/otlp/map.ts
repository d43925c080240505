// OTLP log records → LLM requests (spec: Runner local OTLP receiver; protocol/usage.ts; reference:
// agent-formats.md §2 and §3). The receiver reads only what it needs and builds each payload from a
// short list of named attributes, so everything else a record carries — prompts, responses, tool input
// and output, e-mail, account and organization ids — is dropped here and never leaves the machine.
//
//   Claude Code  `api_request` (event.name `api_request`, or a body / event name `claude_code.api_request`):
//                model, request_id, input/output/cache_read/cache_creation tokens (cache creation counts
//                as 5-minute cache writes: the export has no TTL split), duration_ms, cost_usd (or
//                cost_usd_micros), speed, session.id; key `claude:otlp:<request_id>`.
//   Codex        with otlp.codexExperimental only: `codex.sse_event` with event.kind `response.completed`:
//                input_token_count (includes cached), cached_token_count, output_token_count (includes
//                reasoning), reasoning_token_count, model, conversation.id; key
//                `codex:otlp:<conversation.id>:<event.timestamp>`. Codex reports no cost.
// Resource attributes (or, failing those, record attributes) svc.project, svc.slot, svc.issue, svc.run
// attribute a request directly. Every other record is accepted and dropped. A record of a mapped kind
// that cannot be mapped (no model, no id, a count that is not a non-negative integer) is rejected: the
// receiver counts it in the answer's partialSuccess.
import { LLM_REQUEST, llmRequestPayload } from '../../protocol/usage.ts';
import type { LlmRequest } from '../../protocol/usage.ts';
import type { AnyValue, KeyValue } from './gen/common_pb.ts';
import type { ExportLogsServiceRequest } from './gen/logs_service_pb.ts';
import type { LogRecord } from './gen/logs_pb.ts';

export { LLM_REQUEST };

export interface MapOptions {
  /** otlp.codexExperimental: also map Codex's response.completed records. */
  codexExperimental: boolean;
  /** The time used for a record that carries none (tests pass a fixed one). */
  now?: () => Date;
}

export interface MapResult {
  requests: LlmRequest[];
  /** Records of a mapped kind that could not be mapped. */
  rejected: number;
  /** Why the first rejected records were rejected (for partialSuccess.errorMessage and the log). */
  errors: string[];
}

const MAX_ERRORS = 5;
const CLAUDE_NAMES = new Set(['api_request', 'claude_code.api_request']);
const CODEX_SSE = 'codex.sse_event';

type Attrs = Map<string, AnyValue['value']>;

function attrs(list: readonly KeyValue[]): Attrs {
  const m: Attrs = new Map();
  for (const kv of list) if (kv.value && !m.has(kv.key)) m.set(kv.key, kv.value.value);
  return m;
}

class Unmappable extends Error {}

function text(v: AnyValue['value'] | undefined): string | undefined {
  if (!v) return undefined;
  switch (v.case) {
    case 'stringValue':
      return v.value;
    case 'intValue':
    case 'doubleValue':
    case 'boolValue':
      return String(v.value);
    default:
      return undefined;
  }
}

/** A number attribute: intValue, doubleValue, or a stringValue holding a decimal number. */
function numeric(v: AnyValue['value'] | undefined, name: string): number | undefined {
  if (!v || v.case === undefined) return undefined;
  let n: number;
  if (v.case === 'intValue') n = Number(v.value);
  else if (v.case === 'doubleValue') n = v.value;
  else if (v.case === 'stringValue' && /^\s*-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/.test(v.value)) n = Number(v.value);
  else throw new Unmappable(`${name}: not a number`);
  if (!Number.isFinite(n) || n < 0) throw new Unmappable(`${name}: must be a non-negative number`);
  return n;
}

/** A token count: a non-negative integer (1.0 is 1; 1.5 is refused); absent counts are 0. */
function count(a: Attrs, name: string): number {
  const n = numeric(a.get(name), name);
  if (n === undefined) return 0;
  if (!Number.isSafeInteger(n)) throw new Unmappable(`${name}: must be a non-negative integer`);
  return n;
}

const NANOS_PER_MS = 1_000_000n;
/** The latest instant a Date holds (8.64e15 ms), in nanoseconds. */
const MAX_NANOS = 8_640_000_000_000_000n * NANOS_PER_MS;

/** The record's time: timeUnixNano, else the event.timestamp attribute, else the observed time, else now. */
function recordTime(r: LogRecord, a: Attrs, now: () => Date): string {
  const fromNanos = (ns: bigint) => (ns > 0n && ns < MAX_NANOS ? new Date(Number(ns / NANOS_PER_MS)) : null);
  const stamp = text(a.get('event.timestamp'));
  const candidates = [fromNanos(r.timeUnixNano), stamp ? new Date(stamp) : null, fromNanos(r.observedTimeUnixNano)];
  const d = candidates.find((c) => c && !Number.isNaN(c.getTime())) ?? now();
  return d.toISOString();
}

/** The kind of record: the event.name attribute, the LogRecord's event_name, or a string body. */
function names(r: LogRecord, a: Attrs): string[] {
  const out = [text(a.get('event.name')), r.eventName, r.body?.value.case === 'stringValue' ? r.body.value.value : undefined];
  return out.filter((n): n is string => Boolean(n));
}

function attribution(resource: Attrs, record: Attrs): Pick<LlmRequest, 'project' | 'slot' | 'issue' | 'run'> {
  const get = (k: string) => text(resource.get(k)) ?? text(record.get(k)) ?? null;
  return { project: get('svc.project'), slot: get('svc.slot'), issue: get('svc.issue'), run: get('svc.run') };
}

function required(a: Attrs, name: string): string {
  const v = text(a.get(name))?.trim();
  if (!v) throw new Unmappable(`${name}: missing`);
  return v;
}

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

/** Which mapper reads this record, if any. */
function mapperFor(r: LogRecord, a: Attrs, opts: MapOptions): typeof claude | null {
  const n = names(r, a);
  if (n.some((x) => CLAUDE_NAMES.has(x))) return claude;
  if (opts.codexExperimental && n.includes(CODEX_SSE) && text(a.get('event.kind')) === 'response.completed') return codex;
  return null;
}

export function mapLogs(req: ExportLogsServiceRequest, opts: MapOptions): MapResult {
  const now = opts.now ?? (() => new Date());
  const out: MapResult = { requests: [], rejected: 0, errors: [] };
  const reject = (why: string) => {
    out.rejected++;
    if (out.errors.length < MAX_ERRORS) out.errors.push(why);
  };
  for (const rl of req.resourceLogs) {
    const resource = attrs(rl.resource?.attributes ?? []);
    for (const sl of rl.scopeLogs) {
      for (const r of sl.logRecords) {
        const a = attrs(r.attributes);
        const mapper = mapperFor(r, a, opts);
        if (!mapper) continue;
        const kind = mapper === claude ? 'api_request' : 'codex.sse_event';
        let candidate: unknown;
        try {
          candidate = mapper(r, a, resource, now);
        } catch (e) {
          if (!(e instanceof Unmappable)) throw e;
          reject(`${kind}: ${e.message}`);
          continue;
        }
        const parsed = llmRequestPayload.safeParse(candidate);
        if (parsed.success) out.requests.push(parsed.data);
        else reject(`${kind}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ')}`);
      }
    }
  }
  return out;
}
