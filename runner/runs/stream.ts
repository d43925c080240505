// Reading an agent's output stream (docs/skill-runs.md, "What the runner reads from the stream").
// Each runtime reads its own lines (its streamLine in runner/runtimes/<name>/, which documents the format).
// Lines that are not JSON or of an unknown type are kept in stream.jsonl and otherwise ignored.
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
