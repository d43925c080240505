// The daemon's transcript ingest (docs/runner.md "Sessions ingest", docs/cost.md "Runner ingest"): every
// Claude Code transcript under each config dir's projects/ (subagent files included) and every Codex
// rollout under sessions/ and archived_sessions/ is read incrementally from byte offsets kept in
// `offsets.json` (state dir), with the same parsers and dedup as `svc-runner usage`, and becomes
// `llm.request` and `session.meta` events on the spool.
//
// Watching: `@parcel/watcher` (recursive) when its native module loads, else a poll of the trees; a full
// rescan runs on a timer in both modes. One pass at a time; files in path order within a pass.
//
// Exactly once, across restarts: events are spooled (durable) before offsets.json moves past their lines.
// The dedup state is not stored: at start it is rebuilt by re-reading every tracked file up to its stored
// offset WITHOUT sending (phase 1), then reading goes on from the offsets (phase 2). A file whose inode
// changed or that is shorter than its offset was replaced or truncated: it is read again from 0 through
// the same dedup, so what was already counted is dropped, not sent again. Event ids derive from the
// request's key and its content, so a re-send after a crash is stored once and a dedup replacement (the
// same request with better counts) is a new event the server applies over the old one.
import { createHash } from 'node:crypto';
import { existsSync, openSync, readFileSync, readSync, closeSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, sep } from 'node:path';
import * as z from 'zod';
import { DEFAULT_PRICES } from '../../protocol/prices.ts';
import type { ModelPrice } from '../../protocol/prices.ts';
import type { LlmRequest, SessionMeta } from '../../protocol/usage.ts';
import type * as usage from '../../protocol/usage.ts';
import { writeFileAtomic } from '../config.ts';
import type { ProjectEntry, RunnerConfig } from '../config.ts';
import { errorText, log } from '../log.ts';
import { stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';
import type { NewEvent } from '../spool.ts';
import { ClaudeDedup, fileContext, parseClaudeLine } from './claude.ts';
import type { ClaudeEntry } from './claude.ts';
import { codexEventKey, codexFileSession, newCodexFileState, parseCodexLine, setCodexReplay } from './codex.ts';
import type { CodexFileState } from './codex.ts';
import { readLines } from './lines.ts';
import { claudeFiles, claudeRequest, codexFiles, codexHomeOf, codexRequest, detectCodexReplay, detectCodexReplaySync, fastCodexHomes, SessionTracker, usageDirs } from './scan.ts';
import type { UsageDirs } from './scan.ts';

// The event kinds, typed against protocol/usage.ts without importing its schemas (and all of zod with
// them) into the single-file runner.
const LLM_REQUEST: typeof usage.LLM_REQUEST = 'llm.request';
const SESSION_META: typeof usage.SESSION_META = 'session.meta';

export const offsetsPath = (env: Env) => join(stateDir(env), 'offsets.json');

/** A kept sidechain line is sent only after this long without a better duplicate (docs/cost.md). */
const HOLD_MS = 5_000;
/** A session's metadata is sent at most this often while it grows (the first time at once). */
const META_THROTTLE_MS = 30_000;
/** Full rescan: the poll in poll mode; a safety net next to @parcel/watcher. */
const POLL_MS = 5_000;
const WATCHER_RESCAN_MS = 60_000;
/** File events are gathered this long before a pass. */
const DEBOUNCE_MS = 100;
/**
 * A directory created under a watched root is listed when its event comes and once more this long after:
 * files made in it (or in directories made in it) before the watcher had added its watch get no event.
 */
const NEW_DIR_RELIST_MS = 1000;

const fileRec = z.object({
  runtime: z.enum(['claude', 'codex']),
  dev: z.number(),
  ino: z.number(),
  size: z.number().int().min(0),
  offset: z.number().int().min(0),
  corrupt: z.number().int().min(0).default(0),
});
type FileRec = z.infer<typeof fileRec>;

const ingestStatus = z.object({
  mode: z.enum(['watcher', 'poll', 'off']),
  pid: z.number().int(),
  files: z.number().int(),
  sessions: z.number().int(),
  requests: z.number().int(),
  corrupt: z.number().int(),
  lateReplacements: z.number().int().default(0),
  ingestSince: z.string().nullable(),
  updatedAt: z.string(),
});
export type IngestStatus = z.infer<typeof ingestStatus>;

const offsetsFile = z.object({
  version: z.literal(1),
  files: z.record(z.string(), fileRec),
  /** Digest of the last session.meta spooled per session, so a restart does not send it again. */
  metas: z.record(z.string(), z.string()).default({}),
  status: ingestStatus.optional(),
});
type OffsetsFile = z.infer<typeof offsetsFile>;

export interface IngestSpool {
  append(events: NewEvent[]): unknown;
}

export interface IngestOptions {
  env: Env;
  config: Pick<RunnerConfig, 'sessions' | 'profiles'> & { runnerId: string };
  spool: IngestSpool;
  projects: () => readonly ProjectEntry[];
  /** Called after events were spooled (the daemon sends them). */
  onSpooled?: () => void;
  prices?: readonly ModelPrice[];
}

interface Tracked {
  rec: FileRec;
  codex?: CodexFileState;
}

interface Held {
  entry: ClaudeEntry;
  until: number;
}

type ParcelWatcher = {
  subscribe: (dir: string, fn: (err: Error | null, events: { path: string; type: string }[]) => void) => Promise<{ unsubscribe: () => Promise<void> }>;
};

/** @parcel/watcher when its native module loads here (it is never bundled), else null. */
export function loadParcelWatcher(env: Env): ParcelWatcher | null {
  // Test switch: behave as where the native module is absent.
  if (env.SVC_INGEST_NO_WATCHER === '1') return null;
  try {
    const load = createRequire(import.meta.url);
    const name = ['@parcel', 'watcher'].join('/');
    const w = load(name) as ParcelWatcher;
    return typeof w?.subscribe === 'function' ? w : null;
  } catch {
    return null;
  }
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const under = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

export interface Attribution {
  project: string | null;
  slot: string | null;
  issue: string | null;
  run: string | null;
}

/**
 * Which project, slot and run a working directory belongs to: the project whose root is the longest
 * prefix of `cwd`, or whose slot worktree `<parent>/.wt-<repo>-<slot>` / run worktree
 * `.wt-<repo>-run-<runId>` holds it. A slot branch `svc/<slot>/issue-<n>` gives the issue.
 */
export function attribute(cwd: string | null, branch: string | null, projects: readonly { id: string; roots: string[] }[]): Attribution {
  const a: Attribution = { project: null, slot: null, issue: null, run: null };
  let best = -1;
  if (cwd) {
    for (const p of projects) {
      for (const root of p.roots) {
        if (under(cwd, root) && root.length > best) {
          best = root.length;
          Object.assign(a, { project: p.id, slot: null, run: null });
        }
        const prefix = join(dirname(root), `.wt-${basename(root)}-`);
        if (cwd.startsWith(prefix)) {
          const name = cwd.slice(prefix.length).split(sep)[0];
          const len = prefix.length + name.length;
          if (name && len > best) {
            best = len;
            Object.assign(a, { project: p.id, slot: name.startsWith('run-') ? null : name.slice(0, 64), run: name.startsWith('run-') ? name.slice(4, 260) : null });
          }
        }
      }
    }
  }
  const m = branch ? /^svc\/([^/]+)\/issue-(\d+)$/.exec(branch) : null;
  if (m && a.project) {
    a.slot ??= m[1].slice(0, 64);
    a.issue = m[2];
  }
  return a;
}

/** The first `cwd` in a transcript's first 256 KiB (Claude: top level; Codex: session_meta / turn_context). */
function headCwd(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const buf = Buffer.alloc(256 * 1024);
    const got = readSync(fd, buf, 0, buf.length, 0);
    for (const line of buf.subarray(0, got).toString('utf8').split('\n')) {
      if (!line.includes('"cwd"')) continue;
      try {
        const o = JSON.parse(line);
        const cwd = o?.cwd ?? o?.payload?.cwd;
        if (typeof cwd === 'string' && cwd) return cwd;
      } catch {}
    }
    return null;
  } finally {
    closeSync(fd);
  }
}

export interface BackfillResult {
  files: number;
  requests: number;
  sessions: number;
}

export class Ingest {
  readonly mode: 'watcher' | 'poll' | 'off';
  private readonly file: string;
  private readonly files = new Map<string, Tracked>();
  private readonly dedup: ClaudeDedup;
  private readonly tracker = new SessionTracker();
  /** Claude lines without message.id (never deduplicated): their keys, so a re-read file does not send them again. */
  private readonly lineKeys = new Set<string>();
  private readonly codexSeen = new Set<string>();
  private readonly held = new Map<number, Held>();
  private metaSent: Record<string, string> = {};
  private readonly metaAt = new Map<string, number>();
  private readonly dirtyMeta = new Set<string>();
  private readonly sinceMs: number | null;
  private readonly prefix: string;
  private readonly parcel: ParcelWatcher | null;
  private readonly subs = new Map<string, { unsubscribe: () => Promise<void> } | null>();
  private dirs: UsageDirs = { claude: [], codex: [] };
  /** Codex homes whose config.toml asks for the priority tier (read at each pass). */
  private codexFast = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  private dirty = new Set<string>();
  private dirtyTimer?: NodeJS.Timeout;
  private readonly relists = new Set<NodeJS.Timeout>();
  private pollTimer?: NodeJS.Timeout;
  private holdTimer?: NodeJS.Timeout;
  private metaTimer?: NodeJS.Timeout;
  /** Something to write to offsets.json (offsets moved, files came or went, events were spooled). */
  private changed = true;
  private stopped = false;
  private out: NewEvent[] = [];
  private counts = { requests: 0, lateReplacements: 0 };
  private runSessions = new Map<string, string>();
  private readonly scannedRuns = new Set<string>();
  private holdMs: number;
  private pollMs: number;

  constructor(private readonly o: IngestOptions) {
    this.file = offsetsPath(o.env);
    this.dedup = new ClaudeDedup(o.prices ?? DEFAULT_PRICES);
    const since = o.config.sessions.ingestSince;
    this.sinceMs = since ? Date.parse(since) : null;
    this.prefix = o.config.runnerId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 12).replace(/[-_]+$/, '') || 'r';
    this.parcel = o.config.sessions.enabled ? loadParcelWatcher(o.env) : null;
    this.mode = !o.config.sessions.enabled ? 'off' : this.parcel ? 'watcher' : 'poll';
    // Test switches: shorter poll and hold.
    this.pollMs = Number(o.env.SVC_INGEST_POLL_MS) > 0 ? Number(o.env.SVC_INGEST_POLL_MS) : this.parcel ? WATCHER_RESCAN_MS : POLL_MS;
    this.holdMs = Number(o.env.SVC_INGEST_HOLD_MS) >= 0 && o.env.SVC_INGEST_HOLD_MS !== undefined ? Number(o.env.SVC_INGEST_HOLD_MS) : HOLD_MS;
  }

  /** Rebuild the dedup state from offsets.json, then read what is new and start watching. */
  start(): Promise<void> {
    if (this.mode === 'off') {
      this.save();
      log.info('session ingest is off (sessions.enabled is false)');
      return Promise.resolve();
    }
    log.info(`session ingest: ${this.mode === 'watcher' ? 'watching with @parcel/watcher' : '@parcel/watcher not available; polling'}`, { ingestSince: this.o.config.sessions.ingestSince ?? null });
    const first = this.enqueue(async () => {
      this.restore();
      await this.pass(null);
    });
    this.pollTimer = setInterval(() => void this.enqueue(() => this.pass(null)), this.pollMs);
    this.pollTimer.unref();
    return first;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearTimeout(this.dirtyTimer);
    for (const t of this.relists) clearTimeout(t);
    this.relists.clear();
    clearTimeout(this.holdTimer);
    clearTimeout(this.metaTimer);
    for (const s of this.subs.values()) void s?.unsubscribe().catch(() => {});
    this.subs.clear();
    if (this.mode === 'off') return;
    // Send what waits (held sidechain lines, throttled metadata) rather than re-read it next time.
    await this.enqueue(async () => {
      this.releaseHeld(true);
      this.flushMeta(true);
      this.spoolOut();
      this.save();
    }).catch(() => {});
  }

  /** Wait until every pass queued so far is done (tests, backfill). */
  idle(): Promise<unknown> {
    return this.enqueue(async () => {});
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch((e) => log.warn('session ingest pass failed', { error: errorText(e) }));
    return next;
  }

  // ---- state ----

  private restore(): void {
    let state: OffsetsFile | null = null;
    try {
      state = offsetsFile.parse(JSON.parse(readFileSync(this.file, 'utf8')));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') log.warn('offsets.json unreadable; transcripts are read from their start (the server stores each request once)', { error: errorText(e) });
    }
    if (!state) return;
    this.metaSent = state.metas;
    // Phase 1: replay each tracked file up to its stored offset through the dedup, sending nothing.
    for (const [path, rec] of Object.entries(state.files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      let st;
      try {
        st = statSync(path);
      } catch {
        continue; // gone while the daemon was down
      }
      const t: Tracked = { rec: { ...rec }, codex: rec.runtime === 'codex' ? newCodexFileState() : undefined };
      this.files.set(path, t);
      if (st.dev !== rec.dev || st.ino !== rec.ino || st.size < rec.offset || (rec.offset > 0 && !newlineBefore(path, rec.offset))) continue; // replaced: the pass re-reads it
      try {
        this.replay(path, t);
      } catch (e) {
        log.warn('could not replay a transcript; it is read again from its start', { file: path, error: errorText(e) });
        t.rec.offset = 0;
      }
    }
    // Metadata that was still throttled when the daemon stopped is sent now; what was sent is not.
    for (const key of this.tracker.sessions.keys()) if (this.metaSent[key] !== sha(JSON.stringify(this.metaPayload(key).payload)).slice(0, 16)) this.dirtyMeta.add(key);
  }

  private replay(path: string, t: Tracked): void {
    const end = t.rec.offset;
    if (end === 0) return;
    if (t.codex && t.codex.replaySecond === undefined) setCodexReplay(t.codex, detectCodexReplaySync(path));
    const fd = openSync(path, 'r');
    try {
      const buf = Buffer.allocUnsafe(1 << 20);
      let pos = 0;
      let carry: Buffer | null = null;
      let lineStart = 0;
      while (pos < end) {
        const got = readSync(fd, buf, 0, Math.min(buf.length, end - pos), pos);
        if (got === 0) break;
        let start = 0;
        for (let nl = buf.indexOf(10, 0); nl !== -1 && nl < got; nl = buf.indexOf(10, start)) {
          const piece = buf.subarray(start, nl);
          const line: Buffer = carry ? Buffer.concat([carry, piece]) : piece;
          carry = null;
          if (line.length) this.line(path, t, line, lineStart, false);
          start = nl + 1;
          lineStart = pos + start;
        }
        if (start < got) carry = carry ? Buffer.concat([carry, buf.subarray(start, got)]) : Buffer.from(buf.subarray(start, got));
        pos += got;
      }
    } finally {
      closeSync(fd);
    }
  }

  private save(force = true): void {
    if (!force && !this.changed) return;
    this.changed = false;
    const files: Record<string, FileRec> = {};
    const heldMin = new Map<string, number>();
    for (const h of this.held.values()) heldMin.set(h.entry.file, Math.min(heldMin.get(h.entry.file) ?? Infinity, h.entry.lineOffset));
    let corrupt = 0;
    for (const [path, t] of this.files) {
      // A held line is not spooled yet: after a crash, reading resumes at it.
      files[path] = { ...t.rec, offset: Math.min(t.rec.offset, heldMin.get(path) ?? Infinity) };
      corrupt += t.rec.corrupt;
    }
    const status: IngestStatus = {
      mode: this.mode,
      pid: process.pid,
      files: this.files.size,
      sessions: this.tracker.sessions.size,
      requests: this.counts.requests,
      corrupt,
      lateReplacements: this.counts.lateReplacements,
      ingestSince: this.o.config.sessions.ingestSince ?? null,
      updatedAt: new Date().toISOString(),
    };
    try {
      writeFileAtomic(this.file, JSON.stringify({ version: 1, files, metas: this.metaSent, status } satisfies OffsetsFile) + '\n');
    } catch (e) {
      log.warn('could not write offsets.json', { error: errorText(e) });
    }
  }

  // ---- watching ----

  private refreshDirs(): void {
    this.dirs = usageDirs(this.o.env, this.o.config.profiles);
    if (!this.parcel || this.stopped) return;
    const roots = [...this.dirs.claude.map((d) => join(d, 'projects')), ...this.dirs.codex.flatMap((h) => [join(h, 'sessions'), join(h, 'archived_sessions')])];
    for (const dir of roots) {
      if (this.subs.has(dir) || !existsSync(dir)) continue;
      this.subs.set(dir, null);
      this.parcel
        .subscribe(dir, (err, events) => {
          if (err) return log.warn('transcript watcher error; the rescan covers it', { dir, error: errorText(err) });
          const created: string[] = [];
          for (const e of events) {
            if (e.path.endsWith('.jsonl')) this.dirty.add(e.path);
            // A new directory: files written into it before its watch was set get no event of their own.
            else if (e.type === 'create') {
              for (const f of jsonlUnder(e.path)) this.dirty.add(f);
              created.push(e.path);
            }
          }
          this.markDirty();
          if (created.length) {
            const relist = setTimeout(() => {
              this.relists.delete(relist);
              for (const d of created) for (const f of jsonlUnder(d)) this.dirty.add(f);
              this.markDirty();
            }, NEW_DIR_RELIST_MS);
            this.relists.add(relist);
          }
        })
        .then((s) => {
          if (this.stopped) void s.unsubscribe();
          else this.subs.set(dir, s);
        })
        .catch((e) => {
          this.subs.delete(dir);
          log.warn('could not watch a transcript directory; the rescan covers it', { dir, error: errorText(e) });
        });
    }
  }

  /** Read the files in `dirty` once the watcher's events have paused for DEBOUNCE_MS. */
  private markDirty(): void {
    if (this.stopped || !this.dirty.size) return;
    clearTimeout(this.dirtyTimer);
    this.dirtyTimer = setTimeout(() => {
      const paths = this.dirty;
      this.dirty = new Set();
      void this.enqueue(() => this.pass(paths));
    }, DEBOUNCE_MS);
  }

  /** The files to look at: all of them (null), or those the watcher named. In path order. */
  private listFiles(paths: Set<string> | null): { path: string; runtime: 'claude' | 'codex' }[] {
    if (paths === null) {
      this.refreshDirs();
      return [...claudeFiles(this.dirs.claude).map((path) => ({ path, runtime: 'claude' as const })), ...codexFiles(this.dirs.codex).map((path) => ({ path, runtime: 'codex' as const }))];
    }
    const out: { path: string; runtime: 'claude' | 'codex' }[] = [];
    for (const path of [...paths].sort()) {
      if (this.dirs.claude.some((d) => under(path, join(d, 'projects')))) out.push({ path, runtime: 'claude' });
      else
        for (const h of this.dirs.codex) {
          if (under(path, join(h, 'sessions'))) out.push({ path, runtime: 'codex' });
          // A relative path in both trees is read from sessions/ only (as `usage` and ccusage do).
          else if (under(path, join(h, 'archived_sessions')) && !existsSync(join(h, 'sessions', relative(join(h, 'archived_sessions'), path)))) out.push({ path, runtime: 'codex' });
          else continue;
          break;
        }
    }
    return out;
  }

  // ---- reading ----

  /** One pass: read what is new in the files, spool the events, save the offsets. */
  private async pass(paths: Set<string> | null, only?: (path: string, runtime: 'claude' | 'codex') => boolean): Promise<number> {
    if (this.stopped) return 0;
    let read = 0;
    const list = this.listFiles(paths); // (refreshes the dirs when they are due)
    this.codexFast = fastCodexHomes(this.dirs.codex);
    const present = new Set(list.map((f) => f.path));
    for (const { path, runtime } of list) {
      if (only && !only(path, runtime)) continue;
      if (await this.readFile(path, runtime, Boolean(only))) read++;
      // Spool per file, so a large catch-up does not hold every event in memory.
      if (this.out.length) this.spoolOut();
    }
    if (paths === null && !only) {
      // Files deleted since: forget them (their requests stay counted).
      for (const path of [...this.files.keys()]) if (!present.has(path) && !existsSync(path)) this.changed = this.files.delete(path);
    }
    this.releaseHeld(false);
    this.flushMeta(false);
    this.spoolOut();
    this.save(false);
    return read;
  }

  /** Read one file from its offset. A file deleted or rotated meanwhile is no error. */
  private async readFile(path: string, runtime: 'claude' | 'codex', backfill: boolean): Promise<boolean> {
    let st;
    try {
      st = statSync(path);
    } catch {
      return false;
    }
    let t = this.files.get(path);
    if (!t) {
      if (!backfill && this.sinceMs !== null && st.mtimeMs < this.sinceMs) return false; // older than ingestSince
      t = { rec: { runtime, dev: st.dev, ino: st.ino, size: 0, offset: 0, corrupt: 0 }, codex: runtime === 'codex' ? newCodexFileState() : undefined };
      this.files.set(path, t);
    } else if (backfill) return false;
    const rec = t.rec;
    if (rec.dev !== st.dev || rec.ino !== st.ino || st.size < rec.offset || (rec.offset > 0 && !newlineBefore(path, rec.offset))) {
      log.info('a transcript was replaced or truncated; reading it again from its start (what was counted is not counted again)', { file: path });
      Object.assign(rec, { dev: st.dev, ino: st.ino, offset: 0, size: 0 });
      if (t.codex) t.codex = newCodexFileState();
    }
    if (st.size === rec.offset && rec.size === st.size) return false;
    try {
      if (t.codex && t.codex.replaySecond === undefined) setCodexReplay(t.codex, await detectCodexReplay(path));
      const r = await readLines(path, rec.offset, (line, at) => this.line(path, t, line, at, true));
      rec.corrupt += r.oversized;
      rec.offset = r.offset;
      rec.size = r.size;
      this.changed = true;
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') log.warn('could not read a transcript', { file: path, error: errorText(e) });
      return false;
    }
  }

  /** One complete line; `live` sends what it counts, a replay only rebuilds the state. */
  private line(path: string, t: Tracked, line: Buffer, at: number, live: boolean): void {
    if (t.rec.runtime === 'claude') {
      const v = parseClaudeLine(line, at, fileContext(path));
      if ('corrupt' in v) {
        if (live) t.rec.corrupt++;
        return;
      }
      if (!('entry' in v)) return;
      const e = v.entry;
      if (e.messageId === null) {
        const key = claudeRequest({ ...e, priceModel: e.priceModel ?? '' }).key;
        if (this.lineKeys.has(key)) return;
        this.lineKeys.add(key);
      }
      const res = this.dedup.add(e);
      if (!live) {
        if (res.kind !== 'dropped') this.touchClaude(e);
        return;
      }
      if (res.kind === 'dropped') return;
      const heldBefore = this.held.get(res.index);
      if (res.kind === 'replaced' && !heldBefore) {
        const prev = claudeRequest({ ...res.previous, priceModel: res.previous.priceModel ?? '' });
        if (prev.key !== claudeRequest({ ...e, priceModel: e.priceModel ?? '' }).key) {
          this.counts.lateReplacements++;
          log.warn('a sent request was replaced by a duplicate with another request id after its hold; the server may count both', { messageId: e.messageId });
        }
      }
      if (e.sidechain && this.holdMs > 0) {
        // Not sent until no better duplicate came for a while (docs/cost.md "Runner ingest").
        this.held.set(res.index, { entry: e, until: heldBefore?.until ?? Date.now() + this.holdMs });
        this.armHold();
        return;
      }
      this.held.delete(res.index);
      this.emitClaude(e);
      return;
    }
    const v = parseCodexLine(line, at, path, t.codex!, codexFileSession(path));
    if ('corrupt' in v) {
      if (live) t.rec.corrupt++;
      return;
    }
    if (!('event' in v)) return;
    const k = codexEventKey(v.event);
    if (this.codexSeen.has(k)) return;
    this.codexSeen.add(k);
    const st = t.codex!;
    this.tracker.touch('codex', v.event.sessionId, st.cwd ?? '', v.event.ms, v.event.model, st.cwd, st.branch);
    const sk = `codex\u0000${v.event.sessionId}`;
    if (!live) return;
    this.dirtyMeta.add(sk);
    const s = this.tracker.sessions.get(sk)!;
    const home = codexHomeOf(path, this.dirs.codex);
    this.emitRequest(codexRequest(v.event, home !== null && this.codexFast.has(home)), s.cwd, s.branch, v.event.sessionId, 'codex');
  }

  private touchClaude(e: ClaudeEntry): void {
    if (e.model === null || e.priceModel === null) return;
    this.tracker.touch('claude', e.sessionId, e.cwd ?? '', e.ms, e.priceModel, e.cwd, e.branch);
  }

  private emitClaude(e: ClaudeEntry): void {
    if (e.model === null || e.priceModel === null) return; // <synthetic> or no model: not a request
    this.touchClaude(e);
    this.dirtyMeta.add(`claude\u0000${e.sessionId}`);
    const s = this.tracker.sessions.get(`claude\u0000${e.sessionId}`)!;
    this.emitRequest(claudeRequest(e as ClaudeEntry & { priceModel: string }), e.cwd ?? s.cwd, e.branch ?? s.branch, e.sessionId, 'claude');
  }

  private projectRoots(): { id: string; roots: string[] }[] {
    return this.o.projects().map((p) => {
      let real = p.root;
      try {
        real = realpathSync(p.root);
      } catch {}
      return { id: p.id, roots: real === p.root ? [p.root] : [p.root, real] };
    });
  }

  private attribution(runtime: 'claude' | 'codex', sessionId: string, cwd: string | null | undefined, branch: string | null | undefined): Attribution {
    const a = attribute(cwd ?? null, branch ?? null, this.projectRoots());
    a.run ??= this.runOf(runtime, sessionId);
    return a;
  }

  /** A skill run's session: its stream.jsonl names the agent's session id (report runs work in the root). */
  private runOf(_runtime: string, sessionId: string): string | null {
    const dir = join(stateDir(this.o.env), 'runs');
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return null;
    }
    for (const runId of names) {
      if (this.scannedRuns.has(runId)) continue;
      const stream = join(dir, runId, 'stream.jsonl');
      let text = '';
      try {
        const fd = openSync(stream, 'r');
        try {
          const buf = Buffer.alloc(64 * 1024);
          text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
        } finally {
          closeSync(fd);
        }
      } catch {
        continue;
      }
      const m = /"(?:session_id|thread_id)":"([^"]{1,256})"/.exec(text);
      if (m) {
        this.runSessions.set(m[1], runId);
        this.scannedRuns.add(runId);
      }
    }
    return this.runSessions.get(sessionId) ?? null;
  }

  private emitRequest(r: LlmRequest, cwd: string | null | undefined, branch: string | null | undefined, sessionId: string, runtime: 'claude' | 'codex'): void {
    const a = this.attribution(runtime, sessionId, cwd, branch);
    const payload: LlmRequest = { ...r, ...(a.project ? { project: a.project } : {}), ...(a.slot ? { slot: a.slot } : {}), ...(a.issue ? { issue: a.issue } : {}), ...(a.run ? { run: a.run } : {}) };
    const text = JSON.stringify(payload);
    this.out.push({
      id: `${this.prefix}.llm.${sha(r.key).slice(0, 32)}.${sha(text).slice(0, 8)}`,
      source: a.project ? `project:${a.project}` : 'runner',
      kind: LLM_REQUEST,
      ts: r.at,
      payload: payload as unknown as Record<string, unknown>,
    });
    this.counts.requests++;
  }

  private armHold(): void {
    if (this.holdTimer) return;
    this.holdTimer = setTimeout(() => {
      this.holdTimer = undefined;
      void this.enqueue(async () => {
        this.releaseHeld(false);
        this.flushMeta(false);
        this.spoolOut();
        this.save();
      });
    }, this.holdMs + 50);
    this.holdTimer.unref();
  }

  private releaseHeld(all: boolean): void {
    const now = Date.now();
    for (const [index, h] of this.held) {
      if (!all && h.until > now) continue;
      this.held.delete(index);
      // The dedup may have replaced it by a better sidechain line meanwhile: send what is kept.
      this.emitClaude(this.dedup.entries[index] ?? h.entry);
    }
    if (this.held.size && !this.stopped) this.armHold();
  }

  private metaPayload(key: string): { payload: SessionMeta; source: string } {
    const s = this.tracker.sessions.get(key)!;
    const a = this.attribution(s.runtime, s.sessionId, s.cwd, s.branch);
    const { project: _cwd, ...rest } = s;
    const payload: SessionMeta = { ...rest, models: [...rest.models].sort(), project: a.project, slot: a.slot, issue: a.issue, run: a.run };
    return { payload, source: a.project ? `project:${a.project}` : 'runner' };
  }

  /** session.meta for sessions that appeared or grew: at once the first time, then at most every 30 s. */
  private flushMeta(all: boolean): void {
    const now = Date.now();
    let later = false;
    for (const key of [...this.dirtyMeta]) {
      const last = this.metaAt.get(key);
      if (!all && last !== undefined && now - last < META_THROTTLE_MS) {
        later = true;
        continue;
      }
      this.dirtyMeta.delete(key);
      const { payload, source } = this.metaPayload(key);
      const text = JSON.stringify(payload);
      const digest = sha(text).slice(0, 16);
      if (this.metaSent[key] === digest) continue;
      this.metaAt.set(key, now);
      this.metaSent[key] = digest;
      this.out.push({ id: `${this.prefix}.meta.${sha(key).slice(0, 32)}.${digest.slice(0, 8)}`, source, kind: SESSION_META, ts: payload.lastAt, payload: payload as unknown as Record<string, unknown> });
    }
    if (later && !this.stopped && !this.metaTimer) {
      this.metaTimer = setTimeout(() => {
        this.metaTimer = undefined;
        void this.enqueue(async () => {
          this.flushMeta(false);
          this.spoolOut();
          this.save();
        });
      }, META_THROTTLE_MS);
      this.metaTimer.unref();
    }
  }

  private spoolOut(): void {
    if (!this.out.length) return;
    const events = this.out;
    this.out = [];
    this.changed = true;
    this.o.spool.append(events);
    this.o.onSpooled?.();
  }

  /** The watch list changed: sessions whose project, slot or run now read differently are sent again. */
  projectsChanged(): void {
    if (this.mode === 'off') return;
    void this.enqueue(async () => {
      for (const key of this.tracker.sessions.keys()) this.dirtyMeta.add(key);
      this.flushMeta(true);
      this.spoolOut();
      this.save(false);
    });
  }

  // ---- session.backfill ----

  /**
   * Read the transcripts of one project that the ingest skipped (last modified before ingestSince), or
   * only those modified since `since`. Once read they are tracked like the others; a second backfill
   * finds nothing left. Requests already counted are dropped by the dedup, so nothing counts twice.
   */
  backfill(projectId: string, since?: string): Promise<BackfillResult> {
    return this.enqueue(async () => {
      const sinceMs = since ? Date.parse(since) : null;
      const project = this.projectRoots().filter((p) => p.id === projectId);
      const requestsBefore = this.counts.requests;
      const heldBefore = this.held.size;
      const sessionsBefore = new Set(this.tracker.sessions.keys());
      const only = (path: string) => {
        if (this.files.has(path)) return false;
        if (sinceMs !== null) {
          try {
            if (statSync(path).mtimeMs < sinceMs) return false;
          } catch {
            return false;
          }
        }
        return attribute(headCwd(path), null, project).project === projectId || this.claudeDirMatches(path, project);
      };
      const files = await this.pass(null, only);
      const sessions = [...this.tracker.sessions.keys()].filter((k) => !sessionsBefore.has(k)).length;
      return { files, requests: this.counts.requests - requestsBefore + Math.max(0, this.held.size - heldBefore), sessions };
    });
  }

  /** A Claude file without a cwd in its head: its projects/ directory is the root with every
   *  non-alphanumeric character replaced by `-`. */
  private claudeDirMatches(path: string, project: { roots: string[] }[]): boolean {
    const dir = fileContext(path).projectDir;
    return project.some((p) => p.roots.some((r) => r.replace(/[^A-Za-z0-9]/g, '-') === dir));
  }
}

