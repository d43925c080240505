// Live updates: the WebSocket `GET /api/live` (docs/operations.md, "Live updates"; protocol/live.ts).
//
// Writers call publish() (publish.ts) with a small notice and its audience, inside their own transaction where they
// have one: it is a `pg_notify` on the channel `svc_live`, so it is sent only when the change commits,
// and every API process hears it (PostgreSQL LISTEN/NOTIFY, like the runner hub; PGlite delivers it in
// process). Each process then sends the notice to those of ITS sockets whose user may read it:
//   admins         instance admins only (audit verification, webhook delivery state)
//   project P, R   instance admins and users with at least role R on P
//   runner X, R    instance admins and users with at least role R (default viewer) on a project served by X
//   user U         that user only (their notification read state; a project they were removed from)
// Project roles come from a per-process cache that any membership/project change clears (a trigger
// sends {access}; sql/0016_live_access.sql), and that expires after ROLE_TTL_MS in any case. Each
// connection is re-checked at every heartbeat (session or token still valid, user still active,
// instance-admin flag), and at once when a sign-out, deactivation or token revocation says so (a
// trigger sends {revalidate}): an ended session's socket closes with 4401.
// Each socket's send buffer is bounded: a client that reads too slowly is closed with 4408 rather than
// buffered without end; it reconnects and re-fetches.
// A user holds at most LIVE_MAX_SOCKETS_PER_USER sockets on this process: one more is closed with 4429
// at once (a leaking tab or script cannot pile up sockets). Counted per process, not across replicas:
// a cap in the database would need socket rows kept alive and cleaned up after a crash, and the per-process
// bound already limits what one process holds.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { LIVE_CLOSE } from '../../protocol/live.ts';
import { roleRank } from '../auth/auth.ts';
import { upgradeCaller, upgradeThen } from '../auth/upgrade.ts';
import type { AppContext, Principal, Role } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import { LIVE_CHANNEL } from './publish.ts';
import type { Audience, Envelope } from './publish.ts';

/** Ping interval; a socket that did not answer the previous ping is dropped. */
export const LIVE_HEARTBEAT_MS = 25_000;
/** Bytes a socket may have queued and unsent before it is closed as too slow. */
export const LIVE_MAX_BUFFER_BYTES = 256 * 1024;
const ROLE_TTL_MS = 30_000;

interface Conn {
  id: string;
  ws: WebSocket;
  principal: Principal;
  alive: boolean;
}

/** Does the socket's user hold at least rank `min` in `roles` (a project's members)? */
const holds = (roles: Map<string, Role>, c: Conn, min: number) => {
  const role = roles.get(c.principal.user.id);
  return role !== undefined && roleRank(role) >= min;
};

export class LiveHub {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  private readonly conns = new Set<Conn>();
  private unlisten?: () => Promise<void>;
  private heartbeat?: NodeJS.Timeout;
  /** project → user → role, and runner → its projects; cleared on access changes and after ROLE_TTL_MS. */
  private roles = new Map<string, Map<string, Role>>();
  private runnerProjects = new Map<string, string[]>();
  private cachedAt = 0;
  /** Notices are handled one after another, so a socket sees them in the order they were committed. */
  private queue: Promise<void> = Promise.resolve();
  /** Counters for the benchmark and logs. */
  readonly stats = { received: 0, sent: 0, droppedSlow: 0 };

  constructor(
    private readonly ctx: AppContext,
    private readonly opts: { heartbeatMs?: number; maxBufferBytes?: number } = {},
  ) {}

  get connections(): number {
    return this.conns.size;
  }

  async start(): Promise<void> {
    this.unlisten = await this.ctx.db.listen(LIVE_CHANNEL, (payload) => {
      this.queue = this.queue.then(() => this.onEnvelope(payload)).catch((err) => this.ctx.log.error('live notice failed', { error: err instanceof Error ? err.message : String(err) }));
    });
    this.heartbeat = setInterval(() => void this.beat(), this.opts.heartbeatMs ?? LIVE_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    for (const c of this.conns) c.ws.close(1001, 'server shutting down');
    await this.unlisten?.().catch(() => {});
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    upgradeThen(this.ctx, this.wss, 'live connection', req, socket, head, (ws, r) => this.accept(ws, r));
  }

  private async accept(ws: WebSocket, req: IncomingMessage): Promise<void> {
    ws.on('error', () => {}); // a reset socket is just gone; 'close' follows
    const { principal } = await upgradeCaller(this.ctx, req, 'live connection');
    if (ws.readyState !== ws.OPEN) return;
    // Counted and added with no await in between: two sockets opening together cannot both take the last place.
    const cap = this.ctx.config.LIVE_MAX_SOCKETS_PER_USER;
    let held = 0;
    for (const c of this.conns) if (c.principal.user.id === principal.user.id) held++;
    if (held >= cap) {
      this.ctx.log.warn('live socket refused: too many of this user', { userId: principal.user.id, held });
      ws.send(JSON.stringify({ type: 'error', code: 'too_many_sockets', message: `this user already has ${held} live connections open (at most ${cap}): close one` }));
      ws.close(LIVE_CLOSE.tooMany, 'too many live connections');
      return;
    }
    const conn: Conn = { id: randomUUID(), ws, principal, alive: true };
    this.conns.add(conn);
    ws.on('pong', () => (conn.alive = true));
    ws.on('close', () => this.conns.delete(conn));
    // Nothing is read from the client; a message is ignored (the pings are the protocol's own).
    this.deliver(conn, Buffer.from(JSON.stringify({ type: 'ready', userId: principal.user.id })));
  }

  /** Send one notice (encoded once for all sockets: `data`) unless the socket's buffer is full. */
  private deliver(conn: Conn, data: Buffer): void {
    const { ws } = conn;
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount + data.length > (this.opts.maxBufferBytes ?? LIVE_MAX_BUFFER_BYTES)) {
      this.stats.droppedSlow++;
      this.conns.delete(conn);
      this.ctx.log.warn('live socket too slow: closed', { userId: conn.principal.user.id, buffered: ws.bufferedAmount });
      ws.close(LIVE_CLOSE.tooSlow, 'too slow: reconnect and re-fetch');
      // The close frame waits behind the full buffer: do not wait for it for long.
      setTimeout(() => ws.terminate(), 5000).unref();
      return;
    }
    this.stats.sent++;
    ws.send(data, { binary: false });
  }

