// Shared set-up of the inbound trigger tests: a real server with an encryption key, a project served by
// a paired runner, triggers made through the admin API, and signed POSTs made with the docs' signer
// (docs/examples/sign-trigger.ts) exactly as a caller would.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { signTrigger } from '../../docs/examples/sign-trigger.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer, StartOptions } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import type { Answer } from '../helpers/users.ts';
import { pairRunner } from '../helpers/wsclient.ts';

export const KEY = Buffer.alloc(32, 9).toString('base64');

export interface Setup {
  server: RunningServer;
  projectId: string;
  runner: { runnerId: string; token: string };
}

export async function setup(opts: StartOptions = {}): Promise<Setup> {
  const server = await startServer({ admin: true, ...opts, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', ...opts.env } });
  const runner = await pairRunner(server.api, server.url, `trig-${randomBytes(2).toString('hex')}`);
  const projectId = await makeProject(server, runner.runnerId);
  return { server, projectId, runner };
}

export async function makeProject(server: RunningServer, runnerId: string): Promise<string> {
  const name = `p-${randomBytes(3).toString('hex')}`;
  const made = await callAs(server, '/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId, rootPath: `/srv/${name}` } });
  if (made.status !== 201) throw new Error(`project: ${made.status} ${JSON.stringify(made.body)}`);
  return made.body.id;
}

export const skillTrigger = (over: Record<string, unknown> = {}) => ({
  name: 'on push',
  action: 'skill',
  skill: 'review',
  args: ['--ref', '{{payload.ref}}'],
  allowedPaths: ['ref'],
  ...over,
});

export interface Made {
  id: string;
  publicId: string;
  url: string;
  secret: string;
  trigger: Record<string, any>;
}

export async function createTrigger(server: RunningServer, projectId: string, body: Record<string, unknown> = skillTrigger(), token?: string): Promise<Made> {
  const res = await callAs(server, `/api/projects/${projectId}/triggers`, { method: 'POST', json: body, token });
  if (res.status !== 201) throw new Error(`create trigger: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.trigger.id, publicId: res.body.trigger.publicId, url: res.body.trigger.url, secret: res.body.secret, trigger: res.body.trigger };
}

export interface PostOptions {
  delivery?: string;
  timestamp?: number;
  /** Replace or remove (null) headers after signing. */
  headers?: Record<string, string | null>;
  contentType?: string | null;
  /** Sign with this secret instead. */
  secret?: string;
}

export interface HookAnswer {
  status: number;
  text: string;
  body: any;
  headers: Headers;
}

/** A signed POST to a trigger URL, signed over exactly the bytes sent. */
export async function post(url: string, secret: string, body: string | Uint8Array | Record<string, unknown>, opts: PostOptions = {}): Promise<HookAnswer> {
  const raw = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  const headers: Record<string, string> = { ...signTrigger(opts.secret ?? secret, raw, { delivery: opts.delivery, timestamp: opts.timestamp }) };
  if (opts.contentType !== null) headers['content-type'] = opts.contentType ?? 'application/json';
  const h = new Headers(headers);
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === null) h.delete(k);
    else h.set(k, v);
  }
  const res = await fetch(url, { method: 'POST', headers: h, body: raw as BodyInit });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, text, body: parsed, headers: res.headers };
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export async function deliveries(server: RunningServer, projectId: string, triggerId: string, query = ''): Promise<Record<string, any>[]> {
  const res = await callAs(server, `/api/projects/${projectId}/triggers/${triggerId}/deliveries${query}`);
  if (res.status !== 200) throw new Error(`deliveries: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.deliveries;
}

/** Poll until `check` returns a value (not undefined/false), or fail after `ms`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export type { Answer };

export interface RawAnswer {
  status: number;
  head: string;
  body: string;
  /** Milliseconds from the first byte written to the connection's end. */
  ms: number;
}

/**
 * A POST written on a plain socket, for what fetch cannot send: duplicated header lines, a body
 * trickled slowly. `bodyChunks` are written `gapMs` apart; resolves when the server closes or answers
 * with `connection: close`.
 */
export function rawPost(url: string, headerLines: string[], bodyChunks: (string | Buffer)[], gapMs = 0, contentLength?: number): Promise<RawAnswer> {
  const u = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname);
    const received: Buffer[] = [];
    const length = contentLength ?? bodyChunks.reduce((n, c) => n + Buffer.byteLength(c), 0);
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(`POST ${u.pathname} HTTP/1.1\r\nhost: ${u.host}\r\n${headerLines.map((l) => `${l}\r\n`).join('')}content-length: ${length}\r\nconnection: close\r\n\r\n`);
      let i = 0;
      const next = () => {
        if (i >= bodyChunks.length || socket.destroyed) return;
        socket.write(bodyChunks[i++]);
        timer = setTimeout(next, gapMs);
      };
      next();
    });
    socket.on('data', (d: Buffer) => received.push(d));
    socket.on('error', () => {}); // a reset after the answer still resolves on close
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(received).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      if (!status) return reject(new Error(`no answer: ${JSON.stringify(text.slice(0, 200))}`));
      resolve({ status, head: text.slice(0, split), body: split >= 0 ? text.slice(split + 4) : '', ms: Date.now() - started });
    });
  });
}
