// The `/runner` WebSocket (spec: Runner connection; DESIGN §3): one socket per runner in this process.
//   accept     protocol version, then the token; the row records this process as the runner's holder
//              and control.ts closes an older socket of the same runner elsewhere; then `welcome`
//   frames     rate-limited, validated (protocol/frames.ts), then by type: hello (capabilities, and the
//              hub's follow-up), events (events/ingest.ts, acked after it returns), result (commands.ts),
//              profiles (profiles.ts), capacity (runs/pool.ts reads it), ping; terminal frames go to the hub's terminal route untouched
//   presence   a ping every HEARTBEAT_MS, last_seen_at at most every 5 s, and on close the row cleared
//              (when no newer socket took the runner over) and a live `runner` notice
// What a socket hands on goes through SocketHooks, which hub.ts wires; this file knows none of them.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { CLOSE, CODEHOST_CAPABILITY, MAX_FRAME_BYTES, POOL_CAPABILITY, PROTOCOL_HEADER, RUNNER_FRAMES_PER_SECOND, SERVICE_RESTART, RUNNER_VERSION_HEADER, parseFrame, runnerFrame } from '../../protocol/frames.ts';
import type { RunnerEvent, RunnerFrame, ServerFrame } from '../../protocol/frames.ts';
import { UNSTORABLE_MESSAGE, mayHoldUnstorable, unstorablePaths } from '../../protocol/text.ts';
import { PROTOCOL_VERSION } from '../../protocol/version.ts';
import { tokenBucket } from '../../protocol/bucket.ts';
import { ingestEvents } from '../events/ingest.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { whenReachable } from '../lib/db/unavailable.ts';
import type { Logger } from '../lib/log.ts';
import { publish } from '../live/publish.ts';
import { recordActivity } from '../activity/record.ts';
import { ONLINE_WITHIN_SECONDS } from './presence.ts';
import { helloProfiles, recordProfiles } from './profiles.ts';
import { watchList } from './watch-list.ts';
import type { TermFrame } from '../lib/context.ts';
import { countEventsAcked } from '../metrics/registry.ts';

const HEARTBEAT_MS = 20_000;
/** How long a runner's answer is kept, and stored once the database is back, while it cannot be reached. */
const RESULT_KEEP_MS = 60_000;
/** Frames a connection may send per second (burst twice that); beyond it frames are dropped. */
const FRAME_RATE = RUNNER_FRAMES_PER_SECOND;

export interface Conn {
  id: string;
  runnerId: string;
  ws: WebSocket;
  alive: boolean;
  frames: { take: () => boolean };
  lastRateWarning: number;
  /** The runner announced `codehost` in hello: its watch list may carry each project's repo. */
  codehost: boolean;
  /**
   * When the database recorded this socket as the runner's connection (µs since the epoch, the database's
   * clock, so comparable across replicas); unset until that update returns.
   */
  since?: bigint;
}

export type { TermFrame };
export type ResultFrame = Extract<RunnerFrame, { type: 'result' }>;

/** What a socket hands on beyond this file (hub.ts wires them to control.ts, commands.ts, terminal-channels.ts). */
export interface SocketHooks {
  /** The runner's row now names this process: an older socket of it elsewhere is to close. */
  connected(conn: Conn): Promise<void>;
  /** Once a hello is stored: the runner's capabilities are known. */
  hello(conn: Conn, capabilities: string[]): Promise<void>;
  result(runnerId: string, frame: ResultFrame): Promise<void>;
  terminal(runnerId: string, frame: TermFrame): void;
  /** The runner reported its capacity (stored): the pool dispatcher may have a place now. */
  capacity?(runnerId: string): void;
  /** This process no longer holds the runner's socket (before the database is told). */
  closed(runnerId: string): void;
  /** A batch of events was stored and fed to the sinks (not awaited: it may send commands to this runner). */
  ingested?(runnerId: string, events: RunnerEvent[]): void;
}

/** A channel was subscribed again: re-read what its missed notices would have said (logged, never thrown). */
export function resubscribed(log: Logger, channel: string, recheck: () => Promise<void>): void {
  log.info('listening again after the database connection came back; re-reading missed notices', { channel });
  void recheck().catch((err) => log.warn('re-reading missed notices failed', { channel, error: err instanceof Error ? err.message : String(err) }));
}

