// Claude Code `claude -p … --output-format stream-json --verbose` (one JSON object per line):
//   {"type":"system","subtype":"init","session_id","model",…}
//   {"type":"assistant","message":{"content":[{"type":"text","text"}|{"type":"tool_use","name",…}],…}}
//   {"type":"user",…tool results…}
//   {"type":"result","subtype":"success"|"error_max_turns"|"error_during_execution","is_error",
//    "result":"<final text>","total_cost_usd","usage","num_turns","session_id"}
import { numbers, obj, oneLine, str, toolHint } from '../stream-util.ts';
import type { StreamSummary } from '../stream-util.ts';

export function claudeLine(o: Record<string, unknown>, s: StreamSummary): string[] {
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

