// The runner's side of the `/runner` WebSocket (spec: Runner connection; DESIGN §3). One socket at a
// time; `Authorization: Bearer <token>` and the protocol version in the handshake. After the server's
// `welcome` the connection is ready. Any close except 4400/4401/4409 reconnects with exponential
// backoff 1 s → 60 s with ±20 % jitter (reset once a connection stayed up, or when the server closed a
// ready connection with 1012 because it is restarting; a lost socket, e.g. a killed server, keeps
// growing it); 4400/4401/4409 are final.
// Timers, randomness and the socket factory are injectable so the schedule is tested exactly.
import WebSocket from 'ws';
import { tokenBucket } from '../protocol/bucket.ts';
import type { TokenBucket } from '../protocol/bucket.ts';
import { FATAL_CLOSE_CODES, PROTOCOL_HEADER, RUNNER_FRAMES_PER_SECOND, SERVICE_RESTART, RUNNER_VERSION_HEADER, parseFrame, serverFrame } from '../protocol/frames.ts';
import type { RunnerFrame, ServerFrame } from '../protocol/frames.ts';
import { PROTOCOL_VERSION, VERSION } from '../protocol/version.ts';

export const BACKOFF_MIN_MS = 1000;
export const BACKOFF_MAX_MS = 60_000;
/** A connection that stayed ready this long resets the backoff. */
export const STABLE_MS = 10_000;
/** No `welcome` this long after the socket opened: drop it and reconnect. */
export const WELCOME_TIMEOUT_MS = 30_000;
/** A `ping` frame this often; nothing at all heard from the server for LIVENESS_MS: drop the socket. */
export const PING_EVERY_MS = 25_000;
export const LIVENESS_MS = 75_000;
/**
 * Frames sent per second on one socket, on average, and in a burst: below the hub's bound
 * (RUNNER_FRAMES_PER_SECOND, bursts of twice that), beyond which it drops frames. A frame over the
 * budget waits, in order, instead of being sent to be dropped; at most SEND_QUEUE_MAX_BYTES wait, and a
 * frame beyond that is not sent (`send` returns false), as it would not be on a closed socket.
 */
export const FRAMES_PER_SECOND = RUNNER_FRAMES_PER_SECOND * 0.8;
export const FRAMES_BURST = RUNNER_FRAMES_PER_SECOND;
export const SEND_QUEUE_MAX_BYTES = 16 * 1024 * 1024;

/** Delay before reconnect number `attempt` (0-based): 1 s, 2 s, 4 s … capped at 60 s, ±20 % jitter. */
export function backoffDelay(attempt: number, random: number): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(attempt, 16));
  const jittered = base * (0.8 + 0.4 * random);
  return Math.round(Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, jittered)));
}

/** `http(s)://host[:port][/prefix]` → `ws(s)://host[:port][/prefix]/runner`. */
export function runnerUrl(server: string): string {
  return server.replace(/^http/, 'ws').replace(/\/+$/, '') + '/runner';
}

