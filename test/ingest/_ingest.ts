// Shared pieces of the ingest tests: transcript lines, a sandbox whose Claude and Codex dirs are inside
// it, and views of what the (fake) server received.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { RunnerEvent } from '../../protocol/frames.ts';
import { sandbox } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

export interface IngestBox extends Sandbox {
  claude: string;
  codex: string;
  /** A Claude transcript path: projects/<dir>/<session>.jsonl. */
  claudeFile: (projectDir: string, session: string) => string;
  offsets: () => any;
}

export function ingestSandbox(): IngestBox {
  const sb = sandbox();
  const claude = join(sb.dir, 'claude');
  const codex = join(sb.dir, 'codex');
  mkdirSync(join(claude, 'projects'), { recursive: true });
  mkdirSync(join(codex, 'sessions'), { recursive: true });
  sb.env.CLAUDE_CONFIG_DIR = claude;
  sb.env.CODEX_HOME = codex;
  return {
    ...sb,
    claude,
    codex,
    claudeFile: (projectDir, session) => join(claude, 'projects', projectDir, `${session}.jsonl`),
    offsets: () => {
      try {
        return JSON.parse(readFileSync(join(sb.env.XDG_STATE_HOME, 'svc', 'offsets.json'), 'utf8'));
      } catch {
        return null;
      }
    },
  };
}

export function append(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, text);
}

let n = 0;
export interface Msg {
  session: string;
  msg: string | null;
  req: string | null;
  at?: string;
  model?: string;
  input?: number;
  output?: number;
  read?: number;
  c5?: number;
  sidechain?: boolean;
  cwd?: string;
  branch?: string;
}

/** One Claude Code assistant line (with its newline). */
export function claudeLine(m: Msg): string {
  n++;
  const message: Record<string, unknown> = {
    model: m.model ?? 'claude-sonnet-4-5-20250929',
    type: 'message',
    role: 'assistant',
    content: [{ type: 'text', text: `a private answer ${n}` }],
    usage: { input_tokens: m.input ?? 10, output_tokens: m.output ?? 20, cache_read_input_tokens: m.read ?? 0, cache_creation_input_tokens: m.c5 ?? 0 },
  };
  if (m.msg !== null) message.id = m.msg;
  const line: Record<string, unknown> = {
    parentUuid: null,
    isSidechain: m.sidechain ?? false,
    userType: 'external',
    cwd: m.cwd ?? '/work/app',
    sessionId: m.session,
    version: '2.1.12',
    gitBranch: m.branch ?? 'main',
    type: 'assistant',
    message,
    uuid: `uuid-${process.pid}-${n}`,
    timestamp: m.at ?? '2026-01-20T12:00:00.000Z',
  };
  if (m.req !== null) line.requestId = m.req;
  return JSON.stringify(line) + '\n';
}

/** A Codex rollout: session_meta, turn_context, and token_count events with running totals. */
export function codexLines(session: string, cwd: string, counts: { input: number; cached: number; output: number }[], startTotal = { input: 0, cached: 0, output: 0 }): string {
  const lines: object[] = [];
  if (startTotal.input === 0) {
    lines.push({ timestamp: '2026-01-20T10:00:00.000Z', type: 'session_meta', payload: { id: session, cwd, git: { branch: 'main' } } });
    lines.push({ timestamp: '2026-01-20T10:00:01.000Z', type: 'turn_context', payload: { cwd, model: 'gpt-5-codex' } });
  }
  const total = { ...startTotal };
  counts.forEach((c, i) => {
    total.input += c.input;
    total.cached += c.cached;
    total.output += c.output;
    const u = (x: typeof c) => ({ input_tokens: x.input, cached_input_tokens: x.cached, output_tokens: x.output, reasoning_output_tokens: 0, total_tokens: x.input + x.output });
    lines.push({ timestamp: `2026-01-20T10:0${1 + (startTotal.input ? 5 : 0) + i}:00.000Z`, type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: u(total), last_token_usage: u(c) } } });
  });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

/** llm.request events received, and the same with each event id once. */
export const requests = (received: RunnerEvent[]) => received.filter((e) => e.kind === 'llm.request');
export const distinct = (events: RunnerEvent[]) => [...new Map(events.map((e) => [e.id, e])).values()];
export const keys = (events: RunnerEvent[]) => [...new Set(requests(events).map((e) => (e.payload as any).key as string))].sort();
