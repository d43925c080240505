// Parsing whole transcript files, one job per file, with no state shared between files, so that the jobs
// of a one-shot scan (`svc-runner usage`) can run on two threads (worker.ts) while what spans files — the
// Claude dedup, the Codex cross-file key, the sessions — is applied afterwards in ccusage's file order
// (scan.ts scanAll). This module imports nothing heavy: the worker bundle is built from it.
import { fileContext, parseClaudeLine } from '../runtimes/claude/transcript.ts';
import type { ClaudeEntry, FileContext } from '../runtimes/claude/transcript.ts';
import { CodexReplayDetector, codexFileSession, newCodexFileState, parseCodexLine, setCodexReplay, THREAD_SPAWN_WINDOW } from '../runtimes/codex/transcript.ts';
import type { CodexEvent, CodexFileState } from '../runtimes/codex/transcript.ts';
import { readHeadSync, readLinesSync } from './lines.ts';

export interface ParseJob {
  runtime: 'claude' | 'codex';
  file: string;
}

export interface ParsedFile {
  /** Claude: every line that counts, before the dedup. */
  entries?: ClaudeEntry[];
  /** Codex: every token count, with the file's cwd and branch as known at that line. */
  events?: { event: CodexEvent; cwd: string | null; branch: string | null }[];
  corrupt: number;
  /** The file could not be read (deleted between listing and reading): nothing counted. */
  missing?: boolean;
  /** Where the read ended (after the last complete line) and the size it saw: the usage index keeps them. */
  offset?: number;
  size?: number;
  /** Codex: the file's state after its last line, to go on from (scan-index.ts). */
  codex?: CodexFileState;
}

/** detectCodexReplay with synchronous reads (scan.ts has the async one for the daemon). */
export function detectCodexReplaySync(file: string): string | null {
  const d = new CodexReplayDetector(readHeadSync(file, THREAD_SPAWN_WINDOW));
  if (d.result === undefined) readLinesSync(file, 0, (line) => d.line(line));
  return d.result ?? null;
}

/** Reads and parses one whole file (synchronous reads: a one-shot scan, never the daemon). */
export function parseFile(job: ParseJob): ParsedFile {
  let corrupt = 0;
  try {
    if (job.runtime === 'claude') {
      const ctx = fileContext(job.file);
      const entries: ClaudeEntry[] = [];
      const r = readLinesSync(job.file, 0, (line, at) => {
        const v = parseClaudeLine(line, at, ctx);
        if ('corrupt' in v) corrupt++;
        else if ('entry' in v) entries.push(v.entry);
      });
      return { entries, corrupt: corrupt + r.oversized, offset: r.offset, size: r.size };
    }
    const state = newCodexFileState();
    setCodexReplay(state, detectCodexReplaySync(job.file));
    const fileSession = codexFileSession(job.file);
    const events: NonNullable<ParsedFile['events']> = [];
    const r = readLinesSync(job.file, 0, (line, at) => {
      const v = parseCodexLine(line, at, job.file, state, fileSession);
      if ('corrupt' in v) corrupt++;
      else if ('event' in v) events.push({ event: v.event, cwd: state.cwd, branch: state.branch });
    });
    return { events, corrupt: corrupt + r.oversized, offset: r.offset, size: r.size, codex: state };
  } catch {
    return { corrupt: 0, missing: true };
  }
}

// A worker's results cross threads by structured clone, which writes every key of every object: entries go
// as arrays of their values instead (what the file gives — session, project dir, path — is put back from
// the job), which makes the message about a third of the size and much faster to read.
export type EncodedEntry = [number, number, string | null, string | null, string | null, string | null, number, number, number, number, number, number, number, number | null, string | null, string | null];
const SPEED = [null, 'standard', 'fast'] as const;

export function encodeEntry(e: ClaudeEntry): EncodedEntry {
  return [e.ms, e.lineOffset, e.messageId, e.requestId, e.uuid, e.priceModel, SPEED.indexOf(e.speed), (e.sidechain ? 1 : 0) | (e.progress ? 2 : 0) | (e.sessionShape ? 4 : 0) | (e.model === null ? 8 : 0),
    e.inputTokens, e.outputTokens, e.cacheWrite5mTokens, e.cacheWrite1hTokens, e.cacheReadTokens, e.recordedCostUsd, e.cwd, e.branch];
}

export function decodeEntry(a: EncodedEntry, ctx: FileContext): ClaudeEntry {
  const [ms, lineOffset, messageId, requestId, uuid, priceModel, speed, flags, inputTokens, outputTokens, cacheWrite5mTokens, cacheWrite1hTokens, cacheReadTokens, recordedCostUsd, cwd, branch] = a;
  const sp = SPEED[speed] ?? null;
  return {
    sessionId: ctx.sessionId, projectDir: ctx.projectDir, file: ctx.file, lineOffset, ms, messageId, requestId, uuid,
    model: flags & 8 ? null : sp === 'fast' ? `${priceModel}-fast` : priceModel, priceModel, speed: sp,
    sidechain: (flags & 1) !== 0, inputTokens, outputTokens, cacheWrite5mTokens, cacheWrite1hTokens, cacheReadTokens, recordedCostUsd, cwd, branch,
    progress: (flags & 2) !== 0, sessionShape: (flags & 4) !== 0,
  };
}

export type WireFile = Omit<ParsedFile, 'entries'> & { entries?: EncodedEntry[] };

export const toWire = (r: ParsedFile): WireFile => (r.entries ? { ...r, entries: r.entries.map(encodeEntry) } : (r as WireFile));

export function fromWire(r: WireFile, job: ParseJob): ParsedFile {
  if (!r.entries) return r as ParsedFile;
  const ctx = fileContext(job.file);
  return { ...r, entries: r.entries.map((a) => decodeEntry(a, ctx)) };
}

/**
 * Takes jobs from the shared counter until none is left: `order` lists job indexes (largest files first),
 * `next` is an Int32Array on a SharedArrayBuffer that the threads share. Returns [jobIndex, result] pairs.
 */
export function drain(jobs: readonly ParseJob[], order: readonly number[], next: Int32Array): [number, ParsedFile][] {
  const out: [number, ParsedFile][] = [];
  for (;;) {
    const k = Atomics.add(next, 0, 1);
    if (k >= order.length) return out;
    const i = order[k]!;
    out.push([i, parseFile(jobs[i]!)]);
  }
}
