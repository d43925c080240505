// The control channel between server processes (`svc_runner_ctl`; DESIGN §3): whichever process holds a
// runner's socket acts on it.
//   close      a revoked runner (4401) or a re-paired one (4409) is closed wherever it is held; a new
//              socket closes the older one of the same runner (only an older one: `since`)
//   projects   the runner's watch list changed (project created, moved or deleted): it is sent again
// A notice missed while the LISTEN connection was re-made (PostgreSQL restarted) is made up for by
// re-reading the rows of every runner held here (recheckHeld).
import { CLOSE } from '../../protocol/frames.ts';
import type { ServerFrame } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { resubscribed } from './socket.ts';
import type { Conn, RunnerSockets } from './socket.ts';
import { watchList } from './watch-list.ts';

const CTL = 'svc_runner_ctl';

type ControlNotice = { action: 'close' | 'projects'; runnerId: string; except?: string; since?: string; code?: number };

export class RunnerControl {
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly sockets: RunnerSockets,
    /** The `projects` frame of a runner (watch-list.ts; with its App tokens when it takes them). */
    private readonly projectsFrame: (runnerId: string, withRepo: boolean) => Promise<ServerFrame> = async (runnerId, withRepo) => ({ type: 'projects', projects: await watchList(db, runnerId, withRepo) }),
  ) {}

  listen(): Promise<() => Promise<void>> {
    return this.db.listen(
      CTL,
      (p) => void this.onControl(p).catch((err) => this.log.error('runner control failed', { error: err })),
      () => resubscribed(this.log, 'control', () => this.recheckHeld()),
    );
  }

  /** A socket was just recorded as the runner's: any older one, on any process, closes (4409). */
  async announce(conn: Conn): Promise<void> {
    await this.db.notify(CTL, JSON.stringify({ action: 'close', runnerId: conn.runnerId, except: conn.id, since: String(conn.since), code: CLOSE.replaced }));
  }

  /** Close a runner's socket wherever it is held: 4401 when revoked, 4409 when re-paired. */
  async disconnect(runnerId: string, code: number): Promise<void> {
    await this.db.notify(CTL, JSON.stringify({ action: 'close', runnerId, code }));
  }

  /** Tell a runner its watch list changed (project created, moved or deleted). */
  async projectsChanged(runnerId: string | null): Promise<void> {
    if (runnerId) await this.db.notify(CTL, JSON.stringify({ action: 'projects', runnerId }));
  }

  private async onControl(payload: string): Promise<void> {
    const msg = JSON.parse(payload) as ControlNotice;
    const conn = this.sockets.get(msg.runnerId);
    if (!conn || conn.id === msg.except) return;
    // "Replaced" closes only a socket older than the one that announced itself: the notice of an older
    // connection can arrive after a newer one was accepted here (a loaded listener), and must not close it.
    if (msg.action === 'close' && msg.since !== undefined && (conn.since === undefined || conn.since >= BigInt(msg.since))) return;
    if (msg.action === 'close') conn.ws.close(msg.code ?? CLOSE.unauthorized, msg.code === CLOSE.replaced ? 'replaced by a newer pairing' : 'token revoked');
    if (msg.action === 'projects') this.sockets.send(conn, await this.projectsFrame(msg.runnerId, conn.codehost));
  }

  /**
   * Missed `svc_runner_ctl`: a runner held here that was revoked, or that connected to another process
   * since (its row names that one: updates of the row are serialised, and ours had returned), is closed
   * as the notice would have; the others get their watch list again.
   */
  private async recheckHeld(): Promise<void> {
    const held = this.sockets.heldIds();
    if (!held.length) return;
    const rows = await this.db.query<{ id: string; revoked: boolean; instance: string | null }>(sql`
      select id, revoked_at is not null as revoked, connected_instance as instance from runners where id = any(${held})`);
    for (const r of rows) {
      const conn = this.sockets.get(r.id);
      if (!conn || conn.since === undefined) continue; // still being recorded: its own update is newer than what was read
      if (r.revoked) conn.ws.close(CLOSE.unauthorized, 'token revoked');
      else if (r.instance && r.instance !== this.sockets.instance) conn.ws.close(CLOSE.replaced, 'replaced by a newer pairing');
      else this.sockets.send(conn, await this.projectsFrame(r.id, conn.codehost));
    }
  }
}
