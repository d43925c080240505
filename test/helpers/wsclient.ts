// A minimal runner-protocol client for black-box hub tests: connect, read frames, send frames.
import WebSocket from 'ws';
import { PROTOCOL_VERSION } from '../../protocol/version.ts';

export interface Client {
  ws: WebSocket;
  frames: Record<string, unknown>[];
  /** Resolves with the next frame of this type (already received ones count). */
  next: (type: string, timeoutMs?: number) => Promise<Record<string, any>>;
  send: (frame: unknown) => void;
  closed: Promise<number>;
}

export function connect(baseUrl: string, token: string | null, opts: { protocol?: string | null } = {}): Client {
  const headers: Record<string, string> = { 'x-svc-runner-version': '0.1.0' };
  if (token) headers.authorization = `Bearer ${token}`;
  const protocol = opts.protocol === undefined ? String(PROTOCOL_VERSION) : opts.protocol;
  if (protocol !== null) headers['x-svc-protocol'] = protocol;
  const ws = new WebSocket(baseUrl.replace(/^http/, 'ws') + '/runner', { headers });
  const frames: Record<string, any>[] = [];
  const waiting: { type: string; resolve: (f: Record<string, any>) => void; reject: (err: Error) => void }[] = [];
  let closedWith: string | null = null;
  let seen = 0;
  const taken = new Set<Record<string, any>>();
  ws.on('message', (d) => {
    const frame = JSON.parse(d.toString());
    frames.push(frame);
    const w = waiting.findIndex((x) => x.type === frame.type);
    if (w >= 0) {
      taken.add(frame);
      waiting.splice(w, 1)[0].resolve(frame);
    }
    seen++;
  });
  ws.on('error', () => {});
  const closed = new Promise<number>((r) =>
    ws.on('close', (code, reason) => {
      // A frame still awaited cannot come now: say so at once, with the close code, instead of at the timeout.
      closedWith = `${code}${reason.length ? ` ${reason.toString()}` : ''}`;
      for (const w of waiting.splice(0)) w.reject(new Error(`the socket closed (${closedWith}) before a ${w.type} frame (seen ${seen}: ${JSON.stringify(frames).slice(0, 500)})`));
      r(code);
    }),
  );
  return {
    ws,
    frames,
    closed,
    send: (frame) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
    next: (type, timeoutMs = 30_000) => { // generous: a loaded machine may take seconds to answer
      const ready = frames.find((f) => f.type === type && !taken.has(f));
      if (ready) {
        taken.add(ready);
        return Promise.resolve(ready);
      }
      if (closedWith !== null) return Promise.reject(new Error(`the socket closed (${closedWith}) before a ${type} frame (seen ${seen}: ${JSON.stringify(frames).slice(0, 500)})`));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${type} frame within ${timeoutMs} ms (seen ${seen}: ${JSON.stringify(frames).slice(0, 500)})`)), timeoutMs);
        waiting.push({ type, resolve: (f) => (clearTimeout(timer), resolve(f)), reject: (err) => (clearTimeout(timer), reject(err)) });
      });
    },
  };
}

/** Create a runner through the admin API and pair it; returns its id and token. */
export async function pairRunner(api: (path: string, init?: RequestInit & { json?: unknown }) => Promise<Response>, baseUrl: string, name = 'machine-1') {
  const made = await (await api('/api/runners', { method: 'POST', json: { name } })).json();
  const res = await fetch(`${baseUrl}/runners/pair`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: made.code, hostname: 'host-a', version: '0.1.0', target: 'linux-amd64' }),
  });
  if (res.status !== 200) throw new Error(`pairing failed: ${res.status} ${await res.text()}`);
  const { runnerId, token } = await res.json();
  return { runnerId: runnerId as string, token: token as string, code: made.code as string };
}
