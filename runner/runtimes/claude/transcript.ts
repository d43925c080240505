// Claude Code transcripts (../shared/reference/agent-formats.md §1; docs/cost.md): which lines count and how
// duplicates are dropped, exactly as ccusage 20.0.20's daily loader does it, so `svc-runner usage` and
// ccusage report the same tokens for the same files.
import { findPrice, costUsd } from '../../../protocol/prices.ts';
import type { ModelPrice } from '../../../protocol/prices.ts';

/** One counted transcript line: an assistant message's usage (or a subagent's, from a progress line). */
export interface ClaudeEntry {
  /** ccusage's session: the file stem, or for `<session>/subagents/agent-*.jsonl` the parent session. */
  sessionId: string;
  /** The directory under projects/ (the cwd with every non-alphanumeric character replaced by `-`). */
  projectDir: string;
  file: string;
  lineOffset: number;
  ms: number;
  messageId: string | null;
  requestId: string | null;
  uuid: string | null;
  /** Model as reported (`<model>-fast` for fast mode); null for `<synthetic>` or a line without a model. */
  model: string | null;
  /** Model as written, for pricing. */
  priceModel: string | null;
  speed: 'standard' | 'fast' | null;
  sidechain: boolean;
  inputTokens: number;
  outputTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  cacheReadTokens: number;
  /** `costUSD` written by old Claude Code versions. */
  recordedCostUsd: number | null;
  cwd: string | null;
  branch: string | null;
  /** From a parent's `progress` line rather than an assistant line. */
  progress: boolean;
  /**
   * Counted by ccusage's session report too (its `UsageEntry`): a direct line (not a progress line) whose
   * `isApiErrorMessage`, if present, is a boolean.
   */
  sessionShape: boolean;
}

export type LineVerdict = { entry: ClaudeEntry } | { skip: 'no-usage' | 'null-field' | 'shape' | 'timestamp' | 'invalid' } | { corrupt: true };

const USAGE_MARKER = Buffer.from('"usage":{');
const USAGE_TAIL = USAGE_MARKER.subarray(4);

/**
 * Whether the line contains `"usage":{` (ccusage's pre-filter). Buffer.indexOf looks for a pattern of 7
 * bytes or more with Boyer-Moore-Horspool, which crawls through JSON when the pattern begins with `"`; a
 * shorter one it finds with memchr on its first byte. So this looks for the tail `ge":{` and checks the
 * four bytes before each hit: the same answer, several times faster on transcripts (bench/usage.mjs).
 */
export function hasUsageMarker(line: Buffer): boolean {
  for (let from = 4; ; ) {
    const i = line.indexOf(USAGE_TAIL, from);
    if (i === -1) return false;
    if (line[i - 4] === 0x22 && line[i - 3] === 0x75 && line[i - 2] === 0x73 && line[i - 1] === 0x61) return true; // "usa
    from = i + 1;
  }
}
// ccusage drops a line where one of these keys is followed by `:null` (its byte-level pre-filter, kept as is).
const NULLABLE_REJECTED = new Set(['id', 'cwd', 'model', 'speed', 'costUSD', 'version', 'sessionId', 'requestId', 'isApiErrorMessage', 'cache_read_input_tokens', 'cache_creation_input_tokens']);

/** ccusage's `has_unsupported_null_field`: for every `:null`, the quoted key before it. */
export function hasRejectedNull(line: string): boolean {
  let from = 0;
  for (;;) {
    const at = line.indexOf(':null', from);
    if (at === -1) return false;
    let end = Math.max(at - 1, 0);
    if (line[end] !== '"') while (end > 0 && line[end] !== '"') end--;
    if (line[end] === '"') {
      let start = Math.max(end - 1, 0);
      while (start > 0 && line[start] !== '"') start--;
      if (line[start] === '"' && NULLABLE_REJECTED.has(line.slice(start + 1, end))) return true;
    }
    from = at + 5;
  }
}

/** `1.2.3…`: digits, dot, digits, dot, a digit (ccusage's `is_semver_prefix`). */
export const isSemverPrefix = (v: string) => /^\d+\.\d+\.\d/.test(v);

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysInMonth = (y: number, m: number) => (m === 2 && (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)) ? 29 : DAYS_IN_MONTH[m - 1]!);

