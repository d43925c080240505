// Skill runs as both sides see them (docs/skill-runs.md): the states and the limits of what a run's
// events carry. The runner cuts the patch and the report before it sends them; the server cuts them
// again when it stores them (spec: Limits, "Patch kept by server: at most 128 KiB").

export const RUN_STATES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled'] as const;
export type RunState = (typeof RUN_STATES)[number];
export const FINAL_STATES: readonly RunState[] = ['succeeded', 'failed', 'timed_out', 'cancelled'];
/** Moves only go forward: queued → starting → running → one final state, never out of it. */
export const stateRank = (s: RunState): number => (s === 'queued' ? 0 : s === 'starting' ? 1 : s === 'running' ? 2 : 3);

/**
 * A run id: the time in base 36 (so ids sort by creation) and 8 random hex digits. The runner picks it
 * for a run it is sent directly; the server picks it for a pool run (functions/runs/pool.ts), which exists
 * queued before any runner holds it, and sends it in skill.run's `runId`.
 */
export const newRunId = (now = Date.now()) =>
  `${now.toString(36).padStart(9, '0')}-${[...globalThis.crypto.getRandomValues(new Uint8Array(4))].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
export const RUN_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The server keeps at most this much of a patch. */
export const PATCH_KEEP_BYTES = 128 * 1024;
/** The report (the agent's final message) kept with a run. */
export const REPORT_KEEP_BYTES = 64 * 1024;

/** Text of at most `max` UTF-8 bytes, never cut inside a character; with `atLine`, after the last
 *  whole line that fits. */
export function cutUtf8(text: string, max: number, atLine = false): { text: string; cut: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return { text, cut: false };
  let end = max;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  let out = buf.subarray(0, end).toString('utf8');
  if (atLine && out.lastIndexOf('\n') > 0) out = out.slice(0, out.lastIndexOf('\n') + 1);
  return { text: out, cut: true };
}
