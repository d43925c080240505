// What the OTLP mappers share (otlp/map.ts runs them; each runtime's own are in runner/runtimes/<name>/otlp.ts):
// reading attributes, numbers and times from a log record, and the OtlpMapper shape.
import type { LlmRequest } from '../../protocol/usage.ts';
import type { AnyValue, KeyValue } from './gen/common_pb.ts';
import type { LogRecord } from './gen/logs_pb.ts';

export interface MapOptions {
  /** otlp.codexExperimental: also map Codex's response.completed records. */
  codexExperimental: boolean;
  /** The time used for a record that carries none (tests pass a fixed one). */
  now?: () => Date;
}

/** One kind of record a runtime sends: whether a record is of it, and its request payload (validated by the caller). */
export interface OtlpMapper {
  /** Named in partialSuccess errors, e.g. `api_request`. */
  kind: string;
  /** `names`: the record's event.name, LogRecord event_name and string body. */
  matches(names: readonly string[], a: Attrs, opts: MapOptions): boolean;
  /** The llm.request payload; throws Unmappable when a needed attribute is missing or bad. */
  map(r: LogRecord, a: Attrs, resource: Attrs, now: () => Date): unknown;
}

export type Attrs = Map<string, AnyValue['value']>;

export function attrs(list: readonly KeyValue[]): Attrs {
  const m: Attrs = new Map();
  for (const kv of list) if (kv.value && !m.has(kv.key)) m.set(kv.key, kv.value.value);
  return m;
}

export class Unmappable extends Error {}

export function text(v: AnyValue['value'] | undefined): string | undefined {
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
export function numeric(v: AnyValue['value'] | undefined, name: string): number | undefined {
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
export function count(a: Attrs, name: string): number {
  const n = numeric(a.get(name), name);
  if (n === undefined) return 0;
  if (!Number.isSafeInteger(n)) throw new Unmappable(`${name}: must be a non-negative integer`);
  return n;
}

const NANOS_PER_MS = 1_000_000n;
/** The latest instant a Date holds (8.64e15 ms), in nanoseconds. */
const MAX_NANOS = 8_640_000_000_000_000n * NANOS_PER_MS;

/** The record's time: timeUnixNano, else the event.timestamp attribute, else the observed time, else now. */
export function recordTime(r: LogRecord, a: Attrs, now: () => Date): string {
  const fromNanos = (ns: bigint) => (ns > 0n && ns < MAX_NANOS ? new Date(Number(ns / NANOS_PER_MS)) : null);
  const stamp = text(a.get('event.timestamp'));
  const candidates = [fromNanos(r.timeUnixNano), stamp ? new Date(stamp) : null, fromNanos(r.observedTimeUnixNano)];
  const d = candidates.find((c) => c && !Number.isNaN(c.getTime())) ?? now();
  return d.toISOString();
}

/** The kind of record: the event.name attribute, the LogRecord's event_name, or a string body. */
export function names(r: LogRecord, a: Attrs): string[] {
  const out = [text(a.get('event.name')), r.eventName, r.body?.value.case === 'stringValue' ? r.body.value.value : undefined];
  return out.filter((n): n is string => Boolean(n));
}

export function attribution(resource: Attrs, record: Attrs): Pick<LlmRequest, 'project' | 'slot' | 'issue' | 'run'> {
  const get = (k: string) => text(resource.get(k)) ?? text(record.get(k)) ?? null;
  return { project: get('svc.project'), slot: get('svc.slot'), issue: get('svc.issue'), run: get('svc.run') };
}

export function required(a: Attrs, name: string): string {
  const v = text(a.get(name))?.trim();
  if (!v) throw new Unmappable(`${name}: missing`);
  return v;
}

