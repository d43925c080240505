// The runner hub (spec: Runner connection; DESIGN §3): the `/runner` WebSocket, its close codes, the
// event ingest with acks, presence, and commands that reach a runner whichever API process holds its
// socket. Commands travel as rows in `runner_commands`; NOTIFY only says "look at row X", so payloads
// of any size cross replicas, and PGlite's in-process LISTEN/NOTIFY serves a single process the same way.
// Terminals (terminal.attach) are relayed across replicas too: when the browser's socket and the runner's
// socket are held by different processes, their frames travel as NOTIFYs on `svc_term` (see relayTerm).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { COMMANDS, READ_ONLY_COMMANDS } from '../../protocol/commands.ts';
import type { CommandName } from '../../protocol/commands.ts';
import { CLOSE, CODEHOST_CAPABILITY, MAX_FRAME_BYTES, REPLAY_CAPABILITY, REPO, PROTOCOL_HEADER, RUNNER_FRAMES_PER_SECOND, SERVICE_RESTART, RUNNER_VERSION_HEADER, parseFrame, runnerFrame } from '../../protocol/frames.ts';
import { UNSTORABLE_MESSAGE, mayHoldUnstorable, unstorablePaths } from '../../protocol/text.ts';
import type { RunnerEvent, ServerFrame } from '../../protocol/frames.ts';
import { PROTOCOL_VERSION } from '../../protocol/version.ts';
import { tokenBucket } from '../../protocol/bucket.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { CommandOutcome, TermFrame, TermInput } from '../lib/context.ts';
import type { Db, Sql } from '../lib/db/index.ts';
import { whenReachable } from '../lib/db/unavailable.ts';
import type { Logger } from '../lib/log.ts';
import { recordUsage } from '../cost/ingest.ts';
import { recordSkillRuns } from '../runs/ingest.ts';
import { publish } from '../live/publish.ts';
import { helloProfiles, recordProfiles } from './profiles.ts';
import { Rebalancer } from './rebalance.ts';

const CTL = 'svc_runner_ctl';
const CMD = 'svc_runner_cmd';
const DONE = 'svc_runner_cmd_done';
const TERM = 'svc_term';
/**
 * Characters of terminal data per NOTIFY: a payload must stay under PostgreSQL's 8000 bytes, and JSON may
 * write one character as up to 6 (`\u001b`), so 1000 characters and the envelope always fit.
 */
const TERM_CHUNK = 1000;

/** A terminal frame between processes: o(utput) and x (exit) toward the browser's process; i(nput), z (resize) and q (close) toward the runner's. */
type TermNotice =
  | { d: 'o'; c: string; r: string; data: string }
  | { d: 'x'; c: string; r: string; reason: string }
  | { d: 'i'; c: string; r: string; data: string }
  | { d: 'z'; c: string; r: string; cols: number; rows: number }
  | { d: 'q'; c: string; r: string };

