// Background jobs = croner timers over SQL row leases (DESIGN §2). Every replica arms the same timers;
// at a tick each tries to insert the (job, scheduled_for) row, and only the one whose insert wins runs
// the job. While it runs it renews its lease; a replica that dies leaves a running row whose lease
// expires, and the sweeper (a lease loop, lib/lease-loop.ts) of any live replica takes it over. Jobs must
// therefore be idempotent.
import { randomUUID } from 'node:crypto';
import { Cron } from 'croner';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { systemTimers } from '../lib/clock.ts';
import type { Timers } from '../lib/clock.ts';
import { LeaseLoop } from '../lib/lease-loop.ts';
import type { Logger } from '../lib/log.ts';
import { countJobRun } from '../metrics/registry.ts';

export interface JobContext {
  db: Db;
  log: Logger;
  scheduledFor: Date;
  /** Aborted when the lease is lost or the process shuts down. */
  signal: AbortSignal;
}

export interface JobDefinition {
  name: string;
  description: string;
  cron: string;
  run(ctx: JobContext): Promise<Record<string, unknown>>;
}

export type { Timers } from '../lib/clock.ts';

const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout's ceiling; longer waits re-arm
/** A run whose lease expired this many times is marked failed instead of being retried again. */
export const MAX_ATTEMPTS = 3;

interface Running {
  job: string;
  scheduledFor: Date;
  controller: AbortController;
  done: Promise<void>;
}