/** Every *.jsonl below a directory (none when it is not one). */
function jsonlUnder(dir: string): string[] {
  try {
    return (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).filter((n) => n.endsWith('.jsonl')).map((n) => join(dir, n));
  } catch {
    return [];
  }
}

/** The offset sits right after a newline (else the file was rewritten in place). */
function newlineBefore(path: string, offset: number): boolean {
  try {
    const fd = openSync(path, 'r');
    try {
      const b = Buffer.alloc(1);
      return readSync(fd, b, 0, 1, offset - 1) === 1 && b[0] === 10;
    } finally {
      closeSync(fd);
    }
  } catch {
    return true; // gone: the read that follows finds out
  }
}

/** What `svc-runner status` prints about the ingest, from offsets.json. */
export function describeIngest(env: Env, daemonPid: number | null, config: Pick<RunnerConfig, 'sessions'>): string {
  if (!config.sessions.enabled) return 'off (sessions.enabled is false)';
  let s: IngestStatus | undefined;
  try {
    s = offsetsFile.parse(JSON.parse(readFileSync(offsetsPath(env), 'utf8'))).status;
  } catch {}
  const counts = s ? `${s.files} file(s), ${s.sessions} session(s), ${s.requests} request(s) sent since start, ${s.corrupt} corrupt line(s) skipped${s.lateReplacements ? `, ${s.lateReplacements} late replacement(s)` : ''}` : 'nothing read yet';
  if (!daemonPid || !s || s.pid !== daemonPid) return `not running (${counts})`;
  const mode = s.mode === 'watcher' ? 'watching with @parcel/watcher' : s.mode === 'poll' ? 'polling (@parcel/watcher not available)' : 'off';
  return `${mode}; ${counts}`;
}
