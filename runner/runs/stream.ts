// Reading an agent's output stream (docs/skill-runs.md, "What the runner reads from the stream").
// Claude Code `claude -p … --output-format stream-json --verbose` prints one JSON object per line:
//   {"type":"system","subtype":"init","session_id","model",…}
//   {"type":"assistant","message":{"content":[{"type":"text","text"}|{"type":"tool_use","name",…}],…}}
//   {"type":"user",…tool results…}
//   {"type":"result","subtype":"success"|"error_max_turns"|"error_during_execution","is_error",
//    "result":"<final text>","total_cost_usd","usage","num_turns","session_id"}
// OpenAI Codex `codex exec --json …` prints JSONL events:
//   {"type":"thread.started","thread_id"} {"type":"turn.started"}
//   {"type":"item.started"|"item.completed","item":{"type":"agent_message","text"}|{"type":"command_execution","command"}|…}
//   {"type":"turn.completed","usage":{"input_tokens","cached_input_tokens","output_tokens"}}
//   {"type":"turn.failed","error":{"message"}} {"type":"error","message"}
// (older Codex versions name the message item `assistant_message`; both are read.)
// Lines that are not JSON or of an unknown type are kept in stream.jsonl and otherwise ignored.

import { closeSync, openSync, readSync, statSync } from 'node:fs';

export type Runtime = 'claude' | 'codex';

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
const oneLine = (s: string) => {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > MAX_PROGRESS ? `${t.slice(0, MAX_PROGRESS - 1)}…` : t;
};
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const obj = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);

function numbers(v: unknown): Record<string, number> | null {
  const o = obj(v);
  if (!o) return null;
  const out: Record<string, number> = {};
  for (const [k, x] of Object.entries(o)) if (typeof x === 'number' && Number.isFinite(x)) out[k] = x;
  return Object.keys(out).length ? out : null;
}

/** Fold one line of the stream into the summary; answers the progress lines it is worth (maybe none). */
export function readStreamLine(runtime: Runtime, line: string, summary: StreamSummary): string[] {
  let o: Record<string, unknown> | null;
  try {
    o = obj(JSON.parse(line));
  } catch {
    return [];
  }
  if (!o) return [];
  return runtime === 'claude' ? claudeLine(o, summary) : codexLine(o, summary);
}

function claudeLine(o: Record<string, unknown>, s: StreamSummary): string[] {
  switch (o.type) {
    case 'system':
      if (o.subtype !== 'init') return [];
      s.sessionId = str(o.session_id) ?? s.sessionId;
      return [`session started${str(o.model) ? ` (model ${o.model})` : ''}`];
    case 'assistant': {
      const content = obj(o.message)?.content;
      if (!Array.isArray(content)) return [];
      const out: string[] = [];
      for (const c of content.map(obj)) {
        if (c?.type === 'text' && str(c.text)?.trim()) {
          s.finalMessage = c.text as string;
          out.push(oneLine(c.text as string));
        } else if (c?.type === 'tool_use' && str(c.name)) out.push(oneLine(`tool: ${c.name}${toolHint(obj(c.input))}`));
      }
      return out;
    }
    case 'result': {
      s.completed = true;
      s.sessionId = str(o.session_id) ?? s.sessionId;
      if (typeof o.total_cost_usd === 'number') s.costUsd = o.total_cost_usd;
      s.usage = numbers(o.usage) ?? s.usage;
      if (typeof o.num_turns === 'number') s.turns = o.num_turns;
      if (str(o.result) !== null) s.finalMessage = o.result as string;
      const failed = o.is_error === true || (str(o.subtype) !== null && o.subtype !== 'success');
      if (failed) s.error = `the agent ended with ${str(o.subtype) ?? 'an error'}${str(o.result) ? `: ${oneLine(o.result as string)}` : ''}`;
      return [`result: ${str(o.subtype) ?? (failed ? 'error' : 'success')}`];
    }
    default:
      return [];
  }
}

/** A short hint of what a tool was asked (a command or a file), never more than a line. */
function toolHint(input: Record<string, unknown> | null): string {
  const hint = str(input?.command) ?? str(input?.file_path) ?? str(input?.path) ?? str(input?.pattern);
  return hint ? ` ${hint}` : '';
}

function codexLine(o: Record<string, unknown>, s: StreamSummary): string[] {
  switch (o.type) {
    case 'thread.started':
      s.sessionId = str(o.thread_id) ?? s.sessionId;
      return ['session started'];
    case 'item.completed': {
      const item = obj(o.item);
      const kind = item?.type ?? item?.item_type;
      if ((kind === 'agent_message' || kind === 'assistant_message') && str(item?.text)?.trim()) {
        s.finalMessage = item!.text as string;
        return [oneLine(item!.text as string)];
      }
      if (kind === 'command_execution' && str(item?.command)) return [oneLine(`command: ${item!.command}`)];
      if (kind === 'file_change') return ['files changed'];
      return [];
    }
    case 'turn.completed':
      s.completed = true;
      s.usage = numbers(o.usage) ?? s.usage;
      s.turns = (s.turns ?? 0) + 1;
      return ['turn completed'];
    case 'turn.failed':
      s.error = `the agent's turn failed${str(obj(o.error)?.message) ? `: ${oneLine(obj(o.error)!.message as string)}` : ''}`;
      return ['turn failed'];
    case 'error':
      s.error = `the agent reported an error${str(o.message) ? `: ${oneLine(o.message as string)}` : ''}`;
      return [];
    default:
      return [];
  }
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