/**
 * ccusage's strict RFC 3339 parse: `YYYY-MM-DDTHH:MM:SS`, optional 3-digit milliseconds, `Z` or `±hh:mm`;
 * null for anything else (an impossible date, hour 24, a leap second). Read character by character: a scan
 * parses one per counted line, and the regular expression with its captures cost ~0.8 µs each
 * (test/usage/rules.test.ts compares the two on every shape).
 */
export function parseTimestamp(v: string): number | null {
  const n = v.length;
  if (n !== 20 && n !== 24 && n !== 25 && n !== 29) return null;
  if (v.charCodeAt(4) !== 45 || v.charCodeAt(7) !== 45 || v.charCodeAt(10) !== 84 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58) return null; // - - T : :
  const y = digits(v, 0, 4), mo = digits(v, 5, 2), d = digits(v, 8, 2), h = digits(v, 11, 2), mi = digits(v, 14, 2), s = digits(v, 17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59) return null;
  if (d > daysInMonth(y, mo)) return null;
  let at = 19, ms = 0;
  if (v.charCodeAt(19) === 46) { // .
    ms = digits(v, 20, 3);
    if (ms < 0) return null;
    at = 23;
  }
  let off = 0;
  const z = v.charCodeAt(at);
  if (z === 90) { // Z
    if (n !== at + 1) return null;
  } else if (z === 43 || z === 45) { // + -
    if (n !== at + 6 || v.charCodeAt(at + 3) !== 58) return null;
    const oh = digits(v, at + 1, 2), om = digits(v, at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return null;
    off = (z === 45 ? -1 : 1) * (oh * 60 + om) * 60_000;
  } else return null;
  return Date.UTC(y, mo - 1, d, h, mi, s, ms) - off;
}

/** The decimal value of `count` ASCII digits at `from`; -1 when one is not a digit. */
function digits(v: string, from: number, count: number): number {
  let x = 0;
  for (let i = from; i < from + count; i++) {
    const c = v.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    x = x * 10 + c;
  }
  return x;
}

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
const u64 = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
/** serde `u64` with `#[serde(default)]`: absent is 0, anything but a non-negative integer fails. */
const optU64 = (o: Record<string, any>, k: string): number | undefined => (!(k in o) ? 0 : u64(o[k]) ? o[k] : undefined);
const optStr = (o: Record<string, any>, k: string) => o[k] === undefined || o[k] === null || typeof o[k] === 'string';
const optBool = (o: Record<string, any>, k: string) => o[k] === undefined || o[k] === null || typeof o[k] === 'boolean';
const optNum = (o: Record<string, any>, k: string) => o[k] === undefined || o[k] === null || (typeof o[k] === 'number' && Number.isFinite(o[k]));
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

interface Usage {
  input: number; output: number; c5m: number; c1h: number; read: number; speed: 'standard' | 'fast' | null;
}

function parseUsage(u: unknown): Usage | null {
  if (!isObj(u) || !u64(u.input_tokens) || !u64(u.output_tokens)) return null;
  const cc = optU64(u, 'cache_creation_input_tokens');
  const read = optU64(u, 'cache_read_input_tokens');
  if (cc === undefined || read === undefined) return null;
  if (!(u.speed === undefined || u.speed === null || u.speed === 'standard' || u.speed === 'fast')) return null;
  let c5m = cc, c1h = 0;
  if (u.cache_creation !== undefined && u.cache_creation !== null) {
    if (!isObj(u.cache_creation)) return null;
    const a = optU64(u.cache_creation, 'ephemeral_5m_input_tokens');
    const b = optU64(u.cache_creation, 'ephemeral_1h_input_tokens');
    if (a === undefined || b === undefined) return null;
    c5m = a;
    c1h = b;
  }
  return { input: u.input_tokens, output: u.output_tokens, c5m, c1h, read, speed: u.speed ?? null };
}

/** serde's view of `{timestamp, message:{usage, model?, id?}, costUSD?, requestId?, isSidechain?, …}`. */
function messageShape(o: Record<string, any>, top: boolean): { usage: Usage; m: Record<string, any> } | null {
  if (typeof o.timestamp !== 'string' || !isObj(o.message)) return null;
  const m = o.message;
  const usage = parseUsage(m.usage);
  if (!usage || !optStr(m, 'model') || !optStr(m, 'id')) return null;
  if (!optNum(o, 'costUSD') || !optStr(o, 'requestId') || !optBool(o, 'isSidechain')) return null;
  if (top && (!optStr(o, 'version') || !optStr(o, 'sessionId'))) return null;
  return { usage, m };
}

export interface FileContext { sessionId: string; projectDir: string; file: string }

// The verdicts without an entry are shared: most lines are skipped, and each would otherwise be an allocation.
const SKIP = {
  noUsage: { skip: 'no-usage' },
  nullField: { skip: 'null-field' },
  shape: { skip: 'shape' },
  timestamp: { skip: 'timestamp' },
  invalid: { skip: 'invalid' },
} as const satisfies Record<string, LineVerdict>;
const CORRUPT: LineVerdict = { corrupt: true };

const NON_ASCII = /[^\x00-\x7f]/;
const ascii = (v: string | null) => v === null || !NON_ASCII.test(v);

/**
 * One line of a transcript → a counted entry, or why not. The line is decoded as latin1 (one char per byte:
 * no UTF-8 decoding, a one-byte string that JSON.parse reads faster). That accepts and rejects exactly the
 * lines UTF-8 decoding does, because every byte of a multi-byte UTF-8 sequence is ≥ 0x80 and JSON's syntax is
 * ASCII; only the kept strings can differ, so a line whose kept strings are not all ASCII is read again as UTF-8.
 */
export function parseClaudeLine(line: Buffer, lineOffset: number, ctx: FileContext): LineVerdict {
  if (!hasUsageMarker(line)) return SKIP.noUsage;
  const text = line.toString('latin1');
  if (hasRejectedNull(text)) return SKIP.nullField;
  const v = parseClaudeText(text, lineOffset, ctx);
  if ('entry' in v) {
    const e = v.entry;
    if (!(ascii(e.priceModel) && ascii(e.messageId) && ascii(e.requestId) && ascii(e.uuid) && ascii(e.cwd) && ascii(e.branch))) return parseClaudeText(line.toString('utf8'), lineOffset, ctx);
  }
  return v;
}

function parseClaudeText(text: string, lineOffset: number, ctx: FileContext): LineVerdict {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return CORRUPT;
  }
  if (!isObj(o)) return SKIP.shape;
  // A direct line, else a parent's agent-progress line carrying a subagent message in data.message.
  let src = o;
  let shape = messageShape(o, true);
  let progress = false;
  if (!shape && isObj(o.data) && isObj(o.data.message)) {
    src = o.data.message;
    shape = messageShape(src, false);
    progress = true;
  }
  if (!shape) return SKIP.shape;
  const ms = parseTimestamp(src.timestamp);
  if (ms === null) return SKIP.timestamp;
  const version = progress ? null : str(o.version);
  const entrySession = progress ? null : str(o.sessionId);
  const requestId = str(src.requestId);
  const messageId = str(shape.m.id);
  const rawModel = str(shape.m.model);
  if ((version !== null && !isSemverPrefix(version)) || entrySession === '' || requestId === '' || messageId === '' || rawModel === '') return SKIP.invalid;
  const u = shape.usage;
  const model = rawModel === null || rawModel === '<synthetic>' ? null : u.speed === 'fast' ? `${rawModel}-fast` : rawModel;
  return {
    entry: {
      sessionId: ctx.sessionId,
      projectDir: ctx.projectDir,
      file: ctx.file,
      lineOffset,
      ms,
      messageId,
      requestId,
      uuid: str(src.uuid) ?? str(o.uuid),
      model,
      priceModel: rawModel,
      speed: u.speed,
      sidechain: src.isSidechain === true,
      inputTokens: u.input,
      outputTokens: u.output,
      cacheWrite5mTokens: u.c5m,
      cacheWrite1hTokens: u.c1h,
      cacheReadTokens: u.read,
      recordedCostUsd: typeof src.costUSD === 'number' ? src.costUSD : null,
      cwd: str(o.cwd) ?? str(src.cwd),
      branch: str(o.gitBranch) ?? str(src.gitBranch),
      progress,
      sessionShape: !progress && optBool(o, 'isApiErrorMessage'),
    },
  };
}

