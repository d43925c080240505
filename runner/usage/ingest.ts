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
//
// The steps have their files: offsets.ts (offsets.json, phase 1 replay), watching.ts (which files, when),
// counting.ts (dedup, held sidechain lines), events.ts (the events and their ids), attribution.ts
// (project, slot, issue, run). This file runs the passes, one at a time, and the timers.
import { existsSync, statSync } from 'node:fs';
import { DEFAULT_PRICES } from '../../protocol/prices.ts';
import type { ModelPrice } from '../../protocol/prices.ts';
import type { ProjectEntry, RunnerConfig } from '../config.ts';
import { errorText, log } from '../log.ts';
import type { Env } from '../paths.ts';
import type { NewEvent } from '../spool.ts';
import { attribute, Attributor, claudeDirMatches, headCwd } from './attribution.ts';
import { newCodexFileState, setCodexReplay } from '../runtimes/codex/transcript.ts';
import { LineCounter } from './counting.ts';
import { RecordIngest } from './records.ts';
import type { Tracked } from './counting.ts';
import { readLines } from './lines.ts';
import { offsetsPath, offsetStillValid, readOffsets, replayLines, writeOffsets } from './offsets.ts';
import type { FileRec, IngestStatus, OffsetsFile } from './offsets.ts';
import { codexHomeOf, fastCodexHomes, usageDirs } from './dirs.ts';
import type { UsageDirs } from './dirs.ts';
import { detectCodexReplay, detectCodexReplaySync, SessionTracker } from './scan.ts';
import { META_THROTTLE_MS, UsageEvents } from './events.ts';
import { listFiles, loadParcelWatcher, TranscriptWatch } from './watching.ts';

/** A kept sidechain line is sent only after this long without a better duplicate (docs/cost.md). */
const HOLD_MS = 5_000;
/** Full rescan: the poll in poll mode; a safety net next to @parcel/watcher. */
const POLL_MS = 5_000;
const WATCHER_RESCAN_MS = 60_000;

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

export interface BackfillResult {
  files: number;
  requests: number;
  sessions: number;
}

export class Ingest {
  readonly mode: 'watcher' | 'poll' | 'off';
  private readonly file: string;
  private readonly files = new Map<string, Tracked>();
  private readonly tracker = new SessionTracker();
  /** The dedup and the held sidechain lines. */
  private readonly lines: LineCounter;
  private readonly sinceMs: number | null;
  /** The llm.request and session.meta events made from what was read. */
  private readonly events: UsageEvents;
  private readonly records: RecordIngest;
  /** The transcript trees under @parcel/watcher (mode 'watcher'). */
  private readonly watch: TranscriptWatch | null;
  private dirs: UsageDirs = { claude: [], codex: [] };
  /** Codex homes whose config.toml asks for the priority tier (read at each pass). */
  private codexFast = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  private pollTimer?: NodeJS.Timeout;
  private holdTimer?: NodeJS.Timeout;
  private metaTimer?: NodeJS.Timeout;
  /** Something to write to offsets.json (offsets moved, files came or went, events were spooled). */
  private changed = true;
  private stopped = false;
  private holdMs: number;
  private pollMs: number;

