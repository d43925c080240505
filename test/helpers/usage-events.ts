// session.meta and llm.request events as a runner sends them (protocol/usage.ts), for tests that seed
// sessions and LLM requests through the real hub with a paired protocol client (test/helpers/wsclient.ts).
import { randomBytes } from 'node:crypto';
import type { Client } from './wsclient.ts';

export interface Ev {
  id: string;
  source: string;
  kind: string;
  ts: string;
  payload: Record<string, unknown>;
}
export interface Tokens {
  inputTokens: number;
  outputTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  cacheReadTokens: number;
}

export const uid = () => randomBytes(5).toString('hex');
let seq = 0;
export const ev = (kind: string, payload: Record<string, unknown>): Ev => ({ id: `${kind}.${++seq}.${uid()}`, source: 'sessions', kind, ts: new Date().toISOString(), payload });
export const tok = (i: number, o: number, w5 = 0, w1 = 0, r = 0): Tokens => ({ inputTokens: i, outputTokens: o, cacheWrite5mTokens: w5, cacheWrite1hTokens: w1, cacheReadTokens: r });
/** Now plus an offset, as an ISO time. */
export const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

export const meta = (runtime: string, sessionId: string, extra: Record<string, unknown> = {}) =>
  ev('session.meta', { runtime, sessionId, source: 'transcript', models: [], firstAt: iso(-3600_000), lastAt: iso(-60_000), ...extra });

/** A transcript line's request (the key as the runner makes it). */
export function transcriptReq(runtime: string, sessionId: string, model: string, requestId: string | null, t: Tokens, extra: Record<string, unknown> = {}): Ev {
  const messageId = `msg_${uid()}`;
  return ev('llm.request', {
    key: requestId ? `${runtime}:${messageId}:${requestId}` : `${runtime}:line:${sessionId}:${uid()}`,
    runtime,
    source: 'transcript',
    sessionId,
    requestId,
    messageId,
    model,
    at: iso(-120_000),
    ...t,
    ...extra,
  });
}

/** The OTel api_request record of a Claude request (merged with its transcript line by request id). */
export const otelReq = (sessionId: string, model: string, requestId: string, t: Tokens, extra: Record<string, unknown> = {}): Ev =>
  ev('llm.request', { key: `claude:otlp:${requestId}`, runtime: 'claude', source: 'otlp', sessionId, requestId, model, at: iso(-119_000), ...t, ...extra });

/** Send a batch and wait for the hub's ack of exactly these ids. */
export async function send(ws: Client, events: Ev[]): Promise<void> {
  ws.send({ type: 'events', events });
  const ack = await ws.next('ack');
  const want = events.map((e) => e.id).join(',');
  if ((ack.ids as string[]).join(',') !== want) throw new Error(`ack for other events: ${JSON.stringify(ack)}`);
}