/** ccusage's session and project for a transcript path (`extract_session_parts`, `extract_project`). */
export function fileContext(file: string): FileContext {
  const parts = file.split('/').filter((p) => p !== '');
  const i = parts.lastIndexOf('projects');
  const rel = i === -1 ? parts : parts.slice(i + 1);
  const projectDir = rel.length > 1 && rel[0].trim() !== '' ? rel[0] : 'unknown';
  const stem = rel.at(-1)?.replace(/\.jsonl$/, '') ?? '';
  if (rel.length === 2 && stem) return { sessionId: stem, projectDir, file };
  if (rel.length >= 4 && rel.at(-2) === 'subagents') return { sessionId: rel.at(-3)!, projectDir, file };
  return { sessionId: rel.at(-2) ?? 'unknown', projectDir, file };
}

export const totalTokens = (e: ClaudeEntry) => e.inputTokens + e.outputTokens + e.cacheWrite5mTokens + e.cacheWrite1hTokens + e.cacheReadTokens;

const priceMemo = new WeakMap<readonly ModelPrice[], Map<string, ModelPrice | null>>();

/** findPrice remembered per table and model: a scan prices every request and every duplicate it weighs. */
export function memoPrice(model: string, prices: readonly ModelPrice[]): ModelPrice | null {
  let byModel = priceMemo.get(prices);
  if (!byModel) priceMemo.set(prices, (byModel = new Map()));
  let p = byModel.get(model);
  if (p === undefined) byModel.set(model, (p = findPrice(model, prices)));
  return p;
}

