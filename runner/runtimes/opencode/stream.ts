// OpenCode `opencode run --format json` (JSONL, one event a line; packages/opencode/src/cli/cmd/run.ts; reference
// agent-formats-more.md §2): every event is `{type, timestamp (ms), sessionID, …}`:
//   {"type":"step_start","part":{type:"step-start",…}}
//   {"type":"text","part":{type:"text",text,…}}                  (a finished text part)
//   {"type":"tool_use","part":{type:"tool",tool,callID,state:{status,input,…}}}
//   {"type":"step_finish","part":{type:"step-finish",reason,cost,tokens:{input,output,reasoning,cache:{read,write}}}}
//   {"type":"error","error":{name,data:{message}}}
// The step tokens are shown here only; usage is counted from the database (store.ts), never from these.
import { numbers, obj, oneLine, str, toolHint } from '../stream-util.ts';
import type { StreamSummary } from '../stream-util.ts';

export function opencodeLine(o: Record<string, unknown>, s: StreamSummary): string[] {
  s.sessionId = str(o.sessionID) ?? s.sessionId;
  const part = obj(o.part);
  switch (o.type) {
    case 'step_start':
      return [];
    case 'text': {
      const text = str(part?.text);
      if (!text?.trim()) return [];
      s.finalMessage = text;
      return [oneLine(text)];
    }
    case 'tool_use':
      return str(part?.tool) ? [oneLine(`tool: ${part!.tool}${toolHint(obj(obj(part!.state)?.input))}`)] : [];
    case 'step_finish': {
      const t = obj(part?.tokens);
      if (t) {
        const u = { ...(numbers(t) ?? {}), ...Object.fromEntries(Object.entries(numbers(obj(t.cache)) ?? {}).map(([k, v]) => [`cache_${k}`, v])) };
        const prev = s.usage ?? {};
        s.usage = Object.fromEntries([...new Set([...Object.keys(prev), ...Object.keys(u)])].map((k) => [k, (prev[k] ?? 0) + (u[k] ?? 0)]));
      }
      if (typeof part?.cost === 'number') s.costUsd = (s.costUsd ?? 0) + part.cost;
      s.turns = (s.turns ?? 0) + 1;
      if (part?.reason === 'stop') s.completed = true;
      return [];
    }
    case 'error': {
      const e = obj(o.error);
      const msg = str(obj(e?.data)?.message) ?? str(e?.message);
      s.error = `the agent reported ${str(e?.name) ?? 'an error'}${msg ? `: ${oneLine(msg)}` : ''}`;
      return [];
    }
    default:
      return [];
  }
}

/** OpenCode documents no exit codes: `opencode run` exits 0, or 1 on an error it reports (UNCONFIRMED beyond that). */
export const opencodeExit = (code: number): string | null =>
  code === 1 ? 'opencode exited with code 1: an error (provider, model, authentication or a failed session; see its error event)' : null;
