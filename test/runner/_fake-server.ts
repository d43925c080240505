// A small fake of the API for runner tests: GET /health, POST /runners/pair and the /runner WebSocket
// speaking the shared protocol frames (welcome, ack, command, projects). It records what it saw.
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { parseFrame, runnerFrame } from '../../protocol/frames.ts';
import type { RunnerEvent } from '../../protocol/frames.ts';
import { waitUntil } from './_harness.ts';

export interface FakeConn {
  ws: WebSocket;
  headers: IncomingHttpHeaders;
  frames: any[];
  openedAt: number;
  closedAt: number | null;
  /** Resolves with the first frame of this type not returned before (waits for it). */
  next: (type: string, timeoutMs?: number) => Promise<any>;
  send: (frame: unknown) => void;
  command: (name: string, args?: unknown, timeoutMs?: number) => Promise<any>;
}

export interface FakeServer {
  url: string;
  conns: FakeConn[];
  /** Every event received, in arrival order (a resend appears again). */
  received: RunnerEvent[];
  seen: Map<string, number>;
  invalid: string[];
  pairRequests: any[];
  options: {
    autoAck: boolean;
    projects: { id: string; root: string }[];
    /** Close code for new connections right after the upgrade (no welcome), e.g. 4401. */
    closeOnConnect: number | null;
    /** Answer for POST /runners/pair. */
    pair: (body: any) => { status: number; body: unknown };
    health: number;
    /** Called with each events frame before the ack is sent. */
    onEvents: (events: RunnerEvent[]) => void;
  };
  waitConns: (n: number, timeoutMs?: number) => Promise<FakeConn>;
  stop: () => Promise<void>;
}

export async function startFakeServer(): Promise<FakeServer> {
  const fake: FakeServer = {
    url: '',
    conns: [],
    received: [],
    seen: new Map(),
    invalid: [],
    pairRequests: [],
    options: {
      autoAck: true,
      projects: [],
      closeOnConnect: null,
      pair: () => ({ status: 200, body: { runnerId: 'runner-paired-1', token: 'svc_rt_PAIRED_SECRET_TOKEN_0123456789' } }),
      health: 200,
      onEvents: () => {},
    },
    waitConns: async (n, timeoutMs = 10_000) => {
      await waitUntil(() => fake.conns.length >= n, timeoutMs, () => `${n} connection(s), have ${fake.conns.length}`);
      return fake.conns[n - 1];
    },
    stop: async () => {},
  };

  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/health') {
        res.writeHead(fake.options.health, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ status: fake.options.health === 200 ? 'ok' : 'down', timestamp: new Date().toISOString() }));
      }
      if (req.method === 'POST' && /\/runners\/pair$/.test(req.url ?? '')) {
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(body);
        } catch {}
        fake.pairRequests.push({ url: req.url, headers: req.headers, body: parsed });
        const answer = fake.options.pair(parsed);
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(answer.body));
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }));
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (req, socket, head) => {
    if (!/\/runner$/.test(req.url ?? '')) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, req.headers));
  });

  let requestNo = 0;
  function accept(ws: WebSocket, headers: IncomingHttpHeaders) {
    const frames: any[] = [];
    const taken = new Set<any>();
    const conn: FakeConn = {
      ws,
      headers,
      frames,
      openedAt: Date.now(),
      closedAt: null,
      send: (frame) => ws.readyState === ws.OPEN && ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
      next: async (type, timeoutMs = 10_000) => {
        let found: any;
        await waitUntil(() => Boolean((found = frames.find((f) => f.type === type && !taken.has(f)))), timeoutMs, () => `a ${type} frame; saw ${JSON.stringify(frames).slice(0, 400)}`);
        taken.add(found);
        return found;
      },
      command: async (name, args = {}, timeoutMs = 15_000) => {
        const requestId = `req-${++requestNo}`;
        conn.send({ type: 'command', requestId, name, args, timeoutMs });
        let found: any;
        await waitUntil(() => Boolean((found = frames.find((f) => f.type === 'result' && f.requestId === requestId))), timeoutMs, `the result of ${name}`);
        return found;
      },
    };
    fake.conns.push(conn);
    ws.on('close', () => (conn.closedAt = Date.now()));
    if (fake.options.closeOnConnect) return ws.close(fake.options.closeOnConnect, 'closed by the fake server');
    ws.on('message', (data) => {
      const frame = parseFrame(runnerFrame, data.toString());
      if ('invalid' in frame) {
        fake.invalid.push(frame.invalid);
        return;
      }
      frames.push(frame);
      if (frame.type === 'ping') conn.send({ type: 'pong' });
      if (frame.type === 'events') {
        for (const e of frame.events) {
          fake.received.push(e);
          fake.seen.set(e.id, (fake.seen.get(e.id) ?? 0) + 1);
        }
        fake.options.onEvents(frame.events);
        if (fake.options.autoAck) conn.send({ type: 'ack', ids: frame.events.map((e) => e.id) });
      }
    });
    conn.send({ type: 'welcome', runnerId: 'runner-test-1', serverTime: new Date().toISOString(), projects: fake.options.projects });
  }

  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  fake.stop = async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => http.close(() => r()));
  };
  return fake;
}
