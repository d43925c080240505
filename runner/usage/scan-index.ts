// The usage index (docs/runner.md "Usage", "The index"): `svc-runner usage` keeps, in the state dir's
// usage-index.json, what it read of each transcript — identity (dev, inode), size, mtime, the offset after
// the last complete line, and every counted line as parse.ts's compact array (Claude) or token count
// (Codex) with the Codex file state to go on from. The next run stats each file and reads only what is new:
// an unchanged file is taken from the index, a grown one is read from its offset, and the rest (a new file,
// another inode, a file shorter than before, the same size with another mtime, no newline before the
// offset) is read whole. The index keeps the lines, not per-day totals: the Claude dedup (claude.ts) picks
// one line among duplicates that can sit in different files, so a line appended later can replace one
// already counted, and `--tz`, `--since`, the session report all need the request's own time. So the
// cross-file rules run on the whole set whenever a message id already counted may be involved, as on a full
// scan. An append of Claude lines whose message ids the stored result does not know cannot touch a stored
// line (duplicates share the message id): appendOnly reads them, scan.ts mergeAppended deduplicates them
// among themselves and merges them in (file, line) order, and they go to a journal instead of the lines file.
// When the last report was the same daily/monthly call, appendGroups takes its sums (usage-index.sums.bin,
// groups.ts) instead of the stored requests: the report adds the new requests to them, and saveGroups writes
// the journal, the meta file, the sums and the report, not the result file (left of an older generation, so
// unused: a report with other arguments takes the full path once).
// A missing, unreadable or malformed index, or one written by another build, is a full scan, and
// `--rescan` forces one. The files: usage-index.json (format, build, a generation id and, in scan order, each file's
// identity, size, mtime, offset: small, read first), usage-index.lines.json (the lines) and
// usage-index.result.json (the daily/monthly scan's deduplicated requests, for a run where no file
// changed: then neither the lines nor the dedup are needed), and usage-index.output.json (the last report
// printed with its arguments: the same call again with no file changed prints it as it is), and
// usage-index.journal.jsonl (Claude lines appended since the lines file; the meta file says how many of its
// bytes count). Each but the journal is written to a temp file and renamed, the small one last (it names the
// generation the others must carry); with no fsync, as a crash costs only a full scan.
import { appendFileSync, mkdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { BUILD_VERSION } from '../../protocol/version.ts';
import { fileContext, parseClaudeLine } from '../runtimes/claude/transcript.ts';
import { codexFileSession, parseCodexLine, THREAD_SPAWN_WINDOW } from '../runtimes/codex/transcript.ts';
import { newlineBefore, readLinesSync } from './lines.ts';
import { decodeEntry, encodeEntry } from './parse.ts';
import type { ParseJob, ParsedFile } from './parse.ts';
import type { ClaudeEntry } from '../runtimes/claude/transcript.ts';
import { encodeSums, FORMAT, journalPath, linesPath, loadIndex, loadLines, loadOutput, loadResult, loadSums, outputPath, resultPath, sumsPath, writeReplace } from './index-store.ts';
import type { Appended, AppendedGroups, FileRec, IndexDoc, Lines, ResultOrder, ResultRow } from './index-store.ts';
import { hasHash, midHash } from './groups.ts';
import type { Groups } from './groups.ts';
export type { Appended, AppendedGroups, ResultOrder, ResultRow } from './index-store.ts';
export { loadIndex } from './index-store.ts';

/** What a scan did (printed as one JSON line on stderr with SVC_USAGE_STATS=1: tests and benchmarks). */
export interface IndexStats {
  mode: 'full' | 'indexed';
  /** Why the scan was full: no index, unreadable, another build, `--rescan`. */
  reason: string | null;
  files: number;
  /** Files taken from the index as they were. */
  reused: number;
  /** Files read from their stored offset. */
  appended: number;
  /** Files read whole (new, replaced, truncated, rewritten). */
  whole: number;
  /** Bytes read from grown files (after their offsets); whole files are not counted here. */
  appendedBytes: number;
  /** Whether the index file was written. */
  written: boolean;
  /** The deduplicated requests were taken from usage-index.result.json (no file changed). */
  result: boolean;
  /** The report itself was taken from usage-index.output.json (no file changed, the same arguments). */
  output?: boolean;
  /** Claude lines appended with message ids known nowhere else: merged into the stored result, no full dedup. */
  merged?: boolean;
  /** The merged append was added to the stored report's sums (groups.ts): the stored requests were not read. */
  groups?: boolean;
  /** Why an append took the full dedup (a known message id, a Codex file, no ordered result). */
  fallback?: string;
}

type Stat = { dev: number; ino: number; size: number; mtimeMs: number };

const sameFiles = (a: unknown, b: string[]) => Array.isArray(a) && a.length === b.length && a.every((f, i) => f === b[i]);

/** How a file is read this time, from its record and its stat. */
function plan(rec: FileRec | undefined, st: Stat, job: ParseJob): 'reuse' | 'append' | 'whole' {
  if (!rec || rec.runtime !== job.runtime || rec.dev !== st.dev || rec.ino !== st.ino || st.size < rec.size) return 'whole';
  if (st.size === rec.size) return st.mtimeMs === rec.mtimeMs ? 'reuse' : 'whole';
  if (rec.offset > 0 && !newlineBefore(job.file, rec.offset)) return 'whole';
  // A Codex subagent rollout's replay is detected on the file's head (codex.ts detectCodexReplay): a file
  // still inside that window or its replay is read whole.
  if (job.runtime === 'codex' && (rec.size < THREAD_SPAWN_WINDOW || rec.codex!.skipReplay || rec.codex!.replaySecond === undefined)) return 'whole';
  return 'append';
}

/** Reads a grown file from its record's offset; the record is updated in place. */
function readAppended(job: ParseJob, rec: FileRec, st: Stat): number {
  const from = rec.offset;
  let corrupt = 0;
  let r;
  if (job.runtime === 'claude') {
    const ctx = fileContext(job.file);
    const entries = rec.entries!;
    r = readLinesSync(job.file, from, (line, at) => {
      const v = parseClaudeLine(line, at, ctx);
      if ('corrupt' in v) corrupt++;
      else if ('entry' in v) entries.push(encodeEntry(v.entry));
    });
  } else {
    const state = rec.codex!;
    const fileSession = codexFileSession(job.file);
    const events = rec.events!;
    r = readLinesSync(job.file, from, (line, at) => {
      const v = parseCodexLine(line, at, job.file, state, fileSession);
      if ('corrupt' in v) corrupt++;
      else if ('event' in v) events.push({ event: v.event, cwd: state.cwd, branch: state.branch });
    });
  }
  Object.assign(rec, { size: r.size, mtimeMs: st.mtimeMs, offset: r.offset, corrupt: rec.corrupt + corrupt + r.oversized });
  return r.offset - from;
}

const fromRec = (rec: FileRec, job: ParseJob): ParsedFile => {
  if (rec.runtime === 'codex') return { events: rec.events, corrupt: rec.corrupt };
  const ctx = fileContext(job.file);
  return { entries: rec.entries!.map((a) => decodeEntry(a, ctx)), corrupt: rec.corrupt };
};

function toRec(job: ParseJob, st: Stat, p: ParsedFile): FileRec | null {
  if (p.missing || p.offset === undefined || p.size === undefined) return null;
  const base = { runtime: job.runtime, dev: st.dev, ino: st.ino, size: p.size, mtimeMs: st.mtimeMs, offset: p.offset, corrupt: p.corrupt };
  return job.runtime === 'claude' ? { ...base, entries: (p.entries ?? []).map(encodeEntry) } : { ...base, events: p.events ?? [], codex: p.codex! };
}

/**
 * The usage index of one scan (see the top of this file). `open` plans every job: when no file changed and
 * `resultKey` is given, it answers the stored deduplicated requests; otherwise every job's parse, from the
 * index where it can, the rest through `parseWhole` (scan.ts parseFiles: two threads for a large set).
 * `save` writes what changed, and the scan's result for `resultKey`.
 */
export class UsageIndex {
  readonly stats: IndexStats;
  private readonly old: IndexDoc | null;
  private files: Record<string, FileRec> = {};
  /** The files in scan order: the meta file keeps them so (the sums' transcript indexes are into it). */
  private order: string[] = [];
  private changed: boolean;
  private gen: string;

  constructor(
    private readonly path: string,
    rescan: boolean,
  ) {
    const loaded = rescan ? '--rescan' : loadIndex(path);
    this.old = typeof loaded === 'string' ? null : loaded;
    this.changed = !this.old;
    this.gen = this.old?.gen ?? '';
    this.stats = { mode: this.old ? 'indexed' : 'full', reason: this.old ? null : (loaded as string), files: 0, reused: 0, appended: 0, whole: 0, appendedBytes: 0, written: false, result: false };
  }

  async open(jobs: readonly ParseJob[], parseWhole: (jobs: ParseJob[]) => Promise<ParsedFile[]>, resultKey: string | null, outputKey: string | null, groups = false): Promise<{ parsed: ParsedFile[] } | { rows: ResultRow[]; corrupt: number; order?: ResultOrder } | { output: string; corrupt: number } | Appended | AppendedGroups> {
    const stats = this.stats;
    stats.files = jobs.length;
    this.order = jobs.map((j) => j.file);
    const stat: (Stat | null)[] = jobs.map((j) => {
      try {
        return statSync(j.file);
      } catch {
        return null;
      }
    });
    let old = this.old;
    const plans = jobs.map((job, i) => (stat[i] ? plan(old?.files[job.file], stat[i]!, job) : 'gone'));
    const gone = old !== null && Object.keys(old.files).length !== plans.filter((p) => p === 'reuse' || p === 'append').length;
    if (old && !gone && plans.every((p) => p === 'reuse')) {
      const o = outputKey === null ? null : loadOutput(this.path, old.gen, outputKey);
      if (o) {
        Object.assign(stats, { reused: jobs.length, result: true, output: true });
        return o;
      }
      const r = resultKey === null ? null : loadResult(this.path, old.gen, resultKey);
      if (r) {
        Object.assign(stats, { reused: jobs.length, result: true });
        return r;
      }
    }
    if (old && !gone && groups && outputKey !== null && plans.some((p) => p === 'append')) {
      const g = this.appendGroups(jobs, plans, stat as Stat[], old, outputKey);
      if (typeof g !== 'string') return g;
      stats.fallback = g;
    }
    if (old && !gone && resultKey !== null && plans.some((p) => p === 'append') && stats.fallback !== 'known message id appended') {
      const a = this.appendOnly(jobs, plans, stat as Stat[], old, resultKey);
      if (typeof a !== 'string') return (delete stats.fallback, a);
      stats.fallback = a;
    }
    if (old && plans.some((p) => p === 'reuse' || p === 'append') && !loadLines(this.path, old)) {
      Object.assign(stats, { mode: 'full', reason: 'index unreadable' });
      old = null;
      this.changed = true;
    }
    if (gone) this.changed = true;
    const parsed: (ParsedFile | undefined)[] = new Array(jobs.length);
    const whole: number[] = [];
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i]!, st = stat[i];
      const how = old ? plans[i] : st ? 'whole' : 'gone';
      if (how === 'gone') {
        parsed[i] = { corrupt: 0, missing: true };
        continue;
      }
      if (how === 'whole') {
        whole.push(i);
        continue;
      }
      const rec = old!.files[job.file]!;
      if (how === 'append') {
        stats.appendedBytes += readAppended(job, rec, st!);
        stats.appended++;
        this.changed = true;
      } else stats.reused++;
      this.files[job.file] = rec;
      parsed[i] = fromRec(rec, job);
    }
    if (whole.length) {
      const results = await parseWhole(whole.map((i) => jobs[i]!));
      whole.forEach((i, k) => {
        const rec = toRec(jobs[i]!, stat[i]!, results[k]!);
        if (rec) this.files[jobs[i]!.file] = rec;
        parsed[i] = results[k]!;
      });
      stats.whole = whole.length;
      this.changed = true;
    }
    return { parsed: parsed as ParsedFile[] };
  }

  private pendingFiles: Record<string, FileRec> | null = null;
  private pendingJournal = '';

  /**
   * The fast path of an append: every changed file is a Claude transcript that grew, the stored result carries
   * its order, and no appended line has a message id the index already knows (then no stored line can be its
   * duplicate). Reads only the new bytes; anything else answers why not, and the caller takes the full path.
   */
  private appendOnly(jobs: readonly ParseJob[], plans: string[], stat: Stat[], old: IndexDoc, resultKey: string): Appended | string {
    if (plans.some((p) => p !== 'append' && p !== 'reuse')) return 'a file read whole';
    if (plans.some((p, i) => p === 'append' && jobs[i]!.runtime !== 'claude')) return 'codex append';
    const r = loadResult(this.path, old.gen, resultKey);
    const order = r?.order;
    const claudeJobs = jobs.filter((j) => j.runtime === 'claude').map((j) => j.file);
    if (!r || !order || !Array.isArray(order.mids) || !Array.isArray(order.rowFile) || order.rowFile.length !== order.claude || !order.rowFile.every(Number.isInteger) || !sameFiles(order.files, claudeJobs)) return 'no ordered result';
    const known = new Set(order.mids);
    const f = this.readFresh(jobs, plans, stat, old, claudeJobs, (m) => known.has(m));
    return typeof f === 'string' ? f : { rows: r.rows, corrupt: r.corrupt + f.corrupt, order, fresh: f.fresh };
  }

  /**
   * The fast path of an append for a daily or monthly report printed before from this generation: its sums
   * per group (groups.ts) take the new requests, and neither the stored requests nor the lines are read.
   */
  private appendGroups(jobs: readonly ParseJob[], plans: string[], stat: Stat[], old: IndexDoc, outputKey: string): AppendedGroups | string {
    if (plans.some((p) => p !== 'append' && p !== 'reuse')) return 'a file read whole';
    if (plans.some((p, i) => p === 'append' && jobs[i]!.runtime !== 'claude')) return 'codex append';
    const o = loadSums(this.path, old.gen, outputKey);
    const claudeJobs = jobs.filter((j) => j.runtime === 'claude').map((j) => j.file);
    // The costs' transcript indexes are into the meta file's Claude transcripts (written in scan order).
    const inMeta = Object.keys(old.files).filter((f) => old.files[f]!.runtime === 'claude');
    if (!o || o.groups.files !== claudeJobs.length || !sameFiles(inMeta, claudeJobs)) return 'no stored groups';
    const f = this.readFresh(jobs, plans, stat, old, claudeJobs, (m) => hasHash(o.groups.mids, midHash(m)));
    if (typeof f === 'string') return f;
    this.stats.groups = true;
    return { groups: o.groups, corrupt: o.corrupt + f.corrupt, fresh: f.fresh };
  }

  /** The new Claude lines of every grown file, unless one has a message id `known` says may be counted already. */
  private readFresh(jobs: readonly ParseJob[], plans: string[], stat: Stat[], old: IndexDoc, claudeJobs: string[], known: (mid: string) => boolean): { fresh: Appended['fresh']; corrupt: number } | string {
    const fresh: Appended['fresh'] = [];
    const files: Record<string, FileRec> = {};
    let corrupt = 0, bytes = 0, journal = '';
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i]!, rec = old.files[job.file]!;
      if (plans[i] !== 'append') {
        files[job.file] = rec;
        continue;
      }
      const ctx = fileContext(job.file);
      const entries: ClaudeEntry[] = [];
      let bad = 0;
      const got = readLinesSync(job.file, rec.offset, (line, at) => {
        const v = parseClaudeLine(line, at, ctx);
        if ('corrupt' in v) bad++;
        else if ('entry' in v) entries.push(v.entry);
      });
      if (entries.some((e) => e.messageId !== null && known(e.messageId))) return 'known message id appended';
      bytes += got.offset - rec.offset;
      corrupt += bad + got.oversized;
      files[job.file] = { ...rec, size: got.size, mtimeMs: stat[i]!.mtimeMs, offset: got.offset, corrupt: rec.corrupt + bad + got.oversized };
      if (entries.length) {
        fresh.push({ file: claudeJobs.indexOf(job.file), entries });
        journal += JSON.stringify([job.file, entries.map(encodeEntry)]) + '\n';
      }
    }
    Object.assign(this.stats, { appended: plans.filter((p) => p === 'append').length, reused: plans.filter((p) => p === 'reuse').length, appendedBytes: bytes, merged: true });
    this.pendingFiles = files;
    this.pendingJournal = journal;
    return { fresh, corrupt };
  }

  /** After appendOnly: the journal gets the new lines, the meta file the new offsets, the result the merged rows. */
  saveAppended(resultKey: string, rows: ResultRow[], order: ResultOrder, corrupt: number): void {
    try {
      const gen = this.saveJournal();
      writeReplace(resultPath(this.path), JSON.stringify({ gen, key: resultKey, corrupt, rows, order }));
      this.commitMeta(gen);
    } catch {}
  }

  /**
   * After appendGroups, once the report is made: the journal and the meta file as after appendOnly, and the
   * sums and report. The result file is not written: of an older generation now, it is not used again
   * (a report with other arguments takes the full path once, which writes it anew).
   */
  saveGroups(outputKey: string, output: string, corrupt: number, groups: Groups): void {
    try {
      const gen = this.saveJournal();
      this.commitMeta(gen);
      writeReplace(sumsPath(this.path), encodeSums(gen, outputKey, corrupt, groups));
      writeReplace(outputPath(this.path), JSON.stringify({ gen, key: outputKey, corrupt, output }));
    } catch {}
  }

  /** The appended lines onto the journal (cut first to what the meta file counts: more is of a run that did not finish). */
  private saveJournal(): string {
    const old = this.old!;
    const jp = journalPath(this.path);
    if (old.journal > 0) truncateSync(jp, old.journal);
    else writeFileSync(jp, '', { mode: 0o600 });
    appendFileSync(jp, this.pendingJournal);
    return `${Date.now().toString(36)}.${process.pid}`;
  }

  private commitMeta(gen: string): void {
    const old = this.old!;
    writeReplace(this.path, JSON.stringify({ format: FORMAT, build: BUILD_VERSION, gen, linesGen: old.linesGen, journal: old.journal + Buffer.byteLength(this.pendingJournal), files: this.pendingFiles! } satisfies IndexDoc));
    this.gen = gen;
    this.stats.written = true;
  }

  /** Writes the lines and the meta file when a file changed, and the result for `resultKey` (when given). */
  save(resultKey: string | null, rows: () => ResultRow[], corrupt: number, order?: () => ResultOrder): void {
    try {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
      if (this.changed) {
        this.gen = `${Date.now().toString(36)}.${process.pid}`;
        const meta: Record<string, FileRec> = {};
        const lines: Record<string, Lines> = {};
        for (const f of this.order) {
          if (!this.files[f]) continue;
          const { entries, events, codex, ...m } = this.files[f];
          meta[f] = m as FileRec;
          lines[f] = { entries, events, codex };
        }
        writeReplace(linesPath(this.path), JSON.stringify({ gen: this.gen, files: lines }));
        if (resultKey !== null) writeReplace(resultPath(this.path), JSON.stringify({ gen: this.gen, key: resultKey, corrupt, rows: rows(), order: order?.() }));
        writeReplace(this.path, JSON.stringify({ format: FORMAT, build: BUILD_VERSION, gen: this.gen, linesGen: this.gen, journal: 0, files: meta } satisfies IndexDoc));
        rmSync(this.path.replace(/\.json$/, '.sums.json'), { force: true }); // format 2's sums, not read any more
        this.stats.written = true;
      } else if (resultKey !== null && !this.stats.result) {
        writeReplace(resultPath(this.path), JSON.stringify({ gen: this.gen, key: resultKey, corrupt, rows: rows(), order: order?.() }));
        this.stats.written = true;
      }
    } catch {
      // a read-only state dir: the report is still right, the next run reads whole files again
    }
  }

  /** Keeps the report printed for these arguments, for the next run with the same ones and no file changed. */
  saveOutput(outputKey: string, output: string, corrupt: number, groups?: Groups): void {
    if (this.stats.output) return;
    try {
      if (groups) writeReplace(sumsPath(this.path), encodeSums(this.gen, outputKey, corrupt, groups));
      writeReplace(outputPath(this.path), JSON.stringify({ gen: this.gen, key: outputKey, corrupt, output }));
    } catch {}
  }
}
