// Reading transcripts (docs/cost.md; where they are: dirs.ts). The incremental pieces — readClaudeFile and
// readCodexFile from a byte offset with dedup state that spans files and calls — are what the daemon's
// ingest builds on; scanAll is the one-shot read `svc-runner usage` does with the same pieces.
import { statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { workerThreads } from '../lazy-builtins.ts';
import { join, relative } from 'node:path';
import { costUsd } from '../../protocol/prices.ts';
import type { ModelPrice } from '../../protocol/prices.ts';
import { RUNTIMES } from '../../protocol/runtimes.ts';
import type { LlmRequest, Runtime, SessionMeta } from '../../protocol/usage.ts';
import { RUNTIME_LIST } from '../runtimes/index.ts';
import { ClaudeDedup, fileContext, memoPrice, parseClaudeLine } from '../runtimes/claude/transcript.ts';
import type { ClaudeEntry } from '../runtimes/claude/transcript.ts';
import { CodexReplayDetector, codexEventKey, codexFileSession, parseCodexLine, setCodexReplay, THREAD_SPAWN_WINDOW } from '../runtimes/codex/transcript.ts';
import type { CodexEvent, CodexFileState } from '../runtimes/codex/transcript.ts';
import { claudeFiles, codexFiles, codexHomeOf, fastCodexHomes } from './dirs.ts';
import type { UsageDirs } from './dirs.ts';
import { readHeadSync, readLines, readLinesSync } from './lines.ts';
import { detectCodexReplaySync, drain, fromWire, parseFile } from './parse.ts';
import type { ParseJob, ParsedFile, WireFile } from './parse.ts';
import { UsageIndex } from './scan-index.ts';
import type { Appended, IndexStats, ResultOrder, ResultRow } from './scan-index.ts';
import { concatMids, freshMids, midHash } from './groups.ts';
import type { GroupRow, Groups } from './groups.ts';

export { detectCodexReplaySync };

/** The worker's code (worker.ts as a CommonJS bundle), defined by esbuild.config.mjs in the runner bundle only. */
declare const __SVC_USAGE_WORKER__: string | undefined;

export interface ReadStats {
  lines: number;
  corrupt: number;
}

/** Sessions seen so far, keyed by runtime and session id. */
export class SessionTracker {
  readonly sessions = new Map<string, SessionMeta & { project: string }>();
  /** firstAt and lastAt in ms, so a touch inside the known span makes no date string. */
  private readonly span = new Map<string, { first: number; last: number }>();
  touch(runtime: Runtime, sessionId: string, project: string, ms: number, model: string | null, cwd: string | null, branch: string | null): void {
    const key = `${runtime}\u0000${sessionId}`;
    let s = this.sessions.get(key);
    let span = this.span.get(key);
    if (!s || !span) {
      const at = new Date(ms).toISOString();
      s = { runtime, sessionId, source: 'transcript', cwd: null, branch: null, models: [], firstAt: at, lastAt: at, project };
      this.sessions.set(key, s);
      this.span.set(key, (span = { first: ms, last: ms }));
    }
    if (ms < span.first) s.firstAt = new Date((span.first = ms)).toISOString();
    if (ms > span.last) s.lastAt = new Date((span.last = ms)).toISOString();
    if (cwd && !s.cwd) s.cwd = cwd;
    if (branch && !s.branch) s.branch = branch;
    if (model && !s.models.includes(model) && s.models.length < 64) s.models.push(model);
  }
}

export interface ReadOptions {
  /** Read with synchronous calls (a one-shot scan such as `svc-runner usage`; never the daemon). */
  sync?: boolean;
  /** Claude: only entries this accepts go to the dedup. */
  accept?: (e: ClaudeEntry) => boolean;
}

/** Reads one Claude transcript from `offset`; counted lines go through the shared dedup. */
export async function readClaudeFile(file: string, offset: number, dedup: ClaudeDedup, onResult?: (r: ReturnType<ClaudeDedup['add']>, e: ClaudeEntry) => void, opts: ReadOptions = {}): Promise<ReadStats & { offset: number; size: number }> {
  const ctx = fileContext(file);
  let corrupt = 0;
  const onLine = (line: Buffer, at: number) => {
    const v = parseClaudeLine(line, at, ctx);
    if ('corrupt' in v) corrupt++;
    else if ('entry' in v) {
      if (opts.accept && !opts.accept(v.entry)) return;
      const res = dedup.add(v.entry);
      onResult?.(res, v.entry);
    }
  };
  const r = opts.sync ? readLinesSync(file, offset, onLine) : await readLines(file, offset, onLine);
  return { offset: r.offset, size: r.size, lines: r.lines, corrupt: corrupt + r.oversized };
}

/**
 * ccusage's replay rule for a rollout (codex.ts CodexReplayDetector): the second its replayed parent history
 * is stamped with, or null. Reads the first 16 KiB and, for a subagent rollout, lines until its second token
 * count. A rollout caught with fewer than two token counts is taken as one without a replay (docs/cost.md).
 */
export async function detectCodexReplay(file: string): Promise<string | null> {
  const d = new CodexReplayDetector(readHeadSync(file, THREAD_SPAWN_WINDOW));
  if (d.result === undefined) await readLines(file, 0, (line) => d.line(line));
  return d.result ?? null;
}

/** Reads one Codex rollout from `offset` with the file's state (keep it with the offset between calls). */
export async function readCodexFile(file: string, offset: number, state: CodexFileState, onEvent: (e: CodexEvent) => void, opts: ReadOptions = {}): Promise<ReadStats & { offset: number; size: number }> {
  if (state.replaySecond === undefined) setCodexReplay(state, opts.sync ? detectCodexReplaySync(file) : await detectCodexReplay(file));
  const fileSession = codexFileSession(file);
  let corrupt = 0;
  const onLine = (line: Buffer, at: number) => {
    const v = parseCodexLine(line, at, file, state, fileSession);
    if ('corrupt' in v) corrupt++;
    else if ('event' in v) onEvent(v.event);
  };
  const r = opts.sync ? readLinesSync(file, offset, onLine) : await readLines(file, offset, onLine);
  return { offset: r.offset, size: r.size, lines: r.lines, corrupt: corrupt + r.oversized };
}

/** The request record for a counted Claude line (protocol/usage.ts; key per its comment). */
export function claudeRequest(e: ClaudeEntry & { priceModel: string }): LlmRequest {
  const key = e.messageId !== null ? `claude:${e.messageId}:${e.requestId ?? ''}` : `claude:line:${e.sessionId}:${e.uuid ?? `${e.file}@${e.lineOffset}`}`;
  return {
    key: key.slice(0, 600),
    runtime: 'claude',
    source: 'transcript',
    sessionId: e.sessionId,
    requestId: e.requestId,
    messageId: e.messageId,
    model: e.priceModel,
    at: new Date(e.ms).toISOString(),
    inputTokens: e.inputTokens,
    outputTokens: e.outputTokens,
    cacheWrite5mTokens: e.cacheWrite5mTokens,
    cacheWrite1hTokens: e.cacheWrite1hTokens,
    cacheReadTokens: e.cacheReadTokens,
    speed: e.speed,
    sidechain: e.sidechain,
    reportedCostUsd: e.recordedCostUsd,
  };
}

/**
 * The request record for a Codex token_count (ccusage's mapping: input − cached, cached as cache read).
 * `fast`: its Codex home asks for the priority tier, so it is priced with the model's fast multiplier (ccusage
 * 20.0.20's `--speed auto`: the multiplier of its price table, none where the model has none — not the 2×
 * default the reference describes; it applies any home's setting to every rollout, we apply each home's to its own).
 */
export function codexRequest(e: CodexEvent, fast = false): LlmRequest {
  return {
    key: `codex:${e.sessionId}:${e.runningTotal}`.slice(0, 600),
    runtime: 'codex',
    source: 'transcript',
    sessionId: e.sessionId,
    requestId: null,
    messageId: null,
    model: e.model,
    at: new Date(e.ms).toISOString(),
    inputTokens: e.usage.input - e.usage.cached,
    outputTokens: e.usage.output,
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: e.usage.cached,
    reasoningTokens: e.usage.reasoning,
    speed: fast ? 'fast' : 'standard',
  };
}

/** A counted request with what the report needs beside the record. */
export interface ScannedRequest {
  request: LlmRequest;
  /** The model as ccusage reports it (`<model>-fast` for Claude fast mode). */
  reportModel: string;
  fallbackModel: boolean;
  /**
   * Session report grouping, as ccusage's session report groups: Claude by the project directory and path
   * session (subagents roll into their parent), Codex by the rollout (its path under sessions/, no extension).
   */
  session: string;
  ms: number;
  /** The index of its Claude transcript in scan order (that of its first line); none for other runtimes. */
  file?: number;
}

export interface ScanResult {
  requests: ScannedRequest[];
  sessions: (SessionMeta & { project: string })[];
  files: number;
  corrupt: number;
  /** What the usage index did, when the scan went through it. */
  index?: IndexStats;
  /** The report, as printed last time with the same arguments (the index's outputKey), when no file changed. */
  output?: string;
  /** Keeps the report printed for the index's outputKey, with the daily/monthly sums it was made of (groups.ts). */
  saveOutput?: (output: string, groups?: GroupRow[]) => void;
  /** After an append: the stored report's sums and the new requests to add (scan order), instead of `requests`. */
  partial?: { groups: Groups; added: ScannedRequest[] };
}

/** ccusage's Codex session id for the session report: the rollout's path under its sessions dir, without `.jsonl`. */
export function codexPathSession(file: string, homes: readonly string[]): string {
  for (const h of homes) {
    for (const d of [join(h, 'sessions'), join(h, 'archived_sessions')]) if (file.startsWith(d + '/')) return relative(d, file).replace(/\.jsonl$/, '') || 'unknown';
  }
  return file.replace(/\.jsonl$/, '');
}

/** Below this many bytes of transcripts a scan stays on one thread (starting the worker costs ~40 ms of CPU). */
export const WORKER_MIN_BYTES = 32 << 20;

/**
 * Parses every job, on two threads when there is at least `workerBytes` to read and a core to spare (more
 * than one core, and the 1-minute load average at least one below their number: on a busy machine a second
 * thread runs no sooner and only adds its start-up and the copying of its results). A worker (worker.ts)
 * and this thread take files from a shared counter, largest first. A worker that fails loses nothing: what
 * it did not report is parsed here. Results come back in job order. An explicit `workerBytes` (tests,
 * benchmarks) skips the load check.
 */
export async function parseFiles(jobs: readonly ParseJob[], workerBytes?: number): Promise<ParsedFile[]> {
  const next = new Int32Array(new SharedArrayBuffer(4));
  let order = jobs.map((_, i) => i);
  let worker: Promise<[number, WireFile][]> | null = null;
  const spare = workerBytes !== undefined || availableParallelism() - loadavg()[0]! >= 1;
  if (typeof __SVC_USAGE_WORKER__ === 'string' && jobs.length > 1 && availableParallelism() > 1 && spare) {
    const sizes = jobs.map((j) => {
      try {
        return statSync(j.file).size;
      } catch {
        return 0;
      }
    });
    if (sizes.reduce((a, b) => a + b, 0) >= (workerBytes ?? WORKER_MIN_BYTES)) {
      order = order.sort((a, b) => sizes[b]! - sizes[a]! || a - b);
      const code = __SVC_USAGE_WORKER__;
      worker = new Promise((resolve) => {
        try {
          const w = new (workerThreads().Worker)(code, { eval: true, workerData: { jobs, order, next: next.buffer } });
          w.once('message', resolve);
          w.once('error', () => resolve([]));
          w.once('exit', () => resolve([]));
        } catch {
          resolve([]);
        }
      });
    }
  }
  const results: (ParsedFile | undefined)[] = new Array(jobs.length);
  for (const [i, r] of drain(jobs, order, next)) results[i] = r;
  if (worker) for (const [i, r] of await worker) results[i] = fromWire(r, jobs[i]!);
  return jobs.map((j, i) => results[i] ?? parseFile(j));
}

export interface ScanOptions {
  /** ccusage's daily loader (daily and monthly reports, the ingest's rules), or its session report's (docs/cost.md). */
  rules?: 'daily' | 'session';
  /** parseFiles' threshold for a second thread. */
  workerBytes?: number;
  /** Collect the sessions' metadata (the session report needs it; daily and monthly do not). */
  sessions?: boolean;
  /** Read through the usage index at this path (scan-index.ts); `rescan` ignores what it holds; `outputKey`: the report's arguments. */
  index?: { path: string; rescan?: boolean; outputKey?: string; groups?: boolean };
}

/**
 * Reads every transcript of the runtimes asked for, from the start (synchronously: a one-shot command).
 * The session rules read no subagent progress lines and deduplicate without weighing cost.
 */
export async function scanAll(dirs: UsageDirs, prices: readonly ModelPrice[], runtimes: ReadonlySet<Runtime>, opts: ScanOptions = {}): Promise<ScanResult> {
  const rules = opts.rules ?? 'daily';
  const tracker = new SessionTracker();
  const requests: ScannedRequest[] = [];
  // Runtimes with a RecordReader are read whole first: their stamps join the index's keys below.
  const records: ScannedRequest[] = [];
  const stamps: string[] = [];
  let recordCorrupt = 0;
  for (const def of RUNTIME_LIST) {
    if (def.usage.kind !== 'records' || !runtimes.has(def.name)) continue;
    const read = await def.usage.reader.read(dirs.records?.[def.name] ?? []);
    stamps.push(`${def.name}:${read.stamp}`);
    recordCorrupt += read.corrupt;
    for (const r of read.requests) {
      records.push({ request: r.request, reportModel: r.reportModel, fallbackModel: false, session: r.session, ms: r.ms });
      if (opts.sessions !== false && r.request.sessionId) tracker.touch(def.name, r.request.sessionId, r.cwd ?? r.session, r.ms, r.request.model, r.cwd, null);
    }
  }
  const jobs: ParseJob[] = [
    ...(runtimes.has('claude') ? claudeFiles(dirs.claude).map((file) => ({ runtime: 'claude' as const, file })) : []),
    ...(runtimes.has('codex') ? codexFiles(dirs.codex).map((file) => ({ runtime: 'codex' as const, file })) : []),
  ];
  // The daily and monthly reports (no sessions) can take the stored deduplicated requests when no file changed.
  // Both stored forms also depend on which Codex homes ask for the fast tier (their config.toml, not a transcript).
  const fast = fastCodexHomes(dirs.codex);
  const context = JSON.stringify([...[...fast].sort(), ...stamps]);
  const resultKey = rules === 'daily' && opts.sessions === false ? `${[...runtimes].sort().join(',')} ${context}` : null;
  const index = opts.index ? new UsageIndex(opts.index.path, opts.index.rescan === true) : null;
  const outputKey = opts.index?.outputKey === undefined ? undefined : `${opts.index.outputKey} ${context}`;
  const opened = index ? await index.open(jobs, (whole) => parseFiles(whole, opts.workerBytes), resultKey, outputKey ?? null, opts.index?.groups === true) : { parsed: await parseFiles(jobs, opts.workerBytes) };
  if ('output' in opened) return { requests: [], sessions: [], files: jobs.length, corrupt: opened.corrupt + recordCorrupt, index: index!.stats, output: opened.output };
  if ('groups' in opened) {
    const { groups, fresh, corrupt } = opened;
    const added = freshRequests(fresh, prices).map(([file, s]) => ({ ...s, file }));
    const mids = concatMids(groups.mids, freshMids(fresh).map(midHash));
    const saveOutput = (text: string, rows?: GroupRow[]) => rows && index!.saveGroups(outputKey!, text, corrupt, { files: groups.files, mids, rows });
    return { requests: [], partial: { groups, added }, sessions: [], files: jobs.length, corrupt: corrupt + recordCorrupt, index: index!.stats, saveOutput };
  }
  if ('fresh' in opened) {
    const a = opened as unknown as Appended; // (the union reduces Appended into the plain rows' shape)
    const merged = mergeAppended(a, prices);
    index!.saveAppended(resultKey!, merged.rows, merged.order, a.corrupt);
    const saveOutput = outputKey !== undefined ? withGroups(merged.order, (text, g) => index!.saveOutput(outputKey, text, a.corrupt, g)) : undefined;
    return { requests: merged.rows.map((r, i) => fromRow(r, merged.order, i)), sessions: [], files: jobs.length, corrupt: a.corrupt + recordCorrupt, index: index!.stats, saveOutput };
  }
  if ('rows' in opened) {
    const saveOutput = outputKey !== undefined ? withGroups(opened.order, (text, g) => index!.saveOutput(outputKey, text, opened.corrupt, g)) : undefined;
    return { requests: opened.rows.map((r, i) => fromRow(r, opened.order, i)), sessions: [], files: jobs.length, corrupt: opened.corrupt + recordCorrupt, index: index!.stats, saveOutput };
  }
  const parsed = opened.parsed;
  let corrupt = recordCorrupt;
  const dedup = new ClaudeDedup(prices, rules);
  const seen = new Set<string>();
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i]!, r = parsed[i]!;
    corrupt += r.corrupt;
    for (const e of r.entries ?? []) if (rules === 'daily' || e.sessionShape) dedup.add(e);
    if (!r.events?.length) continue;
    const home = codexHomeOf(job.file, dirs.codex);
    const isFast = home !== null && fast.has(home);
    const pathSession = codexPathSession(job.file, dirs.codex);
    for (const { event: e, cwd, branch } of r.events) {
      const k = codexEventKey(e);
      if (seen.has(k)) continue;
      seen.add(k);
      requests.push({ request: codexRequest(e, isFast), reportModel: e.model, fallbackModel: e.fallbackModel, session: pathSession, ms: e.ms });
      if (opts.sessions !== false) tracker.touch('codex', e.sessionId, cwd ?? e.sessionId, e.ms, e.model, cwd, branch);
    }
  }
  const claude: ScannedRequest[] = [];
  const claudeIndex = new Map(jobs.filter((j) => j.runtime === 'claude').map((j, i) => [j.file, i]));
  const rowFile: number[] = [];
  for (const e of dedup.entries) {
    if (e.model === null || e.priceModel === null) continue; // <synthetic> or no model: not a request
    const file = claudeIndex.get(e.file)!;
    rowFile.push(file);
    claude.push({ request: claudeRequest(e as ClaudeEntry & { priceModel: string }), reportModel: e.model, fallbackModel: false, session: `${e.projectDir}/${e.sessionId}`, ms: e.ms, file });
    if (opts.sessions !== false) tracker.touch('claude', e.sessionId, e.cwd ?? e.projectDir, e.ms, e.priceModel, e.cwd, e.branch);
  }
  const all = [...claude, ...requests, ...records];
  const order = (): ResultOrder => ({ files: [...claudeIndex.keys()], rowFile, claude: claude.length, mids: [...new Set(dedup.entries.map((e) => e.messageId).filter((m) => m !== null))] as string[] });
  // The stored forms keep the transcripts' corrupt lines only: the record readers' are added when read back.
  index?.save(resultKey, () => all.map(toRow), corrupt - recordCorrupt, order);
  const saveOutput = index && outputKey !== undefined ? withGroups(resultKey === null ? undefined : order(), (text, g) => index.saveOutput(outputKey, text, corrupt - recordCorrupt, g)) : undefined;
  return { requests: all, sessions: [...tracker.sessions.values()], files: jobs.length, corrupt, index: index?.stats, saveOutput };
}

