// The usage index (docs/runner.md "Usage", "The index"): `svc-runner usage` keeps, in the state dir's
// usage-index.json, what it read of each transcript — identity (dev, inode), size, mtime, the offset after
// the last complete line, and every counted line as parse.ts's compact array (Claude) or token count
// (Codex) with the Codex file state to go on from. The next run stats each file and reads only what is new:
// an unchanged file is taken from the index, a grown one is read from its offset, and the rest (a new file,
// another inode, a file shorter than before, the same size with another mtime, no newline before the
// offset) is read whole. The index keeps the lines, not per-day totals: the Claude dedup (claude.ts) picks
// one line among duplicates that can sit in different files, so a line appended later can replace one
// already counted, and `--tz`, `--since`, the session report all need the request's own time. So the
// cross-file rules run on the whole set every time, as on a full scan, and the results are equal by
// construction. A missing, unreadable or malformed index, or one written by another build, is a full scan,
// and `--rescan` forces one. Three files: usage-index.json (format, build, a generation id and each file's
// identity, size, mtime, offset: small, read first), usage-index.lines.json (the lines) and
// usage-index.result.json (the daily/monthly scan's deduplicated requests, for a run where no file
// changed: then neither the lines nor the dedup are needed), and usage-index.output.json (the last report
// printed with its arguments: the same call again with no file changed prints it as it is). Each is written to a temp file and renamed,
// the small one last (it names the generation the other two must carry); with no fsync, as a crash costs
// only a full scan.
import { mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { BUILD_VERSION } from '../../protocol/version.ts';
import { fileContext, parseClaudeLine } from '../runtimes/claude/transcript.ts';
import { codexFileSession, parseCodexLine, THREAD_SPAWN_WINDOW } from '../runtimes/codex/transcript.ts';
import type { CodexFileState } from '../runtimes/codex/transcript.ts';
import { newlineBefore, readLinesSync } from './lines.ts';
import { decodeEntry, encodeEntry } from './parse.ts';
import type { EncodedEntry, ParseJob, ParsedFile } from './parse.ts';

/** Bumped when what a record holds changes; the build is part of the key too (parsing rules change with it). */
const FORMAT = 1;

interface FileRec {
  runtime: 'claude' | 'codex';
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  offset: number;
  corrupt: number;
  entries?: EncodedEntry[];
  events?: NonNullable<ParsedFile['events']>;
  codex?: CodexFileState;
}

interface IndexDoc {
  format: number;
  build: string;
  gen: string;
  files: Record<string, FileRec>;
}

/** What each file holds: the meta file carries FileRec without the lines, the lines file only them. */
type Lines = Pick<FileRec, 'entries' | 'events' | 'codex'>;

/** A counted request as the daily and monthly reports need it: ms, runtime (0 claude, 1 codex), report model, price model, speed, tokens. */
export type ResultRow = [number, number, string, string, 'standard' | 'fast' | null, number, number, number, number, number];

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
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

function validMeta(r: unknown): r is FileRec {
  if (typeof r !== 'object' || r === null) return false;
  const f = r as FileRec;
  return (f.runtime === 'claude' || f.runtime === 'codex') && [f.dev, f.ino, f.size, f.mtimeMs, f.offset, f.corrupt].every(isNum) && f.offset >= 0 && f.offset <= f.size;
}

const validLines = (f: FileRec) => (f.runtime === 'claude' ? Array.isArray(f.entries) && f.entries.every(Array.isArray) : Array.isArray(f.events) && typeof f.codex === 'object' && f.codex !== null);

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

/** Temp file + rename: a reader sees the old file or the new one. No fsync: a torn index is a full scan. */
function writeReplace(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {}
    throw e;
  }
}

const linesPath = (path: string) => path.replace(/\.json$/, '.lines.json');
const resultPath = (path: string) => path.replace(/\.json$/, '.result.json');
const outputPath = (path: string) => path.replace(/\.json$/, '.output.json');

