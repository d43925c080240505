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
// and `--rescan` forces one. Written atomically (temp file + rename), only when something changed.
import { readFileSync, statSync } from 'node:fs';
import { BUILD_VERSION } from '../../protocol/version.ts';
import { writeFileAtomic } from '../../protocol/atomic-file.ts';
import { fileContext, parseClaudeLine } from './claude.ts';
import { codexFileSession, parseCodexLine, THREAD_SPAWN_WINDOW } from './codex.ts';
import type { CodexFileState } from './codex.ts';
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
  files: Record<string, FileRec>;
}

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
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

function validRec(r: unknown): r is FileRec {
  if (typeof r !== 'object' || r === null) return false;
  const f = r as FileRec;
  if ((f.runtime !== 'claude' && f.runtime !== 'codex') || ![f.dev, f.ino, f.size, f.mtimeMs, f.offset, f.corrupt].every(isNum) || f.offset < 0 || f.offset > f.size) return false;
  return f.runtime === 'claude' ? Array.isArray(f.entries) && f.entries.every(Array.isArray) : Array.isArray(f.events) && typeof f.codex === 'object' && f.codex !== null;
}

/** The index at `path`, or why it cannot be used. */
export function loadIndex(path: string): IndexDoc | string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return 'no index';
  }
  let doc: IndexDoc;
  try {
    doc = JSON.parse(text) as IndexDoc;
  } catch {
    return 'index unreadable';
  }
  if (typeof doc !== 'object' || doc === null || doc.format !== FORMAT || typeof doc.files !== 'object' || doc.files === null) return 'index unreadable';
  if (doc.build !== BUILD_VERSION) return 'index of another build';
  for (const r of Object.values(doc.files)) if (!validRec(r)) return 'index unreadable';
  return doc;
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
 * Every job's parse, from the index where it can (see the top of this file), the rest through `parseWhole`
 * (scan.ts parseFiles: two threads for a large set). Writes the index back when anything changed.
 */
export async function parseIndexed(jobs: readonly ParseJob[], path: string, rescan: boolean, parseWhole: (jobs: ParseJob[]) => Promise<ParsedFile[]>): Promise<{ parsed: ParsedFile[]; stats: IndexStats }> {
  const loaded = rescan ? '--rescan' : loadIndex(path);
  const old = typeof loaded === 'string' ? null : loaded;
  const stats: IndexStats = { mode: old ? 'indexed' : 'full', reason: old ? null : (loaded as string), files: jobs.length, reused: 0, appended: 0, whole: 0, appendedBytes: 0, written: false };
  const files: Record<string, FileRec> = {};
  const parsed: (ParsedFile | undefined)[] = new Array(jobs.length);
  const whole: number[] = [];
  const stat: (Stat | null)[] = jobs.map((j) => {
    try {
      return statSync(j.file);
    } catch {
      return null;
    }
  });
  let changed = !old;
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i]!, st = stat[i];
    if (!st) {
      parsed[i] = { corrupt: 0, missing: true };
      continue;
    }
    const rec = old?.files[job.file];
    const how = plan(rec, st, job);
    if (how === 'whole') {
      whole.push(i);
      continue;
    }
    if (how === 'append') {
      stats.appendedBytes += readAppended(job, rec!, st);
      stats.appended++;
      changed = true;
    } else stats.reused++;
    files[job.file] = rec!;
    parsed[i] = fromRec(rec!, job);
  }
  if (whole.length) {
    const results = await parseWhole(whole.map((i) => jobs[i]!));
    whole.forEach((i, k) => {
      const rec = toRec(jobs[i]!, stat[i]!, results[k]!);
      if (rec) files[jobs[i]!.file] = rec;
      parsed[i] = results[k]!;
    });
    stats.whole = whole.length;
    changed = true;
  }
  if (old && Object.keys(old.files).some((f) => !(f in files))) changed = true; // files gone
  if (changed) {
    try {
      writeFileAtomic(path, JSON.stringify({ format: FORMAT, build: BUILD_VERSION, files } satisfies IndexDoc));
      stats.written = true;
    } catch {
      // a read-only state dir: the report is still right, the next run reads whole files again
    }
  }
  return { parsed: parsed as ParsedFile[], stats };
}
