// Runner sockets kept spread over the replicas (docs/operations.md "Runner sockets spread"). A runner
// reconnects through the balancer to a replica that is up, so after kills and restarts the sockets piled
// onto the replicas that stayed up (17 of 20 on one), and one more kill dropped almost all runners.
// Each server process, in this order:
//   1. announces itself on `svc_replicas` when it starts, every ANNOUNCE_MS, and when it stops; a process
//      that goes silent (killed) stops being counted after PEER_TTL_MS;
//   2. on hearing a process it did not know (one joined), waits SETTLE_MS, jittered (the balancer must
//      see the newcomer up), then runs rounds ROUND_MS apart, jittered;
//   3. each round reads from the database how many runners are live and how many it holds
//      (runners.connected_instance), and asks runnersToMove how many exceed its share;
//   4. closes at most BATCH of those sockets with 1012 (service restart), each after a random delay: the
//      runner reconnects after about 1 s and the balancer (leastconn) gives it to the least-loaded replica;
//   5. stops when nothing exceeds its share, when a round moved nothing away (a balancer that pins a
//      runner to a replica sends it straight back), or after EPISODE_MS.
// Nothing is lost by a move: a runner keeps its events spooled until acked, and a command waits for a
// runner connected moments ago and is sent again when it reconnects (commands.ts awaitOnline, sendUnanswered).
import type { Db } from '../lib/db/index.ts';
import { sql } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { ONLINE_WITHIN_SECONDS } from './presence.ts';
import { parseNotice } from '../lib/notice.ts';

const CHANNEL = 'svc_replicas';
const ANNOUNCE_MS = 5_000;
const PEER_TTL_MS = 12_000;
const SETTLE_MS = 3_000;
const ROUND_MS = 3_000;
/** Sockets one process closes per round: a few, so that reconnects do not arrive all at once. */
const BATCH = 4;
const EPISODE_MS = 60_000;
/** A process this many runners above its share is left alone: a move may land back, and costs a reconnect. */
const TOLERANCE = 1;

/**
 * How many of the `held` runner sockets a process should ask to reconnect elsewhere, when `live` runners
 * are spread over `replicas` processes: those above its share (live / replicas, rounded up), once it
 * holds more than TOLERANCE above that share.
 */
export function runnersToMove(held: number, live: number, replicas: number): number {
  if (replicas < 2) return 0;
  const share = Math.ceil(live / replicas);
  return held > share + TOLERANCE ? held - share : 0;
}

/** What the rebalancer needs of the hub: the runners it holds (`busy`: relaying a terminal), and a way to move one. */
export interface SocketHolder {
  heldRunners(): { id: string; busy: boolean }[];
  release(runnerId: string): void;
}

type Notice = { i: string; e: 'join' | 'here' | 'leave' };

export class Rebalancer {
  private readonly peers = new Map<string, number>(); // other processes → when last heard (ms)
  private announcer?: NodeJS.Timeout;
  private round?: NodeJS.Timeout;
  private episodeEnd = 0;
  private lastHeld = Number.POSITIVE_INFINITY;
  private unlisten?: () => Promise<void>;

  constructor(
    private readonly opts: { db: Db; log: Logger; instance: string; holder: SocketHolder; random?: () => number; now?: () => number },
  ) {}

  private get now(): number {
    return (this.opts.now ?? Date.now)();
  }
  private jitter(ms: number): number {
    return ms + Math.floor((this.opts.random ?? Math.random)() * ms * 0.6);
  }

  async start(): Promise<void> {
    this.unlisten = await this.opts.db.listen(CHANNEL, (p) => this.onNotice(p));
    await this.announce('join');
    this.announcer = setInterval(() => void this.announce('here'), ANNOUNCE_MS);
    this.announcer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.announcer);
    clearTimeout(this.round);
    this.episodeEnd = 0;
    await this.announce('leave');
    await this.unlisten?.().catch(() => {});
  }

  private announce(e: Notice['e']): Promise<void> {
    return this.opts.db.notify(CHANNEL, JSON.stringify({ i: this.opts.instance, e })).catch(() => {});
  }

  private onNotice(payload: string): void {
    const n = parseNotice<Notice>(payload);
    if (n === undefined) return;
    if (typeof n.i !== 'string' || n.i === this.opts.instance) return;
    if (n.e === 'leave') return void this.peers.delete(n.i);
    const known = this.peers.has(n.i) && this.now - this.peers.get(n.i)! < PEER_TTL_MS;
    this.peers.set(n.i, this.now);
    if (!known) this.startEpisode();
  }

  /** A process joined (or was heard again after a silence): rebalance for a while, unless already doing so. */
  private startEpisode(): void {
    const running = this.episodeEnd > this.now;
    this.episodeEnd = this.now + EPISODE_MS;
    this.lastHeld = Number.POSITIVE_INFINITY;
    if (running) return;
    this.schedule(this.jitter(SETTLE_MS));
  }

  private schedule(ms: number): void {
    clearTimeout(this.round);
    this.round = setTimeout(() => void this.rebalance().catch((err) => this.opts.log.warn('runner rebalance failed', { error: err instanceof Error ? err.message : String(err) })), ms);
    this.round.unref();
  }

  private async rebalance(): Promise<void> {
    if (this.now >= this.episodeEnd) return;
    for (const [id, seen] of this.peers) if (this.now - seen >= PEER_TTL_MS) this.peers.delete(id);
    const [c] = await this.opts.db.query<{ held: number; live: number }>(sql`
      select count(*) filter (where connected_instance = ${this.opts.instance})::int as held, count(*)::int as live
        from runners where revoked_at is null and last_seen_at > now() - make_interval(secs => ${ONLINE_WITHIN_SECONDS})`);
    // Live = connected, or seen within the presence window: runners moving right now count where they go.
    const excess = runnersToMove(c.held, c.live, this.peers.size + 1);
    if (excess === 0 || c.held >= this.lastHeld) return void (this.episodeEnd = 0);
    this.lastHeld = c.held;
    const held = this.opts.holder.heldRunners();
    const random = this.opts.random ?? Math.random;
    // Idle runners first (a move ends the terminals a runner relays), in random order.
    const order = held.map((r) => ({ ...r, k: random() })).sort((a, b) => Number(a.busy) - Number(b.busy) || a.k - b.k);
    const moving = order.slice(0, Math.min(excess, BATCH));
    for (const r of moving) setTimeout(() => this.opts.holder.release(r.id), Math.floor(random() * ROUND_MS * 0.5)).unref();
    this.opts.log.info('runner sockets above this process\'s share: asking some to reconnect', { held: c.held, live: c.live, replicas: this.peers.size + 1, moving: moving.length });
    this.schedule(this.jitter(ROUND_MS));
  }
}