/** The index's meta file at `path` (records without their lines), or why it cannot be used. */
export function loadIndex(path: string): IndexDoc | string {
  let doc: IndexDoc;
  try {
    doc = readJson(path) as IndexDoc;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no index' : 'index unreadable';
  }
  if (typeof doc !== 'object' || doc === null || doc.format !== FORMAT || typeof doc.gen !== 'string' || typeof doc.files !== 'object' || doc.files === null) return 'index unreadable';
  if (doc.build !== BUILD_VERSION) return 'index of another build';
  for (const r of Object.values(doc.files)) if (!validMeta(r)) return 'index unreadable';
  return doc;
}

/** The lines of every record, from the lines file of the same generation; false when it does not fit. */
function loadLines(path: string, doc: IndexDoc): boolean {
  let lines: { gen: string; files: Record<string, Lines> };
  try {
    lines = readJson(linesPath(path)) as typeof lines;
  } catch {
    return false;
  }
  if (typeof lines !== 'object' || lines === null || lines.gen !== doc.gen || typeof lines.files !== 'object' || lines.files === null) return false;
  for (const [file, rec] of Object.entries(doc.files)) {
    Object.assign(rec, lines.files[file]);
    if (!validLines(rec)) return false;
  }
  return true;
}

/** The deduplicated requests for `key` if the result file is of this generation. */
function loadResult(path: string, gen: string, key: string): { rows: ResultRow[]; corrupt: number } | null {
  try {
    const r = readJson(resultPath(path)) as { gen: string; key: string; corrupt: number; rows: ResultRow[] };
    return r && r.gen === gen && r.key === key && Array.isArray(r.rows) && isNum(r.corrupt) ? r : null;
  } catch {
    return null;
  }
}

/** The last report printed, if it was made from this generation with the same arguments (`key`). */
function loadOutput(path: string, gen: string, key: string): { output: string; corrupt: number } | null {
  try {
    const r = readJson(outputPath(path)) as { gen: string; key: string; corrupt: number; output: string };
    return r && r.gen === gen && r.key === key && typeof r.output === 'string' && isNum(r.corrupt) ? r : null;
  } catch {
    return null;
  }
}

type Stat = { dev: number; ino: number; size: number; mtimeMs: number };

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

  async open(jobs: readonly ParseJob[], parseWhole: (jobs: ParseJob[]) => Promise<ParsedFile[]>, resultKey: string | null, outputKey: string | null): Promise<{ parsed: ParsedFile[] } | { rows: ResultRow[]; corrupt: number } | { output: string; corrupt: number }> {
    const stats = this.stats;
    stats.files = jobs.length;
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

  /** Writes the lines and the meta file when a file changed, and the result for `resultKey` (when given). */
  save(resultKey: string | null, rows: () => ResultRow[], corrupt: number): void {
    try {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
      if (this.changed) {
        this.gen = `${Date.now().toString(36)}.${process.pid}`;
        const meta: Record<string, FileRec> = {};
        const lines: Record<string, Lines> = {};
        for (const [f, { entries, events, codex, ...m }] of Object.entries(this.files)) {
          meta[f] = m as FileRec;
          lines[f] = { entries, events, codex };
        }
        writeReplace(linesPath(this.path), JSON.stringify({ gen: this.gen, files: lines }));
        if (resultKey !== null) writeReplace(resultPath(this.path), JSON.stringify({ gen: this.gen, key: resultKey, corrupt, rows: rows() }));
        writeReplace(this.path, JSON.stringify({ format: FORMAT, build: BUILD_VERSION, gen: this.gen, files: meta } satisfies IndexDoc));
        this.stats.written = true;
      } else if (resultKey !== null && !this.stats.result) {
        writeReplace(resultPath(this.path), JSON.stringify({ gen: this.gen, key: resultKey, corrupt, rows: rows() }));
        this.stats.written = true;
      }
    } catch {
      // a read-only state dir: the report is still right, the next run reads whole files again
    }
  }

  /** Keeps the report printed for these arguments, for the next run with the same ones and no file changed. */
  saveOutput(outputKey: string, output: string, corrupt: number): void {
    if (this.stats.output) return;
    try {
      writeReplace(outputPath(this.path), JSON.stringify({ gen: this.gen, key: outputKey, corrupt, output }));
    } catch {}
  }
}