/**
 * The Claude lines of an append whose message ids the index did not know, deduplicated among themselves (no
 * stored line can match them) and each request put where a full scan puts it: after the rows of its file and
 * of the files before, before those of the files after.
 */
function mergeAppended(a: Appended, prices: readonly ModelPrice[]): { rows: ResultRow[]; order: ResultOrder } {
  const { order } = a;
  const rows = a.rows.slice(0, order.claude), rowFile = order.rowFile.slice();
  const added = freshRequests(a.fresh, prices).map(([file, s]): [number, ResultRow] => [file, toRow(s)]);
  // Both lists are in (file, line) order: merge them, a new request after the stored ones of its file.
  const outRows: ResultRow[] = [], outFile: number[] = [];
  let i = 0;
  for (const [file, row] of added) {
    while (i < rows.length && rowFile[i]! <= file) (outRows.push(rows[i]!), outFile.push(rowFile[i++]!));
    outRows.push(row);
    outFile.push(file);
  }
  while (i < rows.length) (outRows.push(rows[i]!), outFile.push(rowFile[i++]!));
  const mids = order.mids.concat(freshMids(a.fresh));
  return { rows: outRows.concat(a.rows.slice(order.claude)), order: { files: order.files, rowFile: outFile, claude: outRows.length, mids } };
}