  private async onEnvelope(payload: string): Promise<void> {
    const e = JSON.parse(payload) as Envelope;
    if ('access' in e) {
      this.roles.clear();
      this.runnerProjects.clear();
      return;
    }
    if ('revalidate' in e) {
      const w = e.revalidate;
      const hit = [...this.conns].filter(
        (c) => (w.userId && c.principal.user.id === w.userId) || (w.sessionId && c.principal.sessionId === w.sessionId) || (w.tokenId && c.principal.tokenId === w.tokenId),
      );
      await Promise.all(hit.map((c) => this.check(c)));
      return;
    }
    this.stats.received++;
    if (this.conns.size === 0) return;
    if (Date.now() - this.cachedAt > ROLE_TTL_MS) {
      this.roles.clear();
      this.runnerProjects.clear();
      this.cachedAt = Date.now();
    }
    const may = await this.audience(e.to);
    const data = Buffer.from(JSON.stringify(e.n));
    for (const c of this.conns) if (may(c)) this.deliver(c, data);
  }

  /** Who of this process's sockets may read a notice for `to`. */
  private async audience(to: Audience): Promise<(c: Conn) => boolean> {
    if ('admins' in to) return (c) => c.principal.user.instanceAdmin;
    if ('userId' in to) return (c) => c.principal.user.id === to.userId;
    if ('projectId' in to) {
      const roles = await this.rolesOf(to.projectId);
      const min = roleRank(to.minRole ?? 'viewer');
      return (c) => c.principal.user.instanceAdmin || holds(roles, c, min);
    }
    let projects = this.runnerProjects.get(to.runnerId);
    if (!projects) {
      const rows = await this.ctx.db.query<{ id: string }>(sql`select id from projects where runner_id = ${to.runnerId}`);
      projects = rows.map((r) => r.id);
      this.runnerProjects.set(to.runnerId, projects);
    }
    const members = await Promise.all(projects.map((p) => this.rolesOf(p)));
    const min = roleRank(to.minRole ?? 'viewer');
    return (c) => c.principal.user.instanceAdmin || members.some((m) => holds(m, c, min));
  }

  private async rolesOf(projectId: string): Promise<Map<string, Role>> {
    let roles = this.roles.get(projectId);
    if (!roles) {
      const rows = await this.ctx.db.query<{ user_id: string; role: Role }>(sql`select user_id, role from project_members where project_id = ${projectId}`);
      roles = new Map(rows.map((r) => [r.user_id, r.role]));
      this.roles.set(projectId, roles);
    }
    return roles;
  }

  /** Is the socket's session or token still good and its user active? Refreshes the admin flag; else closes 4401. */
  private async check(c: Conn): Promise<void> {
    const p = c.principal;
    const [row] = p.via === 'session'
      ? await this.ctx.db.query<{ instance_admin: boolean }>(sql`
          select u.instance_admin from sessions s join users u on u.id = s.user_id
           where s.id = ${p.sessionId ?? ''} and s.revoked_at is null and s.expires_at > now() and u.active`)
      : await this.ctx.db.query<{ instance_admin: boolean }>(sql`
          select u.instance_admin from api_tokens t join users u on u.id = t.user_id
           where t.id = ${p.tokenId ?? ''} and t.revoked_at is null and (t.expires_at is null or t.expires_at > now()) and u.active`);
    if (!row) {
      this.conns.delete(c);
      if (c.ws.readyState === c.ws.OPEN) {
        c.ws.send(JSON.stringify({ type: 'error', code: 'unauthorized', message: 'the session ended: sign in again' }));
        c.ws.close(LIVE_CLOSE.unauthorized, 'session ended');
      }
      return;
    }
    p.user = { ...p.user, instanceAdmin: row.instance_admin };
  }

  private async beat(): Promise<void> {
    for (const c of [...this.conns]) {
      if (!c.alive) {
        this.conns.delete(c);
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      c.ws.ping();
      await this.check(c).catch((err) => this.ctx.log.warn('live socket check failed', { error: err instanceof Error ? err.message : String(err) }));
    }
  }
}
