// OpenAI Codex `codex exec --json …` (JSONL events):
//   {"type":"thread.started","thread_id"} {"type":"turn.started"}
//   {"type":"item.started"|"item.completed","item":{"type":"agent_message","text"}|{"type":"command_execution","command"}|…}
//   {"type":"turn.completed","usage":{"input_tokens","cached_input_tokens","output_tokens"}}
//   {"type":"turn.failed","error":{"message"}} {"type":"error","message"}
// (older Codex versions name the message item `assistant_message`; both are read.)
import { numbers, obj, oneLine, str } from '../stream-util.ts';
import type { StreamSummary } from '../stream-util.ts';

export function codexLine(o: Record<string, unknown>, s: StreamSummary): string[] {
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

