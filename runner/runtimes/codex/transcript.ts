// Codex rollout files (../shared/reference/agent-formats.md §3; docs/cost.md): token_count events become
// requests, as ccusage 20.0.20 counts them. The state is per file and survives between incremental reads.

export interface CodexUsage {
  input: number;
  cached: number;
  output: number;
  reasoning: number;
  total: number;
}

export interface CodexEvent {
  sessionId: string;
  file: string;
  lineOffset: number;
  /** The line's timestamp as written (ccusage's dedup key) and in ms. */
  timestamp: string;
  ms: number;
  model: string;
  /** Priced as gpt-5 because the log has no turn_context (very early Codex builds). */
  fallbackModel: boolean;
  usage: CodexUsage;
  /** total_tokens of the session's running total after this request (the dedup key's counter). */
  runningTotal: number;
}

export interface CodexFileState {
  previousTotals: CodexUsage | null;
  currentModel: string | null;
  currentModelIsFallback: boolean;
  /** Our own running total for events without total_token_usage. */
  runningTotal: number;
  sessionId: string | null;
  cwd: string | null;
  branch: string | null;
  /**
   * A subagent rollout (`thread_spawn`) starts with a replay of its parent's token counts, all stamped with
   * the second it was spawned: that second (`YYYY-MM-DDThh:mm:ss`), null when the file has no replay,
   * undefined until detectCodexReplay has looked (see there).
   */
  replaySecond?: string | null;
  /** Still inside the replayed start: token counts of replaySecond are skipped (their totals kept as the baseline). */
  skipReplay?: boolean;
}

export const newCodexFileState = (): CodexFileState => ({ previousTotals: null, currentModel: null, currentModelIsFallback: false, runningTotal: 0, sessionId: null, cwd: null, branch: null });

const TURN_CONTEXT = Buffer.from('"type":"turn_context"');
const EVENT_MSG = Buffer.from('"type":"event_msg"');
const TOKEN_COUNT = Buffer.from('"type":"token_count"');
const SESSION_META = Buffer.from('"type":"session_meta"');
const THREAD_SPAWN = Buffer.from('thread_spawn');
/** ccusage looks for `thread_spawn` in the first 16 KiB of a rollout (its session_meta names the parent). */
export const THREAD_SPAWN_WINDOW = 16 * 1024;

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
const u64 = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const nonEmpty = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

function usageOf(v: unknown): CodexUsage | null {
  if (!isObj(v)) return null;
  const f = (k: string) => (v[k] === undefined ? 0 : u64(v[k]) ? (v[k] as number) : NaN);
  const u = { input: f('input_tokens'), cached: f('cached_input_tokens'), output: f('output_tokens'), reasoning: f('reasoning_output_tokens'), total: f('total_tokens') };
  return Object.values(u).some(Number.isNaN) ? null : u;
}

const sameUsage = (a: CodexUsage, b: CodexUsage) => a.input === b.input && a.cached === b.cached && a.output === b.output && a.reasoning === b.reasoning && a.total === b.total;
const sub = (a: number, b: number) => Math.max(0, a - b);

function modelOf(p: unknown): string | null {
  if (!isObj(p)) return null;
  return nonEmpty(p.model) ?? nonEmpty(p.model_name) ?? (isObj(p.metadata) ? nonEmpty(p.metadata.model) : null);
}

function timestampOf(v: unknown): { text: string; ms: number } | null {
  if (typeof v === 'string') {
    const text = v.trim();
    const ms = Date.parse(text);
    return text && Number.isFinite(ms) ? { text, ms } : null;
  }
  if (u64(v)) {
    const ms = (v as number) > 10_000_000_000 ? (v as number) : (v as number) * 1000;
    return { text: new Date(ms).toISOString(), ms };
  }
  return null;
}

/** ccusage's timestamp of a token count for the replay rule: the trimmed string (any non-empty text) or a number as ISO. */
function replayTimestamp(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() || null;
  return timestampOf(v)?.text ?? null;
}

/**
 * ccusage's replay detection (`detect_subagent_replay_second`), over the lines of a rollout from its start:
 * `head` is its first THREAD_SPAWN_WINDOW bytes. Not a subagent (no `thread_spawn` there): null. Otherwise the
 * first two token counts with usage decide: the same second → that second (the replay), else null. Returns
 * undefined while fewer than two such lines were given (the caller may give more, or settle on null).
 */
export class CodexReplayDetector {
  private first: string | null = null;
  readonly subagent: boolean;
  result: string | null | undefined;
  constructor(head: Buffer) {
    this.subagent = head.indexOf(THREAD_SPAWN) !== -1;
    this.result = this.subagent ? undefined : null;
  }

  /** Feeds one line; returns true once decided. */
  line(line: Buffer): boolean {
    if (this.result !== undefined) return true;
    if (line.indexOf(TURN_CONTEXT) === -1 && !(line.indexOf(EVENT_MSG) !== -1 && line.indexOf(TOKEN_COUNT) !== -1)) return false;
    let o: unknown;
    try {
      o = JSON.parse(line.toString('utf8'));
    } catch {
      return false;
    }
    if (!isObj(o) || o.type !== 'event_msg' || !isObj(o.payload) || o.payload.type !== 'token_count') return false;
    const info = isObj(o.payload.info) ? o.payload.info : null;
    if (!info || (!usageOf(info.last_token_usage) && !usageOf(info.total_token_usage))) return false;
    const ts = replayTimestamp(o.timestamp);
    if (ts === null) return false;
    if (ts.length < 19) return ((this.result = null), true);
    const second = ts.slice(0, 19);
    if (this.first === null) {
      this.first = second;
      return false;
    }
    this.result = this.first === second ? second : null;
    return true;
  }
}