/** Split a string into pieces of at most `n` UTF-16 units without cutting a surrogate pair. */
function chunks(text: string, n: number): string[] {
  if (text.length <= n) return [text];
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(i + n, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}
const HEARTBEAT_MS = 20_000;
/** Runner event kinds that change what the Fleet page shows (live notice `fleet`). */
const FLEET_KINDS = /^(orchestrator|slot|pr|issue|pane|person)\./;
/**
 * A number with an exponent of three digits or more in a frame's text (Hub.ingest): a number token
 * where JSON puts a value (after `:`, `,`, `[` or white space). Inside a string only such text matches
 * too (`"a,1e400"`), which costs the slower way; a git SHA or base64 (`"3e1234…"`) no longer does.
 */
const BIG_EXPONENT = /[:,[\s]-?\d+(?:\.\d+)?[eE][+-]?\d{3}/;
/** How long a command waits for a runner that was connected moments ago to come back (awaitOnline). */
const RECONNECT_GRACE_MS = 5_000;
/** How often a waiting command checks that it was not lost with a socket (redeliver). */
const REDELIVER_CHECK_MS = 1_000;
/** How long a runner's answer is kept, and stored once the database is back, while it cannot be reached. */
const RESULT_KEEP_MS = 60_000;
/** Frames a connection may send per second (burst twice that); beyond it frames are dropped. */
const FRAME_RATE = RUNNER_FRAMES_PER_SECOND;

interface Conn {
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

export class Hub {
  readonly instance = randomUUID();
  private readonly conns = new Map<string, Conn>(); // by runner id: one live socket per runner here
  private readonly waiters = new Map<string, () => void>();
  /** Per waiting command: end its wait between checks now, so it reads its row again (resubscribed). */
  private readonly nudges = new Map<string, () => void>();
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4 * MAX_FRAME_BYTES });
  private unlisten: (() => Promise<void>)[] = [];
  private heartbeat?: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.unlisten = await Promise.all([
      // After a re-subscribe (the LISTEN connection came back: PostgreSQL restarted) each channel re-reads
      // what a notice missed meanwhile would have said, rather than leaving it to a timeout.
      this.db.listen(CTL, (p) => void this.onControl(p).catch((err) => this.log.error('runner control failed', { error: err })), () => this.resubscribed('control', () => this.recheckHeld())),
      this.db.listen(CMD, (p) => void this.onCommand(p).catch((err) => this.log.error('command dispatch failed', { error: err })), () => this.resubscribed('commands', () => this.sendPendingHeld())),
      this.db.listen(DONE, (p) => this.waiters.get(p)?.(), () => this.resubscribed('answers', async () => this.nudges.forEach((nudge) => nudge()))),
      this.db.listen(TERM, (p) => this.onTermNotice(p)),
    ]);
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    // Runner sockets kept spread over the replicas (rebalance.ts): some of ours move after a replica joins.
    this.rebalancer = new Rebalancer({ db: this.db, log: this.log, instance: this.instance, holder: this });
    await this.rebalancer.start();
  }
  private rebalancer?: Rebalancer;

  /** The runners whose sockets this process holds; `busy` when it relays a terminal of theirs. */
  heldRunners(): { id: string; busy: boolean }[] {
    const busy = new Set([...[...this.terminals.values()].map((t) => t.runnerId), ...this.remoteTerms.values()]);
    return [...this.conns.keys()].map((id) => ({ id, busy: busy.has(id) }));
  }

  /** Ask a runner held here to reconnect (1012, as on a restart): it is back within about 1 s, wherever the balancer puts it. */
  release(runnerId: string): void {
    this.conns.get(runnerId)?.ws.close(SERVICE_RESTART, 'moving to another server process');
  }

  async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.rebalancer?.stop();
    // 1012 (service restart): the runners come back from their first backoff step, not a long one.
    for (const conn of this.conns.values()) conn.ws.close(SERVICE_RESTART, 'server restarting');
    await this.db.query(sql`update runners set connected_instance = null where connected_instance = ${this.instance}`).catch(() => {});
    await Promise.all(this.unlisten.map((u) => u().catch(() => {})));
  }

  isConnectedHere(runnerId: string): boolean {
    return this.conns.has(runnerId);
  }

  /** Open terminal channels (terminal.attach) whose browser this process holds: runner frames go to `onFrame`. */
  private readonly terminals = new Map<string, { runnerId: string; onFrame: (frame: TermFrame) => void }>();
  /** Channels of runners held here whose browser is on another process (their output was published): channel → runner. */
  private readonly remoteTerms = new Map<string, string>();
  /** Terminal NOTIFYs leave one after another, so they commit, and arrive, in the order they were sent. */
  private termQueue: Promise<void> = Promise.resolve();

  /** Receive a terminal channel's frames from this runner until the returned function is called. */
  openTerminal(runnerId: string, channel: string, onFrame: (frame: TermFrame) => void): () => void {
    this.terminals.set(channel, { runnerId, onFrame });
    return () => {
      if (!this.terminals.delete(channel)) return;
      // Output still on its way for a channel closed here is dropped, not published for other processes.
      this.endedHere.add(channel);
      if (this.endedHere.size > 1000) this.endedHere.delete(this.endedHere.values().next().value!);
    };
  }
  private readonly endedHere = new Set<string>();

  /**
   * A browser's terminal frame for a runner: sent on its socket when held here, else published for the
   * process that holds it (which the attach command reached through runner_commands).
   */
  sendTerminal(runnerId: string, frame: TermInput): void {
    if (this.sendToRunner(runnerId, frame)) return;
    if (frame.type === 'term.input') for (const data of chunks(frame.data, TERM_CHUNK)) this.publishTerm({ d: 'i', c: frame.channel, r: runnerId, data });
    else if (frame.type === 'term.resize') this.publishTerm({ d: 'z', c: frame.channel, r: runnerId, cols: frame.cols, rows: frame.rows });
    else this.publishTerm({ d: 'q', c: frame.channel, r: runnerId });
  }

  /** A runner's terminal frame whose browser is not held here: published for the process that holds it. */
  private relayTerm(runnerId: string, frame: TermFrame): void {
    if (frame.type === 'term.output') {
      this.remoteTerms.set(frame.channel, runnerId);
      for (const data of chunks(frame.data, TERM_CHUNK)) this.publishTerm({ d: 'o', c: frame.channel, r: runnerId, data });
    } else {
      this.remoteTerms.delete(frame.channel);
      this.publishTerm({ d: 'x', c: frame.channel, r: runnerId, reason: frame.reason });
    }
  }

  private publishTerm(notice: TermNotice): void {
    this.termQueue = this.termQueue
      .then(() => this.db.notify(TERM, JSON.stringify(notice)))
      .catch((err) => this.log.warn('terminal relay: a frame could not be passed to the other server processes', { channel: notice.c, error: err instanceof Error ? err.message : String(err) }));
  }

  /** Every process hears every terminal notice; the one holding the browser (o, x) or the runner (i, z, q) acts on it. */
  private onTermNotice(payload: string): void {
    let n: TermNotice;
    try {
      n = JSON.parse(payload) as TermNotice;
    } catch {
      return;
    }
    if (n.d === 'o' || n.d === 'x') {
      const sink = this.terminals.get(n.c);
      if (!sink || sink.runnerId !== n.r) return;
      sink.onFrame(n.d === 'o' ? { type: 'term.output', channel: n.c, data: n.data } : { type: 'term.exit', channel: n.c, reason: n.reason });
      return;
    }
    if (!this.conns.has(n.r)) return;
    if (n.d === 'i') this.sendToRunner(n.r, { type: 'term.input', channel: n.c, data: n.data });
    else if (n.d === 'z') this.sendToRunner(n.r, { type: 'term.resize', channel: n.c, cols: n.cols, rows: n.rows });
    else {
      this.remoteTerms.delete(n.c);
      this.sendToRunner(n.r, { type: 'term.close', channel: n.c });
    }
  }

  /** Whether the runner is connected to some server process (and was seen within a minute). */
  async isOnline(runnerId: string): Promise<boolean> {
    if (this.conns.has(runnerId)) return true;
    const [r] = await this.db.query<{ online: boolean }>(sql`
      select connected_instance is not null and last_seen_at > now() - interval '60 seconds' as online
        from runners where id = ${runnerId} and revoked_at is null`);
    return r?.online === true;
  }

  /** Send a frame to a runner whose socket this process holds; false when it does not. */
  sendToRunner(runnerId: string, frame: ServerFrame): boolean {
    const conn = this.conns.get(runnerId);
    if (!conn) return false;
    this.send(conn, frame);
    return true;
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
    const [recorded] = await this.db.query<{ since: string }>(sql`
      update runners set connected_instance = ${this.instance}, last_seen_at = now(), version = ${version}
       where id = ${runner.id}
      returning (extract(epoch from clock_timestamp()) * 1000000)::bigint::text as since`);
    conn.since = BigInt(recorded?.since ?? 0);
    await this.db.notify(CTL, JSON.stringify({ action: 'close', runnerId: runner.id, except: conn.id, since: String(conn.since), code: CLOSE.replaced }));
    await publish(this.db, { type: 'runner', id: runner.id, online: true }, { runnerId: runner.id });
    this.log.info('runner connected', { runnerId: runner.id, version });

    ws.on('pong', () => (conn.alive = true));
    // No failure while handling one socket may take the process down: every handler catches.
    ws.on('message', (data, isBinary) =>
      this.onFrame(conn, data.toString(), isBinary).catch((err) => this.log.error('runner frame crashed', { runnerId: runner.id, error: err instanceof Error ? err.stack : String(err) })),
    );
    ws.on('close', (code) => void this.onClose(conn, code).catch(() => {}));
    ws.on('error', (err) => this.log.warn('runner socket error', { runnerId: runner.id, error: err.message }));
    this.send(conn, { type: 'welcome', runnerId: runner.id, serverTime: new Date().toISOString(), projects: await this.projectsOf(runner.id) });
  }

  /**
   * Commands still waiting for an answer when the runner (re)connects, sent now while their requester
   * still waits: `pending` ones were asked for while it had no socket anywhere (it was reconnecting: its
   * server process was restarted); `sent` ones may have been lost with the old socket, command or answer.
   * A `sent` one goes again only when that cannot make it run twice: a read-only command, or a runner that
   * answers a repeated requestId with its first answer (REPLAY_CAPABILITY). Called on hello, which carries
   * the runner's capabilities.
   */
  private async sendUnanswered(conn: Conn, replay: boolean): Promise<void> {
    const rows = await this.db.query<{ request_id: string; name: CommandName; args: unknown; status: string; created_at: Date }>(sql`
      select request_id, name, args, status, created_at from runner_commands
       where runner_id = ${conn.runnerId} and status in ('pending', 'sent') and created_at > now() - interval '10 minutes'
       order by created_at`);
    for (const c of rows) {
      if (!COMMANDS[c.name] || Date.now() - +new Date(c.created_at) > COMMANDS[c.name].timeoutMs) continue;
      if (c.status === 'sent' && !replay && !READ_ONLY_COMMANDS.has(c.name)) continue;
      if (c.status === 'pending') {
        const [claimed] = await this.db.query(sql`update runner_commands set status = 'sent' where request_id = ${c.request_id} and status = 'pending' returning 1`);
        if (!claimed) continue;
      }
      this.send(conn, { type: 'command', requestId: c.request_id, name: c.name, args: c.args, timeoutMs: COMMANDS[c.name].timeoutMs });
    }
  }

  private send(conn: Conn, frame: ServerFrame): void {
    if (conn.ws.readyState === conn.ws.OPEN) conn.ws.send(JSON.stringify(frame));
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
    if (frame.type === 'term.output' || frame.type === 'term.exit') {
      const sink = this.terminals.get(frame.channel);
      if (sink) {
        if (sink.runnerId === conn.runnerId) sink.onFrame(frame);
      } else if (!this.endedHere.has(frame.channel)) this.relayTerm(conn.runnerId, frame);
      return;
    }
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
          // The welcome went out before hello; a runner that reads repos gets its list again with them.
          if (!conn.codehost && frame.capabilities.includes(CODEHOST_CAPABILITY)) {
            conn.codehost = true;
            this.send(conn, { type: 'projects', projects: await this.projectsOf(conn.runnerId, true) });
          }
          await this.sendUnanswered(conn, frame.capabilities.includes(REPLAY_CAPABILITY));
          // Not awaited: it may send commands, whose answers come as frames on this very socket.
          if (this.onHello) void this.onHello(conn.runnerId).catch((err) => this.log.error('hello follow-up failed', { runnerId: conn.runnerId, error: err instanceof Error ? err.message : String(err) }));
          return;
        case 'events':
          await this.ingest(conn.runnerId, frame.events, data);
          return this.send(conn, { type: 'ack', ids: frame.events.map((e) => e.id) });
        case 'result':
          return await whenReachable(() => this.onResult(conn.runnerId, frame), Date.now() + RESULT_KEEP_MS);
        case 'profiles':
          return await recordProfiles(this.db, conn.runnerId, frame.profiles);
        case 'ping':
          return this.send(conn, { type: 'pong' });
      }
    } catch (err) {
      this.log.error('runner frame failed', { runnerId: conn.runnerId, type: frame.type, error: err instanceof Error ? err.message : String(err) });
      this.send(conn, { type: 'error', code: 'server_error', message: 'the frame could not be processed; it was not acknowledged' });
    }
  }

  /**
   * Sees each batch before it is stored (the webhooks area captures catalogue events here). It must be
   * idempotent: a batch stored but not acked is sent again, so a crash in between loses nothing.
   */
  beforeStore?: (runnerId: string, events: RunnerEvent[]) => Promise<unknown>;

  /** Called once a runner's hello is stored (its capabilities known): work that needs the runner online. */
  onHello?: (runnerId: string) => Promise<unknown>;

  /**
   * Store a batch idempotently: a re-sent event (no ack seen) is stored once. Ack only after commit.
   * `frameText`, the `events` frame as received (already validated into `events`), goes to the database
   * as it is, which takes the events out of it: this process does not serialise its parsed copy again.
   */
  async ingest(runnerId: string, events: RunnerEvent[], frameText?: string): Promise<void> {
    await this.beforeStore?.(runnerId, events);
    const insert = (batch: Sql) =>
      this.db.query(sql`
        insert into runner_events (runner_id, event_id, source, kind, ts, payload)
        select ${runnerId}, x.id, x.source, x.kind, x.ts, x.payload
          from jsonb_to_recordset(${batch}) as x(id text, source text, kind text, ts timestamptz, payload jsonb)
        on conflict (runner_id, event_id) do nothing`);
    // Numbers are where the database and JSON.parse read the same text differently: 1e400 is Infinity
    // here (stored as null, as JSON.stringify writes it) but 400 digits there, and numeric refuses what
    // is beyond its range. So a frame with a three-digit exponent anywhere (or an "e123" inside a
    // string: rare, and then merely slower) goes through the parsed copy, and so does a frame the
    // database refuses as out of range (22003: a literal of more digits than numeric holds).
    if (frameText === undefined || BIG_EXPONENT.test(frameText)) {
      await insert(sql.json(events));
    } else {
      await insert(sql`(${sql.jsonText(frameText)} -> 'events')`).catch((err: unknown) => {
        if ((err as { code?: unknown }).code !== '22003') throw err;
        return insert(sql.json(events));
      });
    }
    // Skill run records (docs/skill-runs.md): idempotent too, so a re-sent batch changes nothing.
    await recordSkillRuns(this.db, runnerId, events);
    // Sessions and LLM requests (docs/cost.md, "Server"): idempotent as well.
    await recordUsage(this.db, runnerId, events);
    await this.fleetNotices(runnerId, events);
  }

  /** Orchestrator and slot events change a project's fleet state: one live notice per project and kind. */
  private async fleetNotices(runnerId: string, events: RunnerEvent[]): Promise<void> {
    const named = new Set<string>();
    for (const e of events) {
      const project = e.payload.project;
      if (FLEET_KINDS.test(e.kind) && typeof project === 'string') named.add(`${project}\n${e.kind}`);
    }
    if (named.size === 0) return;
    const mine = new Set((await this.projectsOf(runnerId)).map((p) => p.id));
    for (const key of named) {
      const [projectId, kind] = key.split('\n');
      if (mine.has(projectId)) await publish(this.db, { type: 'fleet', projectId, kind }, { projectId });
    }
  }

  private lastTouch = new Map<string, number>();
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
    // Its terminals cannot go on: tell each browser relaying one (terminal.attach).
    for (const [channel, sink] of [...this.terminals]) {
      if (sink.runnerId !== conn.runnerId) continue;
      this.terminals.delete(channel);
      sink.onFrame({ type: 'term.exit', channel, reason: 'the runner disconnected' });
    }
    for (const [channel, runnerId] of [...this.remoteTerms]) {
      if (runnerId !== conn.runnerId) continue;
      this.remoteTerms.delete(channel);
      this.publishTerm({ d: 'x', c: channel, r: runnerId, reason: 'the runner disconnected' });
    }
    const gone = await this.db
      .query(sql`update runners set connected_instance = null, last_seen_at = now() where id = ${conn.runnerId} and connected_instance = ${this.instance} returning 1`)
      .catch(() => []);
    // Offline only when no newer socket (here or on another replica) took it over meanwhile.
    if (gone.length) await publish(this.db, { type: 'runner', id: conn.runnerId, online: false }, { runnerId: conn.runnerId }).catch(() => {});
    this.log.info('runner disconnected', { runnerId: conn.runnerId, code });
  }

  private async onControl(payload: string): Promise<void> {
    const msg = JSON.parse(payload) as { action: 'close' | 'projects'; runnerId: string; except?: string; since?: string; code?: number };
    const conn = this.conns.get(msg.runnerId);
    if (!conn || conn.id === msg.except) return;
    // "Replaced" closes only a socket older than the one that announced itself: the notice of an older
    // connection can arrive after a newer one was accepted here (a loaded listener), and must not close it.
    if (msg.action === 'close' && msg.since !== undefined && (conn.since === undefined || conn.since >= BigInt(msg.since))) return;
    if (msg.action === 'close') conn.ws.close(msg.code ?? CLOSE.unauthorized, msg.code === CLOSE.replaced ? 'replaced by a newer pairing' : 'token revoked');
    if (msg.action === 'projects') this.send(conn, { type: 'projects', projects: await this.projectsOf(msg.runnerId, conn.codehost) });
  }

  /** Close a runner's socket wherever it is held: 4401 when revoked, 4409 when re-paired. */
  async disconnect(runnerId: string, code: number): Promise<void> {
    await this.db.notify(CTL, JSON.stringify({ action: 'close', runnerId, code }));
  }

  /** Tell a runner its watch list changed (project created, moved or deleted). */
  async projectsChanged(runnerId: string | null): Promise<void> {
    if (runnerId) await this.db.notify(CTL, JSON.stringify({ action: 'projects', runnerId }));
  }

  private async projectsOf(runnerId: string, withRepo = false) {
    const rows = await this.db.query<{ id: string; root: string; repo: string }>(sql`
      select id, root_path as root, repo from projects where runner_id = ${runnerId} and root_path is not null order by id`);
    return rows.map((r) => (withRepo && REPO.test(r.repo) ? { id: r.id, root: r.root, repo: r.repo } : { id: r.id, root: r.root }));
  }

  // ---- commands ----

  /** Send a command and wait up to its timeout for the answer, from any API process. */
  /**
   * Whether the runner is online to take a command. A runner that was connected moments ago (seen within
   * RECONNECT_GRACE_MS) is most likely reconnecting — its server process was restarted or replaced in a
   * rolling upgrade, and runners come back within their first backoff step (1 s, jittered) — so the command
   * waits up to that long for it rather than failing runner_offline at once.
   */
  private async awaitOnline(runnerId: string): Promise<boolean> {
    const end = Date.now() + RECONNECT_GRACE_MS;
    for (;;) {
      if (this.conns.has(runnerId)) return true;
      const [r] = await this.db.query<{ online: boolean; recent: boolean }>(sql`
        select connected_instance is not null and last_seen_at > now() - interval '60 seconds' as online,
               last_seen_at > now() - interval '15 seconds' as recent
          from runners where id = ${runnerId} and revoked_at is null`);
      if (!r) return false;
      if (r.online) return true;
      if (!r.recent || Date.now() >= end) return false;
      await new Promise((res) => setTimeout(res, 200));
    }
  }

  async command(runnerId: string, name: CommandName, args: unknown, userId: string | null): Promise<CommandOutcome> {
    if (!(await this.awaitOnline(runnerId))) return { status: 'offline' };
    const requestId = randomUUID();
    // Held here: send at once. Held elsewhere: the row plus a NOTIFY lets that replica send it.
    const local = this.conns.get(runnerId);
    await this.db.query(sql`
      insert into runner_commands (request_id, runner_id, name, args, requested_by, status)
      values (${requestId}, ${runnerId}, ${name}, ${sql.json(args)}, ${userId}, ${local ? 'sent' : 'pending'})`);
    let isAnswered = false;
    const answered = new Promise<void>((resolve) => this.waiters.set(requestId, () => ((isAnswered = true), resolve())));
    let timer: NodeJS.Timeout | undefined;
    let nudge = () => {};
    this.nudges.set(requestId, () => nudge());
    try {
      // The process holding the runner's socket, read BEFORE the command goes out: redeliver re-sends it
      // when the holder changed since. Read while it went out, it could already name the process the runner
      // had moved to while the old holder was still taking the command (a replica stopping in a rolling
      // restart): the command was lost with the old socket and never sent again (command_timeout).
      const holder = { instance: local ? this.instance : await this.holderOf(runnerId) };
      if (local) this.send(local, { type: 'command', requestId, name, args, timeoutMs: COMMANDS[name].timeoutMs });
      else await this.db.notify(CMD, requestId);
      const deadline = Date.now() + COMMANDS[name].timeoutMs;
      while (!isAnswered && Date.now() < deadline) {
        await Promise.race([answered, new Promise((r) => ((nudge = () => r(undefined)), (timer = setTimeout(r, Math.min(REDELIVER_CHECK_MS, deadline - Date.now())))))]);
        clearTimeout(timer);
        // The answer is read from the row too: its NOTIFY may have been lost (the LISTEN connection was
        // reconnecting), and waiting for it would hold the requester, and a trigger delivery, to the timeout.
        if (!isAnswered && Date.now() < deadline) {
          isAnswered = await this.redeliver(requestId, name, holder).catch((err) => (this.log.warn('command redelivery check failed', { requestId, error: err instanceof Error ? err.message : String(err) }), false));
        }
      }
    } finally {
      clearTimeout(timer);
      this.waiters.delete(requestId);
      this.nudges.delete(requestId);
    }
    const [row] = await this.db.query<{ status: string; result: unknown; error: { code: string; message: string } | null }>(sql`
      update runner_commands set status = case when status in ('pending', 'sent') then 'timeout' else status end,
             finished_at = coalesce(finished_at, now())
       where request_id = ${requestId} returning status, result, error`);
    if (row.status === 'done') return { status: 'done', data: row.result };
    if (row.status === 'failed') return { status: 'failed', error: row.error! };
    return { status: 'timeout' };
  }

  private holderOf(runnerId: string): Promise<string | null> {
    return this.db.query<{ connected_instance: string | null }>(sql`select connected_instance from runners where id = ${runnerId}`).then(
      ([r]) => r?.connected_instance ?? null,
      () => null,
    );
  }

  /**
   * While its requester waits, a command is not left behind by a socket that went away. Whichever process
   * sent it (or would have), and whichever build that process runs (a rolling upgrade mixes them):
   * still `pending` while the runner is connected somewhere → announced again, so its holder sends it;
   * `sent`, but the runner has since connected to another process (the socket that carried the command,
   * or would carry its answer, is gone) → put back to `pending` and announced, when sending it again
   * cannot make it run twice (read-only, or a runner with REPLAY_CAPABILITY).
   */
  private async redeliver(requestId: string, name: CommandName, holder: { instance: string | null }): Promise<boolean> {
    const before = holder.instance;
    const [row] = await this.db.query<{ status: string; instance: string | null; capabilities: string[] }>(sql`
      select c.status, r.connected_instance as instance, r.capabilities from runner_commands c join runners r on r.id = c.runner_id where c.request_id = ${requestId}`);
    if (!row) return false;
    if (row.status !== 'pending' && row.status !== 'sent') return true; // answered
    holder.instance = row.instance;
    if (!row.instance) return false; // nobody holds the runner: its hello (sendUnanswered) or a later check sends it
    if (row.status === 'pending') {
      await this.db.notify(CMD, requestId);
      return false;
    }
    if (row.instance === before) return false;
    if (!READ_ONLY_COMMANDS.has(name) && !(Array.isArray(row.capabilities) && row.capabilities.includes(REPLAY_CAPABILITY))) return false;
    const [back] = await this.db.query(sql`update runner_commands set status = 'pending' where request_id = ${requestId} and status = 'sent' returning 1`);
    if (back) await this.db.notify(CMD, requestId);
    return false;
  }

  /** A channel was subscribed again: re-read what its missed notices would have said (logged, never thrown). */
  private resubscribed(channel: string, recheck: () => Promise<void>): void {
    this.log.info('listening again after the database connection came back; re-reading missed notices', { channel });
    void recheck().catch((err) => this.log.warn('re-reading missed notices failed', { channel, error: err instanceof Error ? err.message : String(err) }));
  }

  /** Missed `svc_runner_cmd`: commands still pending for runners held here are sent now. */
  private async sendPendingHeld(): Promise<void> {
    const held = [...this.conns.keys()];
    if (!held.length) return;
    const rows = await this.db.query<{ request_id: string }>(sql`
      select request_id from runner_commands where runner_id = any(${held}) and status = 'pending' and created_at > now() - interval '10 minutes' order by created_at`);
    for (const r of rows) await this.onCommand(r.request_id);
  }

  /**
   * Missed `svc_runner_ctl`: a runner held here that was revoked, or that connected to another process
   * since (its row names that one: updates of the row are serialised, and ours had returned), is closed
   * as the notice would have; the others get their watch list again.
   */
  private async recheckHeld(): Promise<void> {
    const held = [...this.conns.keys()];
    if (!held.length) return;
    const rows = await this.db.query<{ id: string; revoked: boolean; instance: string | null }>(sql`
      select id, revoked_at is not null as revoked, connected_instance as instance from runners where id = any(${held})`);
    for (const r of rows) {
      const conn = this.conns.get(r.id);
      if (!conn || conn.since === undefined) continue; // still being recorded: its own update is newer than what was read
      if (r.revoked) conn.ws.close(CLOSE.unauthorized, 'token revoked');
      else if (r.instance && r.instance !== this.instance) conn.ws.close(CLOSE.replaced, 'replaced by a newer pairing');
      else this.send(conn, { type: 'projects', projects: await this.projectsOf(r.id, conn.codehost) });
    }
  }

  /** Every process hears every command; only the one holding the runner's socket sends it. */
  private async onCommand(requestId: string): Promise<void> {
    const [cmd] = await this.db.query<{ runner_id: string; name: CommandName; args: unknown }>(sql`
      select runner_id, name, args from runner_commands where request_id = ${requestId} and status = 'pending'`);
    const conn = cmd && this.conns.get(cmd.runner_id);
    if (!conn) return;
    const [claimed] = await this.db.query(sql`update runner_commands set status = 'sent' where request_id = ${requestId} and status = 'pending' returning 1`);
    if (!claimed) return;
    this.send(conn, { type: 'command', requestId, name: cmd.name, args: cmd.args, timeoutMs: COMMANDS[cmd.name].timeoutMs });
  }

  private async onResult(runnerId: string, frame: { requestId: string; ok: boolean; data?: unknown; error?: { code: string; message: string } }): Promise<void> {
    const [row] = await this.db.query(sql`
      update runner_commands set status = ${frame.ok ? 'done' : 'failed'}, result = ${sql.json(frame.ok ? (frame.data ?? null) : null)},
             error = ${sql.json(frame.ok ? null : frame.error)}, finished_at = now()
       where request_id = ${frame.requestId} and runner_id = ${runnerId} and status = 'sent' returning 1`);
    if (!row) return; // unknown, or answered after its timeout
    const waiter = this.waiters.get(frame.requestId);
    if (waiter) waiter();
    else await this.db.notify(DONE, frame.requestId);
  }
}
