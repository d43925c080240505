// The usage index's files (scan-index.ts, docs/runner.md "The index"): what each holds, how each is read
// and checked against the meta file's generation, and written (temp file + rename, no fsync).
import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import type { ClaudeEntry } from '../runtimes/claude/transcript.ts';
import type { CodexFileState } from '../runtimes/codex/transcript.ts';
import type { EncodedEntry, ParsedFile } from './parse.ts';
import { BUILD_VERSION } from '../../protocol/version.ts';
import type { GroupRow, Groups } from './groups.ts';
/** Bumped when what a record holds changes; the build is part of the key too (parsing rules change with it). */
export const FORMAT = 3;

export interface FileRec {
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

export interface IndexDoc {
  format: number;
  build: string;
  gen: string;
  /** The generation of the lines file, and how many bytes of the journal (Claude lines appended since) go with it. */
  linesGen: string;
  journal: number;
  files: Record<string, FileRec>;
}

/**
 * What the stored result needs for an append to be merged without the full dedup: the Claude files in scan
 * order, for each of the first `claude` rows the index of the file of its request's first line (rows are in
 * dedup order, which is (file, line) of that line), and every message id of every counted Claude line.
 */
export interface ResultOrder {
  files: string[];
  rowFile: number[];
  claude: number;
  mids: string[];
}

/** The stored result with the Claude lines appended since, which scan.ts deduplicates and merges. */
export interface Appended {
  rows: ResultRow[];
  corrupt: number;
  order: ResultOrder;
  /** Per appended file (its index in order.files), its new lines in file order. */
  fresh: { file: number; entries: ClaudeEntry[] }[];
}

/** The stored report's sums with the Claude lines appended since, which scan.ts deduplicates and the report adds. */
export interface AppendedGroups {
  groups: Groups;
  corrupt: number;
  fresh: Appended['fresh'];
}

/** What each file holds: the meta file carries FileRec without the lines, the lines file only them. */
export type Lines = Pick<FileRec, 'entries' | 'events' | 'codex'>;

/** A counted request as the daily and monthly reports need it: ms, runtime (0 claude, 1 codex), report model, price model, speed, tokens. */
export type ResultRow = [number, number, string, string, 'standard' | 'fast' | null, number, number, number, number, number];

export const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

export function validMeta(r: unknown): r is FileRec {
  if (typeof r !== 'object' || r === null) return false;
  const f = r as FileRec;
  return (f.runtime === 'claude' || f.runtime === 'codex') && [f.dev, f.ino, f.size, f.mtimeMs, f.offset, f.corrupt].every(isNum) && f.offset >= 0 && f.offset <= f.size;
}

const validLines = (f: FileRec) => (f.runtime === 'claude' ? Array.isArray(f.entries) && f.entries.every(Array.isArray) : Array.isArray(f.events) && typeof f.codex === 'object' && f.codex !== null);

export const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

/** Temp file + rename: a reader sees the old file or the new one. No fsync: a torn index is a full scan. */
export function writeReplace(path: string, text: string | Uint8Array): void {
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

export const linesPath = (path: string) => path.replace(/\.json$/, '.lines.json');
export const resultPath = (path: string) => path.replace(/\.json$/, '.result.json');
export const outputPath = (path: string) => path.replace(/\.json$/, '.output.json');
export const sumsPath = (path: string) => path.replace(/\.json$/, '.sums.bin');
export const journalPath = (path: string) => path.replace(/\.json$/, '.journal.jsonl');

/** The index's meta file at `path` (records without their lines), or why it cannot be used. */
export function loadIndex(path: string): IndexDoc | string {
  let doc: IndexDoc;
  try {
    doc = readJson(path) as IndexDoc;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no index' : 'index unreadable';
  }
  if (typeof doc !== 'object' || doc === null || doc.format !== FORMAT || typeof doc.gen !== 'string' || typeof doc.linesGen !== 'string' || !isNum(doc.journal) || typeof doc.files !== 'object' || doc.files === null) return 'index unreadable';
  if (doc.build !== BUILD_VERSION) return 'index of another build';
  for (const r of Object.values(doc.files)) if (!validMeta(r)) return 'index unreadable';
  return doc;
}

/** The lines of every record, from the lines file of the same generation; false when it does not fit. */
export function loadLines(path: string, doc: IndexDoc): boolean {
  let lines: { gen: string; files: Record<string, Lines> };
  try {
    lines = readJson(linesPath(path)) as typeof lines;
  } catch {
    return false;
  }
  if (typeof lines !== 'object' || lines === null || lines.gen !== doc.linesGen || typeof lines.files !== 'object' || lines.files === null) return false;
  for (const [file, rec] of Object.entries(doc.files)) {
    Object.assign(rec, lines.files[file]);
    if (!validLines(rec)) return false;
  }
  if (doc.journal === 0) return true;
  try {
    // Each journal line: [file, its Claude lines appended]; bytes past doc.journal are of a run that did not finish.
    const text = readFileSync(journalPath(path)).subarray(0, doc.journal).toString('utf8');
    if (Buffer.byteLength(text) !== doc.journal || !text.endsWith('\n')) return false;
    for (const l of text.slice(0, -1).split('\n')) {
      const [file, entries] = JSON.parse(l) as [string, EncodedEntry[]];
      const rec = doc.files[file];
      if (!rec || rec.runtime !== 'claude' || !Array.isArray(entries)) return false;
      rec.entries!.push(...entries);
    }
  } catch {
    return false;
  }
  return true;
}

/** The deduplicated requests for `key` if the result file is of this generation. */
export function loadResult(path: string, gen: string, key: string): { rows: ResultRow[]; corrupt: number; order?: ResultOrder } | null {
  try {
    const r = readJson(resultPath(path)) as { gen: string; key: string; corrupt: number; rows: ResultRow[]; order?: ResultOrder };
    return r && r.gen === gen && r.key === key && Array.isArray(r.rows) && isNum(r.corrupt) ? r : null;
  } catch {
    return null;
  }
}

/** The last report printed, if it was made from this generation with the same arguments (`key`). */
export function loadOutput(path: string, gen: string, key: string): { output: string; corrupt: number } | null {
  try {
    const r = readJson(outputPath(path)) as { gen: string; key: string; corrupt: number; output: string };
    return r && r.gen === gen && r.key === key && typeof r.output === 'string' && isNum(r.corrupt) ? r : null;
  } catch {
    return null;
  }
}


/**
 * usage-index.sums.bin: the sums the last daily/monthly report was made of (groups.ts). A uint32 header length,
 * the header (JSON: gen, key, corrupt, how many Claude transcripts, how many costs and ids, and the groups
 * without their costs), padding to 8 bytes, every group's costs as float64 in order, then the id hashes as
 * ascending uint32: copied in and out whole, no number text and no loop per cost or id.
 */
export function encodeSums(gen: string, key: string, corrupt: number, g: Groups): Buffer {
  const costs = g.rows.reduce((n, r) => n + r[10].length, 0);
  const head = Buffer.from(JSON.stringify({ gen, key, corrupt, files: g.files, costs, mids: g.mids.length, rows: g.rows.map((r) => r.slice(0, 10)) }));
  const at = (4 + head.length + 7) & ~7;
  const out = Buffer.alloc(at + costs * 8 + g.mids.length * 4);
  out.writeUInt32LE(head.length, 0);
  head.copy(out, 4);
  const f64 = new Float64Array(out.buffer, out.byteOffset + at, costs);
  let k = 0;
  for (const r of g.rows) {
    f64.set(r[10], k);
    k += r[10].length;
  }
  new Uint32Array(out.buffer, out.byteOffset + at + costs * 8, g.mids.length).set(new Uint32Array(g.mids).sort());
  return out;
}

/** The stored sums if of this generation and these arguments; null when missing, torn or not of this format. */
export function loadSums(path: string, gen: string, key: string): { groups: Groups; corrupt: number } | null {
  const r = readSums(path);
  return r && r.gen === gen && r.key === key ? r : null;
}

/** The sums file of the index at `path` as stored, or null. */
export function readSums(path: string): { gen: string; key: string; groups: Groups; corrupt: number } | null {
  try {
    const buf = readFileSync(sumsPath(path));
    const len = buf.readUInt32LE(0);
    const h = JSON.parse(buf.toString('utf8', 4, 4 + len)) as { gen: string; key: string; corrupt: number; files: Groups['files']; costs: number; mids: number; rows: GroupRow[] };
    const at = (4 + len + 7) & ~7;
    if (typeof h.gen !== 'string' || typeof h.key !== 'string' || !isNum(h.corrupt) || !Number.isInteger(h.files) || !Number.isInteger(h.costs) || !Number.isInteger(h.mids) || !Array.isArray(h.rows)) return null;
    if (buf.length !== at + h.costs * 8 + h.mids * 4) return null;
    // Copies: the file's bytes need not be aligned in memory.
    const costs = new Float64Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + h.costs * 8));
    let k = 0;
    for (const r of h.rows as unknown[][]) {
      if (!Array.isArray(r) || r.length !== 10 || !Array.isArray(r[9]) || r[9].length % 2 !== 0) return null;
      const runs = r[9] as unknown[];
      let n = 0;
      for (let i = 0; i < runs.length; i += 2) n += Number.isInteger(runs[i]) && Number.isInteger(runs[i + 1]) && (runs[i + 1] as number) > 0 ? (runs[i + 1] as number) : NaN;
      if (!(n >= 0)) return null;
      r.push(costs.subarray(k, (k += n)));
    }
    if (k !== h.costs) return null;
    const mids = new Uint32Array(buf.buffer.slice(buf.byteOffset + at + h.costs * 8, buf.byteOffset + buf.length));
    return { gen: h.gen, key: h.key, groups: { files: h.files, mids, rows: h.rows }, corrupt: h.corrupt };
  } catch {
    return null;
  }
}
