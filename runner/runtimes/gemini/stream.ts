// Gemini CLI `gemini -p … --output-format stream-json` (JSONL events; google-gemini/gemini-cli
// packages/core/src/output/types.ts; reference agent-formats-more.md §1):
//   {"type":"init","timestamp","session_id","model"}
//   {"type":"message","role":"user"|"assistant","content","delta"?}   (delta: a chunk to append)
//   {"type":"tool_use","tool_name","tool_id","parameters"} {"type":"tool_result","tool_id","status",…}
//   {"type":"error","severity":"warning"|"error","message"}
//   {"type":"result","status":"success"|"error","error"?{type,message},"stats"{total_tokens,input_tokens,output_tokens,cached,input,duration_ms,tool_calls}}
import { numbers, obj, oneLine, str, toolHint } from '../stream-util.ts';
import type { StreamSummary } from '../stream-util.ts';

/** The assistant text since the last tool use: the final message is the last such stretch. */
const pending = new WeakMap<StreamSummary, string>();

export function geminiLine(o: Record<string, unknown>, s: StreamSummary): string[] {
  switch (o.type) {
    case 'init':
      s.sessionId = str(o.session_id) ?? s.sessionId;
      return [`session started${str(o.model) ? ` (model ${o.model})` : ''}`];
    case 'message': {
      if (o.role !== 'assistant' || str(o.content) === null) return [];
      const text = o.delta === true ? (pending.get(s) ?? '') + (o.content as string) : (o.content as string);
      pending.set(s, text);
      if (text.trim()) s.finalMessage = text;
      return o.delta === true ? [] : text.trim() ? [oneLine(text)] : [];
    }
    case 'tool_use': {
      const done = pending.get(s);
      pending.delete(s);
      return [...(done?.trim() ? [oneLine(done)] : []), ...(str(o.tool_name) ? [oneLine(`tool: ${o.tool_name}${toolHint(obj(o.parameters))}`)] : [])];
    }
    case 'error':
      if (o.severity === 'error') s.error = `the agent reported an error${str(o.message) ? `: ${oneLine(o.message as string)}` : ''}`;
      return [];
    case 'result': {
      s.completed = true;
      const stats = obj(o.stats);
      s.usage = numbers(stats ? Object.fromEntries(Object.entries(stats).filter(([k]) => k !== 'models')) : null) ?? s.usage;
      if (typeof stats?.tool_calls === 'number') s.turns = stats.tool_calls + 1;
      const last = pending.get(s);
      pending.delete(s);
      if (o.status !== 'success') s.error = `the agent ended with ${str(obj(o.error)?.type) ?? 'an error'}${str(obj(o.error)?.message) ? `: ${oneLine(obj(o.error)!.message as string)}` : ''}`;
      return [...(last?.trim() && last !== s.finalMessage ? [oneLine(last)] : []), `result: ${o.status === 'success' ? 'success' : 'error'}`];
    }
    default:
      return [];
  }
}

/** Exit codes (packages/core/src/utils/errors.ts; the docs list only 0/1/42/53). */
const EXIT: Record<number, string> = {
  1: 'a general or API error',
  41: 'an authentication error (no valid Gemini credentials)',
  42: 'an input error (bad prompt or arguments)',
  44: 'a sandbox error',
  52: 'a configuration error',
  53: 'the turn limit (model.maxSessionTurns)',
  54: 'a tool execution error',
  55: 'an untrusted workspace (folder trust)',
  130: 'cancellation (SIGINT)',
};

export const geminiExit = (code: number): string | null => (EXIT[code] ? `gemini exited with code ${code}: ${EXIT[code]}` : null);
