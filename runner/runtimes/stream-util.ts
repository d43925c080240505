// What every runtime's headless-output reader shares (runs/stream.ts reads the stream; each runtime's
// streamLine in runner/runtimes/<name>/ reads its own lines).
export interface StreamSummary {
  /** The agent's final message: the report of a `report` run. */
  finalMessage: string | null;
  /** The agent said it failed (Claude: is_error or a non-success result; Codex: turn.failed/error). */
  error: string | null;
  /** Claude: a `result` line was seen; Codex: a `turn.completed` line. */
  completed: boolean;
  sessionId: string | null;
  costUsd: number | null;
  usage: Record<string, number> | null;
  turns: number | null;
}

export const emptySummary = (): StreamSummary => ({ finalMessage: null, error: null, completed: false, sessionId: null, costUsd: null, usage: null, turns: null });

const MAX_PROGRESS = 300;
export const oneLine = (s: string) => {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > MAX_PROGRESS ? `${t.slice(0, MAX_PROGRESS - 1)}…` : t;
};
export const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
export const obj = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);

export function numbers(v: unknown): Record<string, number> | null {
  const o = obj(v);
  if (!o) return null;
  const out: Record<string, number> = {};
  for (const [k, x] of Object.entries(o)) if (typeof x === 'number' && Number.isFinite(x)) out[k] = x;
  return Object.keys(out).length ? out : null;
}


/** A short hint of what a tool was asked (a command or a file), never more than a line. */
export function toolHint(input: Record<string, unknown> | null): string {
  const hint = str(input?.command) ?? str(input?.file_path) ?? str(input?.path) ?? str(input?.pattern);
  return hint ? ` ${hint}` : '';
}