export class RunnerSockets {
  private readonly conns = new Map<string, Conn>(); // by runner id: one live socket per runner here
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4 * MAX_FRAME_BYTES });
  private heartbeat?: NodeJS.Timeout;
  private readonly lastTouch = new Map<string, number>();
  /** Per runner, the last of its row's connect/close writes (rowUpdate). */
  private readonly rowWrites = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    readonly instance: string,
    private readonly hooks: SocketHooks,
  ) {}

  startHeartbeat(): void {
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  stopHeartbeat(): void {
    clearInterval(this.heartbeat);
  }

  /** Close every socket (1012: the runners come back from their first backoff step) and clear our rows. */
  async stop(): Promise<void> {
    for (const conn of this.conns.values()) conn.ws.close(SERVICE_RESTART, 'server restarting');
    await this.db.query(sql`update runners set connected_instance = null where connected_instance = ${this.instance}`).catch(() => {});
  }

  /**
   * A runner's row written when a socket of it is accepted or closed here, in the order those happened: both
   * writes name this process, so a close's clear that landed after a quick reconnect's update (two pooled
   * connections keep no order) would leave the row offline while the runner is connected here — and that
   * socket's own close would then find nothing to clear and send no offline notice.
   */
  private rowUpdate<T>(runnerId: string, write: () => Promise<T>): Promise<T> {
    const next = (this.rowWrites.get(runnerId) ?? Promise.resolve()).then(write);
    const settled = next.then(() => {}, () => {});
    this.rowWrites.set(runnerId, settled);
    void settled.then(() => this.rowWrites.get(runnerId) === settled && this.rowWrites.delete(runnerId));
    return next;
  }

  get(runnerId: string): Conn | undefined {
    return this.conns.get(runnerId);
  }

  heldIds(): string[] {
    return [...this.conns.keys()];
  }

  send(conn: Conn, frame: ServerFrame): void {
    if (conn.ws.readyState === conn.ws.OPEN) conn.ws.send(JSON.stringify(frame));
  }

  /** Send a frame to a runner whose socket this process holds; false when it does not. */
  sendTo(runnerId: string, frame: ServerFrame): boolean {
    const conn = this.conns.get(runnerId);
    if (!conn) return false;
    this.send(conn, frame);
    return true;
  }

  /** Close a socket held here with 1012, as on a restart: the runner reconnects wherever the balancer puts it. */
  release(runnerId: string, reason: string): void {
    this.conns.get(runnerId)?.ws.close(SERVICE_RESTART, reason);
  }

  /** Whether the runner is connected to some server process (and was seen within a minute). */
  async isOnline(runnerId: string): Promise<boolean> {
    if (this.conns.has(runnerId)) return true;
    const [r] = await this.db.query<{ online: boolean }>(sql`
      select connected_instance is not null and last_seen_at > now() - interval '60 seconds' as online
        from runners where id = ${runnerId} and revoked_at is null`);
    return r?.online === true;
  }

  /** Node's `upgrade` event for /runner: authenticate, then keep the socket or close it with a code. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.accept(ws, req).catch((err) => {
        this.log.error('runner connection failed', { error: err instanceof Error ? err.message : String(err) });
        ws.close(1011, 'server error');
      }),
    );
  }

  private async accept(ws: WebSocket, req: IncomingMessage): Promise<void> {
    const protocol = req.headers[PROTOCOL_HEADER];
    if (protocol !== String(PROTOCOL_VERSION)) {
      this.log.warn('runner refused: protocol mismatch', { theirs: String(protocol ?? 'none'), ours: PROTOCOL_VERSION });
      return ws.close(CLOSE.protocolMismatch, `protocol ${PROTOCOL_VERSION} required`);
    }
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const [runner] = m
      ? await this.db.query<{ id: string }>(sql`select id from runners where token_hash = ${sha256Hex(m[1])} and revoked_at is null`)
      : [];
    if (!runner) {
      this.log.warn('runner refused: invalid or revoked token', { address: req.socket.remoteAddress });
      return ws.close(CLOSE.unauthorized, 'invalid or revoked token');
    }
    const conn: Conn = { id: randomUUID(), runnerId: runner.id, ws, alive: true, frames: tokenBucket(FRAME_RATE, FRAME_RATE * 2), lastRateWarning: 0, codehost: false };
    const version = String(req.headers[RUNNER_VERSION_HEADER] ?? '').slice(0, 64);
    // A newer connection of the same runner replaces any older one, here or on another replica.
    this.conns.get(runner.id)?.ws.close(CLOSE.replaced, 'replaced by a newer connection');
    this.conns.set(runner.id, conn);
    // Updates of one row are serialised, so the times they record order the connections of one runner
    // wherever they landed; notices between processes may arrive in any order and late.
    // Back after more than ONLINE_WITHIN_SECONDS without a word (or for the first time): runner.online in the activity feed.
    const [recorded] = await this.rowUpdate(runner.id, () =>
      this.db.query<{ since: string; name: string; back: boolean }>(sql`
        with prev as (select last_seen_at from runners where id = ${runner.id})
        update runners set connected_instance = ${this.instance}, last_seen_at = now(), version = ${version}
         where id = ${runner.id}
        returning (extract(epoch from clock_timestamp()) * 1000000)::bigint::text as since, name,
                  coalesce((select last_seen_at from prev) < now() - make_interval(secs => ${ONLINE_WITHIN_SECONDS}), true) as back`),
    );
    conn.since = BigInt(recorded?.since ?? 0);
    if (recorded?.back) await recordActivity(this.db, { kind: 'runner.online', runnerId: runner.id, data: { runnerId: runner.id, name: recorded.name, version: version || undefined }, dedupeKey: `runner.online:${runner.id}:${recorded.since}` });
    await this.hooks.connected(conn);
    await publish(this.db, { type: 'runner', id: runner.id, online: true }, { runnerId: runner.id });
    this.log.info('runner connected', { runnerId: runner.id, version });

    ws.on('pong', () => (conn.alive = true));
    // No failure while handling one socket may take the process down: every handler catches.
    ws.on('message', (data, isBinary) =>
      this.onFrame(conn, data.toString(), isBinary).catch((err) => this.log.error('runner frame crashed', { runnerId: runner.id, error: err instanceof Error ? err.stack : String(err) })),
    );
    ws.on('close', (code) => void this.onClose(conn, code).catch(() => {}));
    ws.on('error', (err) => this.log.warn('runner socket error', { runnerId: runner.id, error: err.message }));
    this.send(conn, { type: 'welcome', runnerId: runner.id, serverTime: new Date().toISOString(), projects: await watchList(this.db, runner.id) });
  }

  private allow(conn: Conn): boolean {
    if (conn.frames.take()) return true;
    const now = Date.now();
    if (now - conn.lastRateWarning > 1000) {
      conn.lastRateWarning = now;
      this.log.warn('runner frame flood: dropping frames', { runnerId: conn.runnerId });
      this.send(conn, { type: 'error', code: 'rate_limited', message: `more than ${FRAME_RATE} frames/s; frames are being dropped` });
    }
    return false;
  }

  private async onFrame(conn: Conn, data: string, isBinary: boolean): Promise<void> {
    if (!this.allow(conn)) return;
    const frame = isBinary ? { invalid: 'binary frames are not part of the protocol' } : parseFrame(runnerFrame, data);
    if ('invalid' in frame) {
      this.log.warn('runner frame refused', { runnerId: conn.runnerId, reason: frame.invalid });
      return this.send(conn, { type: 'error', code: 'invalid_frame', message: frame.invalid });
    }
    // Terminal output goes straight to the browser relaying it (no database work per frame).
    if (frame.type === 'term.output' || frame.type === 'term.exit') return this.hooks.terminal(conn.runnerId, frame);
    // The rest is stored: text PostgreSQL refuses is refused here, named, rather than failing the query.
    const unstorable = mayHoldUnstorable(data) ? unstorablePaths(frame) : [];
    if (unstorable.length) {
      this.log.warn('runner frame refused', { runnerId: conn.runnerId, reason: 'unstorable text', fields: unstorable.join(', ') });
      return this.send(conn, { type: 'error', code: 'invalid_frame', message: `${unstorable.join(', ')}: ${UNSTORABLE_MESSAGE}`.slice(0, 500) });
    }
    try {
      // A runner sends its answer once: a database away must not lose it (it is kept, below).
      await this.touch(conn.runnerId).catch((err) => {
        if (frame.type !== 'result') throw err;
      });
      switch (frame.type) {
        case 'hello':
          await this.db.query(sql`
            update runners set hostname = ${frame.hostname}, version = ${frame.version}, target = ${frame.target},
                   capabilities = ${sql.json(frame.capabilities)} where id = ${conn.runnerId}`);
          await helloProfiles(this.db, conn.runnerId, frame.capabilities);
          // The welcome went out before hello; a runner that reads repos gets its list again with them, and
          // a pool runner (its capabilities stored just now) with its pool memberships.
          const codehost = !conn.codehost && frame.capabilities.includes(CODEHOST_CAPABILITY);
          if (codehost) conn.codehost = true;
          if (codehost || frame.capabilities.includes(POOL_CAPABILITY)) {
            this.send(conn, { type: 'projects', projects: await watchList(this.db, conn.runnerId, conn.codehost) });
          }
          return await this.hooks.hello(conn, frame.capabilities);
        case 'events':
          // Acked only once the pipeline has stored the batch and fed its sinks.
          await ingestEvents(this.db, conn.runnerId, frame.events, data);
          countEventsAcked(frame.events, Date.now());
          this.hooks.ingested?.(conn.runnerId, frame.events);
          return this.send(conn, { type: 'ack', ids: frame.events.map((e) => e.id) });
        case 'result':
          return await whenReachable(() => this.hooks.result(conn.runnerId, frame), Date.now() + RESULT_KEEP_MS);
        case 'profiles':
          return await recordProfiles(this.db, conn.runnerId, frame.profiles);
        case 'ping':
          return this.send(conn, { type: 'pong' });
        case 'capacity':
          // What the pool dispatcher (runs/pool.ts) reads as the runner's places; it looks again at once.
          await this.db.query(sql`
            update runners set max_concurrent_runs = ${frame.maxConcurrentRuns}, running_runs = ${frame.running}, capacity_reported_at = now()
             where id = ${conn.runnerId}`);
          return this.hooks.capacity?.(conn.runnerId);
      }
    } catch (err) {
      this.log.error('runner frame failed', { runnerId: conn.runnerId, type: frame.type, error: err instanceof Error ? err.message : String(err) });
      this.send(conn, { type: 'error', code: 'server_error', message: 'the frame could not be processed; it was not acknowledged' });
    }
  }

  private async touch(runnerId: string): Promise<void> {
    const now = Date.now();
    if (now - (this.lastTouch.get(runnerId) ?? 0) < 5000) return;
    this.lastTouch.set(runnerId, now);
    await this.db.query(sql`update runners set last_seen_at = now() where id = ${runnerId}`);
  }

  private beat(): void {
    for (const conn of this.conns.values()) {
      if (!conn.alive) {
        this.log.warn('runner heartbeat lost; dropping socket', { runnerId: conn.runnerId });
        conn.ws.terminate();
        continue;
      }
      conn.alive = false;
      conn.ws.ping();
      void this.touch(conn.runnerId).catch(() => {});
    }
  }

  private async onClose(conn: Conn, code: number): Promise<void> {
    if (this.conns.get(conn.runnerId) !== conn) return; // already replaced
    this.conns.delete(conn.runnerId);
    this.lastTouch.delete(conn.runnerId);
    this.hooks.closed(conn.runnerId);
    const gone = await this.rowUpdate(conn.runnerId, () =>
      this.db.query(sql`update runners set connected_instance = null, last_seen_at = now() where id = ${conn.runnerId} and connected_instance = ${this.instance} returning 1`),
    ).catch(() => []);
    // Offline only when no newer socket (here or on another replica) took it over meanwhile.
    if (gone.length) await publish(this.db, { type: 'runner', id: conn.runnerId, online: false }, { runnerId: conn.runnerId }).catch(() => {});
    this.log.info('runner disconnected', { runnerId: conn.runnerId, code });
  }
}
