// A database that went away answers at once (docs/operations.md "When PostgreSQL goes away"; issue #33).
//
// Why a circuit, and not only shorter timeouts: postgres.js queues a query it cannot send behind a
// connection attempt, and spaces a closed connection's next attempt by a backoff that grows with every
// failed connect of the pool (shared; 3^n / 100 s, up to 20 s). While PostgreSQL was down for seconds,
// a request therefore waited out that backoff, then a connect, then possibly the next one in the
// queue: 6–17 s, and up to 13 s after PostgreSQL was back. A shorter backoff (postgres.ts) alone
// still lets requests pile up behind connection attempts, and a short connect_timeout alone still
// holds every request for that long when the server does not answer at all.
//
// So, per process:
//   closed  queries go to the pool as usual
//   trip    a query fails because the database cannot be reached (lib/db/unavailable.ts): the circuit
//           opens, and from then on every new query fails AT ONCE with DATABASE_UNREACHABLE — which
//           the API answers 503 database_unavailable — instead of queueing on the pool
//   probe   meanwhile one `select 1` at a time goes to the pool, every PROBE_EVERY_MS, each bounded by
//           PROBE_TIMEOUT_MS (a server that accepts no packets answers nothing at all); the first one
//           that succeeds closes the circuit, so requests succeed again within a probe interval plus
//           the pool's (short) reconnect backoff of the database's return
// A connection that broke while the server is fine (one backend terminated) opens the circuit only
// until the probe's answer, a few milliseconds. Queries already on the pool when it opened are left to it.
import { UNREACHABLE_CODE, isDatabaseUnavailable } from './unavailable.ts';

export const PROBE_EVERY_MS = 250;
export const PROBE_TIMEOUT_MS = 5_000;

export interface CircuitOptions {
  /** A query that succeeds when the database answers again. */
  probe: () => Promise<unknown>;
  /** Called when the circuit opens (`open: true`) and when it closes again, with how long it was open. */
  onChange?: (open: boolean, openMs: number) => void;
  probeEveryMs?: number;
  probeTimeoutMs?: number;
  now?: () => number;
}

const unreachable = () =>
  Object.assign(new Error('the database cannot be reached (a connection failed moments ago; it is being checked again)'), { code: UNREACHABLE_CODE });

export class Circuit {
  private openedAt: number | null = null;
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly opts: CircuitOptions) {
    this.now = opts.now ?? Date.now;
  }

  get isOpen(): boolean {
    return this.openedAt !== null;
  }

  /** Run a query through the circuit: refused at once while it is open; an unreachable database opens it. */
  async run<T>(query: () => Promise<T>): Promise<T> {
    if (this.openedAt !== null) throw unreachable();
    try {
      return await query();
    } catch (err) {
      if (isDatabaseUnavailable(err)) this.trip();
      throw err;
    }
  }

  /** Open the circuit (once) and probe until the database answers. */
  trip(): void {
    if (this.openedAt !== null || this.stopped) return;
    this.openedAt = this.now();
    this.opts.onChange?.(true, 0);
    void this.probeUntilBack();
  }

  stop(): void {
    this.stopped = true;
  }

  private async probeUntilBack(): Promise<void> {
    const every = this.opts.probeEveryMs ?? PROBE_EVERY_MS;
    while (!this.stopped) {
      if (await this.probeOnce()) {
        const openMs = this.now() - this.openedAt!;
        this.openedAt = null;
        this.opts.onChange?.(false, openMs);
        return;
      }
      await new Promise((r) => setTimeout(r, every).unref());
    }
  }

  private async probeOnce(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((r) => (timer = setTimeout(() => r(false), this.opts.probeTimeoutMs ?? PROBE_TIMEOUT_MS)));
    try {
      return await Promise.race([this.opts.probe().then(() => true, () => false), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