export interface Clock {
  now: () => number;
  random: () => number;
  setTimeout: (fn: () => void, ms: number) => unknown;
  clearTimeout: (handle: unknown) => void;
}
export const realClock: Clock = {
  now: () => Date.now(),
  random: () => Math.random(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The part of a `ws` WebSocket the connection uses. */
export interface SocketLike {
  readonly readyState: number;
  on(event: 'open', fn: () => void): unknown;
  on(event: 'message', fn: (data: WebSocket.RawData, isBinary: boolean) => void): unknown;
  on(event: 'close', fn: (code: number, reason: Buffer) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'ping', fn: () => void): unknown;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
}
export type Dial = (url: string, headers: Record<string, string>) => SocketLike;
export const dialWs: Dial = (url, headers) => new WebSocket(url, { headers, handshakeTimeout: 20_000, maxPayload: 4 * 1024 * 1024 });

export interface ConnectionOptions {
  server: string;
  token: string;
  clock?: Clock;
  dial?: Dial;
  /** The server's welcome arrived: the connection is ready for frames. */
  onReady: (welcome: Extract<ServerFrame, { type: 'welcome' }>) => void;
  onFrame: (frame: ServerFrame) => void;
  /** A frame that did not parse; `raw` is the JSON value when it was JSON at all. */
  onInvalid: (reason: string, raw: unknown) => void;
  /** Closed with 4400/4401/4409: the connection stops for good. */
  onFatal: (code: number, reason: string) => void;
  onDown: (code: number, reason: string, retryInMs: number) => void;
}

export class Connection {
  private socket: SocketLike | null = null;
  private attempt = 0;
  private stopped = false;
  private ready = false;
  private readySince = 0;
  private lastHeard = 0;
  private readonly timers = new Set<unknown>();
  private readonly clock: Clock;
  private readonly dial: Dial;
  /** The current socket's frame budget and the frames waiting for it (the hub counts per connection). */
  private budget: TokenBucket;
  private queue: string[] = [];
  private queueBytes = 0;
  private draining = false;

  constructor(private readonly opts: ConnectionOptions) {
    this.clock = opts.clock ?? realClock;
    this.dial = opts.dial ?? dialWs;
    this.budget = this.newBudget();
  }

  private newBudget(): TokenBucket {
    return tokenBucket(FRAMES_PER_SECOND, FRAMES_BURST, () => this.clock.now());
  }

  get isReady(): boolean {
    return this.ready;
  }

  start(): void {
    this.stopped = false;
    this.open();
  }

  /** Close for good (daemon stopping); no reconnect. */
  stop(code = 1000, reason = 'runner stopping'): void {
    this.stopped = true;
    this.clearTimers();
    this.dropQueue();
    this.ready = false;
    try {
      this.socket?.close(code, reason);
    } catch {
      this.socket?.terminate();
    }
  }

  /** Sends now, or after the frames before it when the budget is spent; false when it cannot be sent. */
  send(frame: RunnerFrame): boolean {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    const text = JSON.stringify(frame);
    if (this.queue.length === 0 && this.budget.take()) {
      this.socket.send(text);
      return true;
    }
    if (this.queueBytes + text.length > SEND_QUEUE_MAX_BYTES) return false;
    this.queue.push(text);
    this.queueBytes += text.length;
    this.drainLater();
    return true;
  }

  private drainLater(): void {
    if (this.draining) return;
    this.draining = true;
    const socket = this.socket;
    this.later(() => {
      this.draining = false;
      if (this.socket !== socket || !socket || socket.readyState !== WebSocket.OPEN) return;
      while (this.queue.length > 0 && this.budget.take()) {
        const text = this.queue.shift()!;
        this.queueBytes -= text.length;
        socket.send(text);
      }
      if (this.queue.length > 0) this.drainLater();
    }, Math.max(1, Math.ceil(this.budget.waitMs())));
  }

  private dropQueue(): void {
    this.queue = [];
    this.queueBytes = 0;
    this.draining = false;
  }

  private later(fn: () => void, ms: number): void {
    const handle = this.clock.setTimeout(() => {
      this.timers.delete(handle);
      fn();
    }, ms);
    this.timers.add(handle);
  }

  private clearTimers(): void {
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.timers.clear();
  }

  private open(): void {
    const headers = {
      authorization: `Bearer ${this.opts.token}`,
      [PROTOCOL_HEADER]: String(PROTOCOL_VERSION),
      [RUNNER_VERSION_HEADER]: VERSION,
    };
    const socket = this.dial(runnerUrl(this.opts.server), headers);
    this.socket = socket;
    this.budget = this.newBudget();
    this.dropQueue();
    let closed = false;
    socket.on('open', () => {
      this.lastHeard = this.clock.now();
      this.later(() => !this.ready && this.socket === socket && socket.terminate(), WELCOME_TIMEOUT_MS);
      this.keepAlive(socket);
    });
    socket.on('ping', () => (this.lastHeard = this.clock.now()));
    socket.on('message', (data, isBinary) => {
      this.lastHeard = this.clock.now();
      if (this.socket !== socket) return;
      this.onMessage(isBinary ? null : data.toString());
    });
    socket.on('error', () => {}); // a close always follows; the reason is reported there
    socket.on('close', (code, reason) => {
      if (closed) return;
      closed = true;
      this.onClose(socket, code, reason.toString());
    });
  }

  private keepAlive(socket: SocketLike): void {
    this.later(() => {
      if (this.socket !== socket || this.stopped) return;
      if (this.clock.now() - this.lastHeard > LIVENESS_MS) return socket.terminate();
      if (this.ready) this.send({ type: 'ping' });
      this.keepAlive(socket);
    }, PING_EVERY_MS);
  }

  private onMessage(text: string | null): void {
    if (text === null) return this.opts.onInvalid('binary frames are not part of the protocol', null);
    const frame = parseFrame(serverFrame, text);
    if ('invalid' in frame) {
      let raw: unknown = null;
      try {
        raw = JSON.parse(text);
      } catch {}
      return this.opts.onInvalid(frame.invalid, raw);
    }
    if (frame.type === 'welcome' && !this.ready) {
      this.ready = true;
      this.readySince = this.clock.now();
      this.opts.onReady(frame);
      return;
    }
    this.opts.onFrame(frame);
  }

  private onClose(socket: SocketLike, code: number, reason: string): void {
    if (this.socket !== socket) return;
    this.clearTimers();
    this.dropQueue();
    const wasReady = this.ready;
    this.ready = false;
    this.socket = null;
    if (this.stopped) return;
    if (FATAL_CLOSE_CODES.includes(code)) {
      this.stopped = true;
      return this.opts.onFatal(code, reason);
    }
    if (wasReady && (code === SERVICE_RESTART || this.clock.now() - this.readySince >= STABLE_MS)) this.attempt = 0;
    const delay = backoffDelay(this.attempt++, this.clock.random());
    this.opts.onDown(code, reason, delay);
    this.later(() => !this.stopped && this.open(), delay);
  }
}