/** The new lines of an append deduplicated among themselves, as requests in scan order with their transcript's index. */
function freshRequests(fresh: Appended['fresh'], prices: readonly ModelPrice[]): [number, ScannedRequest][] {
  const dedup = new ClaudeDedup(prices, 'daily');
  for (const f of fresh) for (const e of f.entries) dedup.add(e);
  const fileOf = new Map(fresh.map((f) => [f.entries[0]!.file, f.file]));
  const out: [number, ScannedRequest][] = [];
  for (const e of dedup.entries) {
    if (e.model === null || e.priceModel === null) continue;
    out.push([fileOf.get(e.file)!, { request: claudeRequest(e as ClaudeEntry & { priceModel: string }), reportModel: e.model, fallbackModel: false, session: '', ms: e.ms }]);
  }
  return out;
}

/** A saveOutput that stores the report's sums too, with what an append needs beside them (the order's files, the ids' hashes). */
const withGroups = (order: ResultOrder | undefined, save: (text: string, groups?: Groups) => void) => (text: string, rows?: GroupRow[]) =>
  save(text, rows && order ? { files: order.files.length, mids: order.mids.map(midHash), rows } : undefined);

const toRow = (s: ScannedRequest): ResultRow => {
  const r = s.request;
  return [s.ms, RUNTIMES.indexOf(r.runtime), s.reportModel, r.model, r.speed ?? null, r.inputTokens, r.outputTokens, r.cacheWrite5mTokens, r.cacheWrite1hTokens, r.cacheReadTokens];
};

/** A stored row as the daily and monthly reports read it: the fields they and requestCost use (not the ids, not the time as text). */
function fromRow(row: ResultRow, order: ResultOrder | undefined, i: number): ScannedRequest {
  const [ms, rt, reportModel, model, speed, inputTokens, outputTokens, cacheWrite5mTokens, cacheWrite1hTokens, cacheReadTokens] = row;
  const request = { runtime: RUNTIMES[rt] ?? 'claude', model, speed, inputTokens, outputTokens, cacheWrite5mTokens, cacheWrite1hTokens, cacheReadTokens } as LlmRequest;
  return { request, reportModel, fallbackModel: false, session: '', ms, file: order && i < order.claude ? order.rowFile[i] : undefined };
}

/** USD for a request at the table's price; null when the model has none. */
export function requestCost(r: LlmRequest, prices: readonly ModelPrice[]): number | null {
  const p = memoPrice(r.model, prices);
  return p ? costUsd(r, p, r.speed) : null;
}