  constructor(private readonly o: IngestOptions) {
    this.file = offsetsPath(o.env);
    const since = o.config.sessions.ingestSince;
    this.sinceMs = since ? Date.parse(since) : null;
    const parcel = o.config.sessions.enabled ? loadParcelWatcher(o.env) : null;
    this.watch = parcel ? new TranscriptWatch(parcel, (paths) => void this.enqueue(() => this.pass(paths))) : null;
    this.events = new UsageEvents(o.config.runnerId, new Attributor(o.env, o.projects), this.tracker);
    this.records = new RecordIngest(this.tracker, this.events);
    this.mode = !o.config.sessions.enabled ? 'off' : parcel ? 'watcher' : 'poll';
    // Test switches: shorter poll and hold.
    this.pollMs = Number(o.env.SVC_INGEST_POLL_MS) > 0 ? Number(o.env.SVC_INGEST_POLL_MS) : parcel ? WATCHER_RESCAN_MS : POLL_MS;
    this.holdMs = Number(o.env.SVC_INGEST_HOLD_MS) >= 0 && o.env.SVC_INGEST_HOLD_MS !== undefined ? Number(o.env.SVC_INGEST_HOLD_MS) : HOLD_MS;
    this.lines = new LineCounter(o.prices ?? DEFAULT_PRICES, this.tracker, this.events, this.holdMs, () => this.armHold(), (path) => {
      const home = codexHomeOf(path, this.dirs.codex);
      return home !== null && this.codexFast.has(home);
    });
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
    this.watch?.stop();
    clearTimeout(this.holdTimer);
    clearTimeout(this.metaTimer);
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
    const state = readOffsets(this.file);
    if (!state) return;
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
      if (!offsetStillValid(path, rec, st)) continue; // replaced: the pass re-reads it
      try {
        this.replay(path, t);
      } catch (e) {
        log.warn('could not replay a transcript; it is read again from its start', { file: path, error: errorText(e) });
        t.rec.offset = 0;
      }
    }
    // Metadata that was still throttled when the daemon stopped is sent now; what was sent is not.
    this.events.restored(state.metas);
  }

  private replay(path: string, t: Tracked): void {
    const end = t.rec.offset;
    if (end === 0) return;
    if (t.codex && t.codex.replaySecond === undefined) setCodexReplay(t.codex, detectCodexReplaySync(path));
    replayLines(path, end, (line, at) => this.lines.line(path, t, line, at, false));
  }

  private save(force = true): void {
    if (!force && !this.changed) return;
    this.changed = false;
    const files: Record<string, FileRec> = {};
    const heldMin = this.lines.heldOffsets();
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
      requests: this.events.requests,
      corrupt,
      lateReplacements: this.lines.lateReplacements,
      ingestSince: this.o.config.sessions.ingestSince ?? null,
      updatedAt: new Date().toISOString(),
    };
    writeOffsets(this.file, { version: 1, files, metas: this.events.metaSent, status } satisfies OffsetsFile);
  }

  // ---- watching ----

  /** The config dirs and Codex homes (profiles may name new ones); their trees watched in mode 'watcher'. */
  private refreshDirs(): void {
    this.dirs = usageDirs(this.o.env, this.o.config.profiles);
    this.watch?.add(this.dirs);
  }

  // ---- reading ----

  /** One pass: read what is new in the files, spool the events, save the offsets. */
  private async pass(paths: Set<string> | null, only?: (path: string, runtime: 'claude' | 'codex') => boolean): Promise<number> {
    if (this.stopped) return 0;
    let read = 0;
    if (paths === null) this.refreshDirs();
    const list = listFiles(this.dirs, paths);
    this.codexFast = fastCodexHomes(this.dirs.codex);
    const present = new Set(list.map((f) => f.path));
    for (const { path, runtime } of list) {
      if (only && !only(path, runtime)) continue;
      if (await this.readFile(path, runtime, Boolean(only))) read++;
      // Spool per file, so a large catch-up does not hold every event in memory.
      if (this.events.waiting) this.spoolOut();
    }
    if (paths === null && !only) {
      // Files deleted since: forget them (their requests stay counted).
      for (const path of [...this.files.keys()]) if (!present.has(path) && !existsSync(path)) this.changed = this.files.delete(path);
    }
    if (paths === null && !only) read += await this.records.pass(this.dirs, this.sinceMs, () => this.events.waiting && this.spoolOut());
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
    if (!offsetStillValid(path, rec, st)) {
      log.info('a transcript was replaced or truncated; reading it again from its start (what was counted is not counted again)', { file: path });
      Object.assign(rec, { dev: st.dev, ino: st.ino, offset: 0, size: 0 });
      if (t.codex) t.codex = newCodexFileState();
    }
    if (st.size === rec.offset && rec.size === st.size) return false;
    try {
      if (t.codex && t.codex.replaySecond === undefined) setCodexReplay(t.codex, await detectCodexReplay(path));
      const r = await readLines(path, rec.offset, (line, at) => this.lines.line(path, t, line, at, true));
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
    if (this.lines.releaseHeld(all) && !this.stopped) this.armHold();
  }

  /** session.meta for sessions that appeared or grew: at once the first time, then at most every 30 s. */
  private flushMeta(all: boolean): void {
    const later = this.events.flushMeta(all);
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
    if (!this.events.waiting) return;
    const events = this.events.take();
    this.changed = true;
    this.o.spool.append(events);
    this.o.onSpooled?.();
  }

  /** The watch list changed: sessions whose project, slot or run now read differently are sent again. */
  projectsChanged(): void {
    if (this.mode === 'off') return;
    void this.enqueue(async () => {
      for (const key of this.tracker.sessions.keys()) this.events.dirtyMeta.add(key);
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
      const project = this.events.attributor.projectRoots().filter((p) => p.id === projectId);
      const requestsBefore = this.events.requests;
      const heldBefore = this.lines.held.size;
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
        return attribute(headCwd(path), null, project).project === projectId || claudeDirMatches(path, project);
      };
      const files = await this.pass(null, only);
      const sessions = [...this.tracker.sessions.keys()].filter((k) => !sessionsBefore.has(k)).length;
      return { files, requests: this.events.requests - requestsBefore + Math.max(0, this.lines.held.size - heldBefore), sessions };
    });
  }
}