export class Scheduler {
  readonly owner = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private readonly jobs = new Map<string, { def: JobDefinition; cron: Cron; timer?: unknown }>();
  private readonly running = new Set<Running>();
  /** The sweeper (lib/lease-loop.ts): a pass a few times per lease period, the first one period after start(). */
  private sweeper?: LeaseLoop;
  private stopped = true;
  /** Claims (and take-overs) under way: stop() waits for them, so none starts a run after it. */
  private readonly claiming = new Set<Promise<unknown>>();
  /** stop() was called (unlike `stopped`, which is also the state before start(): run-now works then). */
  private halted = false;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly leaseSeconds = 60,
    private readonly timers: Timers = systemTimers,
  ) {}

  register(def: JobDefinition): void {
    if (this.jobs.has(def.name)) throw new Error(`job ${def.name} is registered twice`);
    this.jobs.set(def.name, { def, cron: new Cron(def.cron, { paused: true }) });
  }

  definitions(): JobDefinition[] {
    return [...this.jobs.values()].map((j) => j.def);
  }

  nextRun(name: string): Date | null {
    const job = this.jobs.get(name);
    return job ? job.cron.nextRun(new Date(this.timers.now())) : null;
  }

  start(): void {
    this.stopped = false;
    this.halted = false;
    for (const name of this.jobs.keys()) this.arm(name);
    this.armSweeper();
    this.log.info('scheduler started', { owner: this.owner, jobs: [...this.jobs.keys()].join(',') });
  }

  private arm(name: string): void {
    const job = this.jobs.get(name)!;
    const next = this.nextRun(name);
    if (!next || this.stopped) return;
    const wait = next.getTime() - this.timers.now();
    job.timer = this.timers.setTimeout(() => {
      if (this.stopped) return;
      if (this.timers.now() < next.getTime()) return this.arm(name); // woke early (long wait re-armed)
      this.arm(name);
      void this.fire(name, next);
    }, Math.min(Math.max(wait, 0), MAX_TIMER_MS));
  }

  private armSweeper(): void {
    // Check for expired leases a few times per lease period, with jitter so replicas spread out.
    const every = (this.leaseSeconds * 1000) / 2;
    this.sweeper = new LeaseLoop({
      log: this.log,
      failed: 'lease sweep failed',
      errorFields: (err) => ({ error: err }),
      everyMs: () => every * (0.8 + Math.random() * 0.4),
      passAtStart: false,
      timers: this.timers,
      pass: async () => void (await this.sweep()),
    });
    void this.sweeper.start();
  }

  /** A cron tick: claim the (job, scheduledFor) row; only the replica whose insert wins runs it. */
  fire(name: string, scheduledFor: Date): Promise<boolean> {
    return this.track(this.claimTick(name, scheduledFor));
  }

  private async claimTick(name: string, scheduledFor: Date): Promise<boolean> {
    const [claimed] = await this.db
      .query(sql`
        insert into job_runs (job, scheduled_for, status, lease_owner, lease_expires_at)
        values (${name}, ${scheduledFor}, 'running', ${this.owner}, now() + make_interval(secs => ${this.leaseSeconds}))
        on conflict (job, scheduled_for) do nothing
        returning job`)
      .catch((err) => {
        this.log.error('job claim failed', { job: name, error: err });
        return [];
      });
    if (!claimed) return false;
    if (this.halted) {
      // stop() began while the claim was on its way: leave the tick to a replica that keeps running.
      await this.release(name, scheduledFor);
      return false;
    }
    this.execute(name, scheduledFor, 1);
    return true;
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.claiming.add(work);
    const done = () => void this.claiming.delete(work);
    work.then(done, done);
    return work;
  }

  /** Give up this replica's lease on a running row at once, so another replica's sweep takes it over. */
  private release(name: string, scheduledFor: Date): Promise<unknown> {
    return this.db
      .query(sql`
        update job_runs set lease_owner = null, lease_expires_at = now() - interval '1 second'
         where job = ${name} and scheduled_for = ${scheduledFor} and lease_owner = ${this.owner} and status = 'running'`)
      .catch(() => {});
  }

  /**
   * Run work that is not a registered job (a project schedule's due time, functions/schedules/) under the
   * same lease: only the replica whose (name, scheduledFor) insert wins runs it, and it renews the lease
   * while it runs. The sweeper never takes such a run over (it is not registered); the owner of `name`
   * decides what an expired lease means. Resolves once the run ended: true when this replica ran it, false
   * when another replica has it.
   */
  async claimAndRun(name: string, scheduledFor: Date, run: JobDefinition['run']): Promise<boolean> {
    if (this.jobs.has(name)) throw new Error(`${name} is a registered job; use fire()`);
    const [claimed] = await this.track(
      this.db.query(sql`
        insert into job_runs (job, scheduled_for, status, lease_owner, lease_expires_at)
        values (${name}, ${scheduledFor}, 'running', ${this.owner}, now() + make_interval(secs => ${this.leaseSeconds}))
        on conflict (job, scheduled_for) do nothing
        returning job`),
    );
    if (!claimed) return false;
    if (this.halted) {
      await this.release(name, scheduledFor);
      return false;
    }
    await this.execute(name, scheduledFor, 1, run);
    return true;
  }

  /** Take over running rows whose holder stopped renewing its lease (it crashed or hung). */
  sweep(): Promise<number> {
    return this.track(this.sweepOnce());
  }

  private async sweepOnce(): Promise<number> {
    const names = [...this.jobs.keys()];
    if (names.length === 0) return 0;
    const taken = await this.db.query<{ job: string; scheduled_for: Date; attempt: number }>(sql`
      update job_runs r
         set lease_owner = ${this.owner},
             lease_expires_at = now() + make_interval(secs => ${this.leaseSeconds}),
             attempt = r.attempt + 1
        from (select job, scheduled_for from job_runs
               where status = 'running' and lease_expires_at < now() and job = any(${names})
               order by scheduled_for
               for update skip locked
               limit 10) expired
       where r.job = expired.job and r.scheduled_for = expired.scheduled_for
      returning r.job, r.scheduled_for, r.attempt`);
    for (const row of taken) {
      const scheduledFor = new Date(row.scheduled_for);
      if (this.halted) {
        await this.release(row.job, scheduledFor); // stopping meanwhile: another replica takes it over
        continue;
      }
      if (row.attempt > MAX_ATTEMPTS) {
        await this.finish(row.job, scheduledFor, 'failed', null, `lease expired ${row.attempt - 1} times; giving up`);
        continue;
      }
      this.log.warn('taking over job whose lease expired', { job: row.job, scheduledFor: scheduledFor.toISOString(), attempt: row.attempt });
      this.execute(row.job, scheduledFor, row.attempt);
    }
    return taken.length;
  }

  private execute(name: string, scheduledFor: Date, attempt: number, run = this.jobs.get(name)!.def.run): Promise<void> {
    const controller = new AbortController();
    const log = this.log.child({ job: name });
    const renew = () => {
      heartbeat = this.timers.setTimeout(async () => {
        const [kept] = await this.db
          .query(sql`
            update job_runs set lease_expires_at = now() + make_interval(secs => ${this.leaseSeconds})
             where job = ${name} and scheduled_for = ${scheduledFor} and lease_owner = ${this.owner} and status = 'running'
            returning job`)
          .catch(() => [undefined]);
        if (!kept) {
          log.warn('lease lost; abandoning run');
          controller.abort(new Error('lease lost'));
        } else if (!controller.signal.aborted) renew();
      }, (this.leaseSeconds * 1000) / 3);
    };
    let heartbeat: unknown;
    renew();
    const started = this.timers.now();
    const entry: Running = { job: name, scheduledFor, controller, done: Promise.resolve() };
    this.running.add(entry);
    entry.done = (async () => {
      try {
        const result = await run({ db: this.db, log, scheduledFor, signal: controller.signal });
        if (controller.signal.aborted) return;
        await this.finish(name, scheduledFor, 'ok', result, null);
        countJobRun(name, 'ok', (this.timers.now() - started) / 1000);
        log.info('job finished', { scheduledFor: scheduledFor.toISOString(), attempt, ms: this.timers.now() - started, ...result });
      } catch (err) {
        if (controller.signal.aborted) return;
        const message = err instanceof Error ? err.message : String(err);
        await this.finish(name, scheduledFor, 'failed', null, message);
        countJobRun(name, 'failed', (this.timers.now() - started) / 1000);
        log.error('job failed', { scheduledFor: scheduledFor.toISOString(), attempt, error: message });
      } finally {
        this.timers.clearTimeout(heartbeat);
        this.running.delete(entry);
      }
    })();
    return entry.done;
  }

  private async finish(name: string, scheduledFor: Date, status: 'ok' | 'failed', result: unknown, error: string | null) {
    await this.db
      .query(sql`
        update job_runs
           set status = ${status}, finished_at = now(), result = ${sql.json(result)},
               error = ${error}, lease_owner = null, lease_expires_at = null
         where job = ${name} and scheduled_for = ${scheduledFor} and (lease_owner = ${this.owner} or lease_owner is null)`)
      .catch((err) => this.log.error('could not record job result', { job: name, error: err }));
  }

  /** Run a job now (admin "run now"); the current time is its scheduled time. */
  async runNow(name: string): Promise<Date | null> {
    if (!this.jobs.has(name)) return null;
    const at = new Date(this.timers.now());
    return (await this.fire(name, at)) ? at : null;
  }

  /** Wait for the given job runs started by this replica (tests, run-now). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.claiming]); // a claim under way may be about to start one
    await Promise.all([...this.running].map((r) => r.done));
  }

  /**
   * Stop timers; give running jobs `graceMs` to finish, then abort them and release their leases so
   * another replica takes them over at once instead of after the lease expires.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    this.halted = true;
    for (const job of this.jobs.values()) this.timers.clearTimeout(job.timer);
    await this.sweeper?.stop();
    await Promise.allSettled([...this.claiming]);
    const pending = [...this.running];
    if (pending.length === 0) return;
    await Promise.race([Promise.all(pending.map((r) => r.done)), new Promise((r) => setTimeout(r, graceMs))]);
    for (const r of this.running) {
      r.controller.abort(new Error('shutting down'));
      await this.release(r.job, r.scheduledFor);
      this.log.warn('released lease of unfinished job', { job: r.job });
    }
  }
}