/** Sets up the replay rule on a new file state from the detector's answer (undecided counts as no replay). */
export function setCodexReplay(state: CodexFileState, replaySecond: string | null | undefined): void {
  state.replaySecond = replaySecond ?? null;
  state.skipReplay = state.replaySecond !== null;
}

export type CodexVerdict = { event: CodexEvent } | { meta: true } | { skip: true } | { corrupt: true };

/** One rollout line. `sessionId` is the file's session (from session_meta, else the file name). */
export function parseCodexLine(line: Buffer, lineOffset: number, file: string, state: CodexFileState, fileSession: string): CodexVerdict {
  const isTurn = line.indexOf(TURN_CONTEXT) !== -1;
  const isCount = line.indexOf(EVENT_MSG) !== -1 && line.indexOf(TOKEN_COUNT) !== -1;
  const isMeta = line.indexOf(SESSION_META) !== -1;
  if (!isTurn && !isCount && !isMeta) return { skip: true };
  let o: unknown;
  try {
    o = JSON.parse(line.toString('utf8'));
  } catch {
    return { corrupt: true };
  }
  if (!isObj(o)) return { skip: true };
  const p = o.payload;
  if (o.type === 'session_meta' && isObj(p)) {
    state.sessionId ??= nonEmpty(p.id);
    state.cwd ??= nonEmpty(p.cwd);
    if (isObj(p.git)) state.branch ??= nonEmpty(p.git.branch);
    return { meta: true };
  }
  if (o.type === 'turn_context') {
    const model = modelOf(p);
    if (model) {
      state.currentModel = model;
      state.currentModelIsFallback = false;
    }
    if (isObj(p)) state.cwd ??= nonEmpty(p.cwd);
    return { meta: true };
  }
  if (o.type !== 'event_msg' || !isObj(p) || p.type !== 'token_count') return { skip: true };
  if (state.skipReplay && state.replaySecond) {
    // ccusage (`visit_codex_session_file`): the replayed parent history is skipped, its totals kept as the baseline.
    const rts = replayTimestamp(o.timestamp);
    if (rts === null) return { skip: true };
    if (rts.length >= 19 && rts.slice(0, 19) === state.replaySecond) {
      const total = isObj(p.info) ? usageOf(p.info.total_token_usage) : null;
      if (total) state.previousTotals = total;
      return { skip: true };
    }
    state.skipReplay = false;
  }
  const ts = timestampOf(o.timestamp);
  if (!ts) return { skip: true };
  const info = isObj(p.info) ? p.info : null;
  const total = info ? usageOf(info.total_token_usage) : null;
  const last = info ? usageOf(info.last_token_usage) : null;
  // The same running total again is a repeat of the previous event: nothing new was used.
  if (total && state.previousTotals && sameUsage(total, state.previousTotals)) return { skip: true };
  const prev = state.previousTotals;
  const raw = last ?? (total ? { input: sub(total.input, prev?.input ?? 0), cached: sub(total.cached, prev?.cached ?? 0), output: sub(total.output, prev?.output ?? 0), reasoning: sub(total.reasoning, prev?.reasoning ?? 0), total: sub(total.total, prev?.total ?? 0) } : null);
  if (total) state.previousTotals = total;
  if (!raw || (raw.input === 0 && raw.cached === 0 && raw.output === 0 && raw.reasoning === 0)) return { skip: true };
  state.runningTotal = total ? total.total : state.runningTotal + raw.total;
  const parsed = modelOf(p) ?? (info ? modelOf(info) : null);
  let fallback = false;
  if (parsed) {
    state.currentModel = parsed;
    state.currentModelIsFallback = false;
  }
  let model = parsed ?? state.currentModel;
  if (model === null) {
    fallback = true;
    state.currentModel = model = 'gpt-5';
    state.currentModelIsFallback = true;
  } else if (!parsed && state.currentModelIsFallback) fallback = true;
  return {
    event: {
      sessionId: state.sessionId ?? fileSession,
      file,
      lineOffset,
      timestamp: ts.text,
      ms: ts.ms,
      model,
      fallbackModel: fallback,
      usage: { ...raw, cached: Math.min(raw.cached, raw.input) },
      runningTotal: state.runningTotal,
    },
  };
}

/** Session id from a rollout name `rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl`, else the file stem. */
export function codexFileSession(file: string): string {
  const stem = file.split('/').at(-1)!.replace(/\.jsonl$/, '');
  return /^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-(.+)$/.exec(stem)?.[1] ?? stem;
}

/** ccusage's cross-file dedup key: the same event read twice (copies of one rollout) counts once. */
export const codexEventKey = (e: CodexEvent) => [e.timestamp, e.model, e.usage.input, e.usage.cached, e.usage.output, e.usage.reasoning, e.usage.total].join('\u0000');