/** Cost as ccusage's default mode sees it: the recorded costUSD when present, else from tokens (0 unpriced). */
export function ccusageCost(e: ClaudeEntry, prices: readonly ModelPrice[]): number {
  if (e.recordedCostUsd !== null) return e.recordedCostUsd;
  const p = e.priceModel === null ? null : memoPrice(e.priceModel, prices);
  return p ? costUsd(e, p, e.speed) : 0;
}

export type DedupResult = { kind: 'added'; index: number } | { kind: 'replaced'; index: number; previous: ClaudeEntry } | { kind: 'dropped'; index: number };

/**
 * ccusage's dedup (`push_deduped_daily_entry`; with `rules: 'session'` its session report's `push_deduped_entry`,
 * which weighs no cost and indexes a replacement under its own keys too), stateful across files and calls: feed entries in ccusage's
 * order (files sorted by path, lines in file order). Primary key message.id + requestId; failing that the
 * message.id alone when the new line or the kept one is a sidechain (a `/btw` replay of the parent with a
 * new requestId). A duplicate replaces the kept entry only when it is "better": not a sidechain over a
 * sidechain, then more tokens, then a higher cost, then one with `speed` over one without. Lines without
 * message.id are never deduplicated. As in ccusage, a replacement does not re-index the new request id.
 */
export class ClaudeDedup {
  readonly entries: ClaudeEntry[] = [];
  private readonly exact = new Map<string, number[]>();
  private readonly byMessage = new Map<string, number[]>();
  constructor(
    private readonly prices: readonly ModelPrice[],
    private readonly rules: 'daily' | 'session' = 'daily',
  ) {}

  add(e: ClaudeEntry): DedupResult {
    if (e.messageId === null) {
      this.entries.push(e);
      return { kind: 'added', index: this.entries.length - 1 };
    }
    const mid = e.messageId;
    const exactKey = `${mid}\u0000${e.requestId ?? '\u0001'}`;
    let found = this.exact.get(exactKey)?.find((i) => this.entries[i].messageId === mid && this.entries[i].requestId === e.requestId);
    if (found === undefined) found = this.byMessage.get(mid)?.find((i) => this.entries[i].messageId === mid && (e.sidechain || this.entries[i].sidechain));
    if (found !== undefined) {
      const kept = this.entries[found];
      if (!this.better(e, kept)) return { kind: 'dropped', index: found };
      this.entries[found] = e;
      if (this.rules === 'session') {
        push(this.exact, exactKey, found);
        push(this.byMessage, mid, found);
      }
      return { kind: 'replaced', index: found, previous: kept };
    }
    const index = this.entries.length;
    this.entries.push(e);
    push(this.exact, exactKey, index);
    push(this.byMessage, mid, index);
    return { kind: 'added', index };
  }

  private better(c: ClaudeEntry, k: ClaudeEntry): boolean {
    if (c.sidechain !== k.sidechain) return k.sidechain;
    const ct = totalTokens(c), kt = totalTokens(k);
    if (ct !== kt) return ct > kt;
    if (this.rules === 'daily') {
      const cc = ccusageCost(c, this.prices), kc = ccusageCost(k, this.prices);
      if (cc !== kc) return cc > kc;
    }
    return c.speed !== null && k.speed === null;
  }
}

function push(map: Map<string, number[]>, key: string, index: number): void {
  const list = map.get(key);
  if (!list) map.set(key, [index]);
  else if (!list.includes(index)) list.push(index);
}
