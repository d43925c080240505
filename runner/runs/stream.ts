// Reading an agent's output stream (docs/skill-runs.md, "What the runner reads from the stream").
// Each runtime reads its own lines (its streamLine in runner/runtimes/<name>/, which documents the format).
// Lines that are not JSON or of an unknown type are kept in stream.jsonl and otherwise ignored.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { RUNTIMES } from '../runtimes/index.ts';
import type { Runtime } from '../runtimes/types.ts';
import { emptySummary, obj } from '../runtimes/stream-util.ts';
import type { StreamSummary } from '../runtimes/stream-util.ts';

export { emptySummary };
export type { Runtime, StreamSummary };

/** Fold one line of the stream into the summary; answers the progress lines it is worth (maybe none). */
export function readStreamLine(runtime: Runtime, line: string, summary: StreamSummary): string[] {
  let o: Record<string, unknown> | null;
  try {
    o = obj(JSON.parse(line));
  } catch {
    return [];
  }
  if (!o) return [];
  return RUNTIMES[runtime].streamLine(o, summary);
}

/** Read a whole stream (exec-run at the end, the daemon when it recovers a finished run). */
export function summarize(runtime: Runtime, text: string): StreamSummary {
  const s = emptySummary();
  for (const line of text.split('\n')) if (line.trim()) readStreamLine(runtime, line, s);
  return s;
}

/** The progress texts of the whole lines added to a stream file since `at` (its offset and partial last line, both advanced). */
export function readNewLines(file: string, at: { offset: number; partial: string }, runtime: Runtime): string[] {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return [];
  }
  if (size <= at.offset) return [];
  const fd = openSync(file, 'r');
  const buf = Buffer.alloc(Math.min(size - at.offset, 4 * 1024 * 1024));
  try {
    at.offset += readSync(fd, buf, 0, buf.length, at.offset);
  } finally {
    closeSync(fd);
  }
  const lines = (at.partial + buf.toString('utf8')).split('\n');
  at.partial = lines.pop() ?? '';
  const scratch = emptySummary();
  return lines.flatMap((line) => readStreamLine(runtime, line, scratch));
}
