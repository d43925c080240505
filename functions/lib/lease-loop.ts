// One loop for the work the processes share through SQL leases (docs/architecture.md "The lease loop";
// issue #35 step 3), like graphile-worker's single queue loop. The trigger firer, the webhook worker, the
// schedules runner, the pool dispatcher (runs/pool.ts) and the jobs' lease sweeper each give it their claim-and-work pass:
//   wake    on a timer (every `everyMs`), on kick() (this process made work), on a NOTIFY on `listen`'s
//           channel, and each time that LISTEN is made again after the database was away (the notices
//           sent meanwhile are lost, so the loop looks anyway)
//   pass    one pass at a time; the pass claims with FOR UPDATE SKIP LOCKED (its owner's SQL), so the
//           processes share the work and never take one row twice. A wake-up during a pass runs one more
//           pass after it; a pass that answers true (more work waiting) runs again at once
//   errors  a failed pass logs its owner's line and the loop waits for its next wake-up; while the
//           database cannot be reached (lib/db/unavailable.ts) only the first failure is logged, until
//           a pass succeeds again
//   stop    no pass starts after stop(), which resolves once the pass under way ended, with no timer
//           left and the LISTEN dropped
import { systemTimers } from './clock.ts';
import type { Timers } from './clock.ts';
import type { Db } from './db/port.ts';
import { isDatabaseUnavailable } from './db/unavailable.ts';
import type { Logger } from './log.ts';

export interface LeaseLoopOptions {
  log: Logger;
  /** The ERROR line a failed pass logs. */
  failed: string;
  /** Its fields; by default the error's message as `error`. */
  errorFields?: (err: unknown) => Record<string, unknown>;
  /** One claim-and-work pass; true when more work is waiting (a full batch): the next pass runs at once. */
  pass: () => Promise<boolean | void>;
  /** The time between timer wake-ups (ms); a function gives each wait anew (jitter). */
  everyMs: number | (() => number);
  /** Called at each timer wake-up, before the pass (what only the timer makes due). */
  onTimer?: () => void;
  /** Wake on NOTIFY on `channel`; `onNotice` sees each payload, `onRelisten` runs when the LISTEN was made again. */
  listen?: { db: Pick<Db, 'listen'>; channel: string; onNotice?: (payload: string) => void; onRelisten?: () => void };
  /** kick() runs a pass before start() too (default: kicks count only once started). */
  kickBeforeStart?: boolean;
  /** The first pass at start() (default), or at the first timer wake-up. */
  passAtStart?: boolean;
  timers?: Timers;
}

export class LeaseLoop {
  private state: 'new' | 'started' | 'stopped' = 'new';
  private draining: Promise<void> | null = null;
  private again = false;
  private timer: unknown;
  private unlisten?: () => Promise<void>;
  /** The database could not be reached at the last pass: its failure was logged once. */
  private unreachable = false;
  private readonly timers: Timers;

  constructor(private readonly opts: LeaseLoopOptions) {
    this.timers = opts.timers ?? systemTimers;
  }

  get stopped(): boolean {
    return this.state === 'stopped';
  }

  /** Listen (when asked), arm the timer and run the first pass. A LISTEN that fails throws: start() may be called again. */
  async start(): Promise<void> {
    if (this.state !== 'new') return;
    const l = this.opts.listen;
    if (l) {
      const unlisten = await l.db.listen(
        l.channel,
        (payload) => {
          l.onNotice?.(payload);
          this.kick();
        },
        () => {
          l.onRelisten?.();
          this.kick();
        },
      );
      if (this.state !== 'new') return void (await unlisten().catch(() => {})); // stopped meanwhile
      this.unlisten = unlisten;
    }
    this.state = 'started';
    this.arm();
    if (this.opts.passAtStart ?? true) this.kick();
  }

  private arm(): void {
    const every = typeof this.opts.everyMs === 'function' ? this.opts.everyMs() : this.opts.everyMs;
    this.timer = this.timers.setTimeout(() => {
      if (this.state !== 'started') return;
      this.opts.onTimer?.();
      this.arm();
      this.kick();
    }, every);
  }

  /** Wake up: a pass now, or one more after the pass under way. Its failure is logged, never thrown. */
  kick(): void {
    if (this.state === 'stopped' || (this.state === 'new' && !this.opts.kickBeforeStart)) return;
    this.run().catch((err) => this.report(err));
  }

  /**
   * Passes now until no more work is waiting (one more after the pass under way), started or not (tests,
   * a caller that waits); rejects with a pass's error.
   */
  run(): Promise<void> {
    if (this.state === 'stopped') return Promise.resolve();
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = this.drain().finally(() => (this.draining = null));
    return this.draining;
  }

  private async drain(): Promise<void> {
    let more = true;
    while (more && this.state !== 'stopped') {
      this.again = false;
      more = (await this.opts.pass()) === true || this.again;
      this.unreachable = false;
    }
  }

  private report(err: unknown): void {
    if (isDatabaseUnavailable(err)) {
      if (this.unreachable) return; // logged at the first failure of this outage
      this.unreachable = true;
    }
    this.opts.log.error(this.opts.failed, this.opts.errorFields?.(err) ?? { error: err instanceof Error ? err.message : String(err) });
  }

  /** No pass starts from now on; resolves once the pass under way ended, the timer cleared and the LISTEN dropped. */
  async stop(): Promise<void> {
    this.state = 'stopped';
    this.timers.clearTimeout(this.timer);
    const unlisten = this.unlisten;
    this.unlisten = undefined;
    await Promise.all([unlisten?.().catch(() => {}), this.draining?.catch(() => {})]);
  }

  /**
   * stop(), then let the work the passes started (`inFlight`: commands being sent) finish, for up to
   * `graceMs` in all; what is still out then is left to its lease.
   */
  async stopWithin(graceMs: number, inFlight: ReadonlySet<Promise<unknown>>): Promise<void> {
    const settled = (async () => {
      await this.stop();
      await Promise.all(inFlight);
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([settled, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
  }
}
