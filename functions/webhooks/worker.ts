// The outbound delivery worker (spec: Delivery behaviour; DESIGN §2: rows claimed with SQL leases).
// Every process with WEBHOOKS_WORKER_ENABLED runs one; they share the work through the database and
// never attempt one delivery twice at once. Its pass (lib/lease-loop.ts):
//   dispatch  webhook_outbox rows → one pending delivery per matching webhook (dispatch.ts)
//   trials    open circuits whose 15-minute pause passed → half-open with one trial delivery
//   claim     due deliveries → this process, with a lease; `attempts` counts the attempt as it starts (claim.ts)
//   attempt   guard → sign → POST (send.ts) → record the outcome, the next attempt and the circuit
// Chat channels (Slack, Telegram: functions/webhooks/chat.ts) are rows of `webhooks` too: their
// pushes are deliveries made by notify(), attempted here exactly like a webhook's, only unsigned and
// to the URL their stored secret gives.
// A process that dies mid-attempt leaves a lease that expires; the next claim marks that attempt
// `lease_expired` and makes the next one. Wake-ups: NOTIFY on new work, and a poll for retries.
// Errors: an attempt's errors are its recorded outcome; anything that still escapes from the worker or
// an attempt is contained by the server's safety net (lib/safety-net.ts): logged, never an exit.
import { randomUUID } from 'node:crypto';
import type https from 'node:https';
import { systemClock } from '../lib/clock.ts';
import type { Clock } from '../lib/clock.ts';
import type { Keys } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { LeaseLoop } from '../lib/lease-loop.ts';
import type { Logger } from '../lib/log.ts';
import { runContained } from '../lib/safety-net.ts';
import type { ChannelKind } from './chat.ts';
import { CHANNEL } from './capture.ts';
import { attempt } from './attempt.ts';
import type { Attemptable } from './attempt.ts';
import { claimBatch, handBack } from './claim.ts';
import { sweep } from './sweep.ts';
import { OutcomeWriter } from './outcomes.ts';
import type { CircuitRow, Outcome } from './outcomes.ts';
import { dispatch, dispatchOnce } from './dispatch.ts';
import { publish } from '../live/publish.ts';
import { afterAttempt, circuitAfterAttempt } from './circuit.ts';
import type { Circuit } from './circuit.ts';
import { compileAllowlist } from './guard.ts';
import type { Allowlist, Resolver } from './guard.ts';
import { ATTEMPT_TIMEOUT_MS } from './send.ts';
import { loadAllowlist } from './webhooks.ts';
import { countWebhookAttempt } from '../metrics/registry.ts';

export type { Clock } from '../lib/clock.ts';

export interface WorkerOptions {
  db: Db;
  log: Logger;
  keys: Pick<Keys, 'encryption'>;
  clock?: Clock;
  random?: () => number;
  resolve?: Resolver;
  /** Per-attempt deadline; the spec's 10 s unless a test shortens it. */
  timeoutMs?: number;
  /** How long a claim holds a delivery; must exceed the attempt timeout. */
  leaseMs?: number;
  /** Attempts in flight at once in this process. */
  concurrency?: number;
  /** How often to look for due retries and paused circuits without being woken. */
  pollMs?: number;
  /** Extra TLS options for the POST (tests trust a local CA). */
  tls?: https.RequestOptions;
}

/** Attempts in flight at once in one process, unless WorkerOptions.concurrency says otherwise. */
export const DEFAULT_CONCURRENCY = 16;

interface Claimed {
  id: string;
  webhook_id: string;
  event_type: string;
  body: string;
  attempts: number;
  attempts_allowed: number;
  url: string;
  secret_ciphertext: string;
  /** 'webhook', or a chat channel ('slack', 'telegram': functions/webhooks/chat.ts). */
  kind: ChannelKind;
  trial: boolean;
}

export type { Outcome } from './outcomes.ts';

export class WebhookWorker {
  readonly owner = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private readonly db: Db;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  /** Attempts of this process from their claim until their outcome is written (stop and tick wait for them). */
  private readonly inFlight = new Map<string, { done: Promise<void>; controller: AbortController }>();
  /**
   * Of those, the ones still talking to their receiver: at most `concurrency`. An attempt whose POST
   * ended gives its slot to the next delivery at once, while its outcome is being written (the delivery
   * stays leased to this process until then, so no one else takes it; a crash meanwhile leaves the
   * attempt counted once, `lease_expired`, as before). Outcomes being written are bounded too: the
   * pass claims only while fewer than 2 × concurrency attempts are in flight in all.
   */
  private posting = 0;
  /**
   * Claimed ahead (issue #41 part 1): leased, counted and recorded as started, waiting for a slot, at
   * most `concurrency` of them. A slot that frees starts the next POST from here at once, without a
   * round trip to the database; the pass refills it meanwhile. The attempt's `started_at` is therefore
   * its claim, a little before its POST. One that waited too long for its lease to cover a whole attempt
   * is handed back instead (`release`), as are all of them at stop(); a crash leaves their leases to
   * expire, and the next claim counts each of those attempts once (`lease_expired`), as for one in flight.
   */
  private readonly ready: { d: Claimed; claimedAt: number; claim: number; allowlist: Allowlist }[] = [];
  /** Hand-backs under way (tick waits for them). */
  private readonly handingBack = new Set<Promise<void>>();
  /** Claims started so far: what was claimed ahead remembers which claim took it. */
  private claims = 0;
  /**
   * Webhooks whose circuit this process saw open, with the last claim started before: what those claims
   * took ahead for them is handed back, not sent. A later claim read the circuit closed again.
   */
  private readonly circuitsOpen = new Map<string, number>();
  private outboxDirty = true;
  private sweepDue = true;
  private allowlist: { list: Allowlist; loadedAt: number } | null = null;
  /**
   * Wake-ups (lib/lease-loop.ts): NOTIFY on new work (an `allowlist` notice drops the cached list), a
   * LISTEN made again (a notice may have been missed: both), an attempt that ended, and the poll, which
   * also looks for due retries and paused circuits. Not contained: the pass only talks to our database,
   * like the scheduler. Each attempt it launches, which talks to a receiver, is (launch below);
   * containing the pass too, which runs every second, would keep the safety net's tracking on for good
   * (lib/safety-net.ts).
   */
  private readonly loop: LeaseLoop;
  /** Deliveries claimed by this worker so far (tick() runs until a pass claims none). */
  private claimed = 0;
  /** Outcome writes, batched (outcomes.ts). */
  readonly outcomes: OutcomeWriter;

  constructor(private readonly opts: WorkerOptions) {
    this.db = opts.db;
    this.log = opts.log;
    this.clock = opts.clock ?? systemClock;
    this.timeoutMs = opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
    if (this.leaseMs <= this.timeoutMs) throw new Error('the delivery lease must be longer than the attempt timeout');
    this.outcomes = new OutcomeWriter(this.db, this.owner);
    const listen = {
      db: this.db,
      channel: CHANNEL,
      onNotice: (payload: string) => {
        if (payload === 'outbox') this.outboxDirty = true;
        if (payload === 'allowlist') this.allowlist = null;
      },
      onRelisten: () => {
        this.outboxDirty = true;
        this.allowlist = null;
      },
    };
    const onTimer = () => (this.outboxDirty = this.sweepDue = true);
    this.loop = new LeaseLoop({ log: this.log, failed: 'webhook worker failed', everyMs: opts.pollMs ?? 1000, listen, onTimer, pass: () => this.pass() });
  }

  async start(): Promise<void> {
    await this.loop.start();
    this.log.info('webhook worker started', { owner: this.owner, concurrency: this.concurrency });
  }

  /** Stop claiming; give attempts in flight `graceMs`, then abort them and release their leases. */
  async stop(graceMs: number): Promise<void> {
    await this.loop.stop();
    await this.release(this.ready.splice(0).map((r) => r.d));
    const pending = () => [...this.inFlight.values()].map((f) => f.done);
    if (this.inFlight.size) await Promise.race([Promise.all(pending()), new Promise((r) => setTimeout(r, graceMs))]);
    for (const f of this.inFlight.values()) f.controller.abort();
    await Promise.all(pending());
  }

  /** Do everything due now and wait for it (tests drive the worker with this and an injected clock). */
  async tick(): Promise<void> {
    this.outboxDirty = this.sweepDue = true;
    this.allowlist = null;
    for (;;) {
      const before = this.claimed;
      await this.loop.run();
      for (;;) {
        if (!this.inFlight.size && this.ready.length && !this.loop.stopped) await this.startReady();
        if (!this.inFlight.size && !this.handingBack.size) break;
        await Promise.all([...[...this.inFlight.values()].map((f) => f.done), ...this.handingBack]);
      }
      if (this.claimed === before) return;
    }
  }

  /** Dispatch one batch and sweep when due, then claim one batch; more is waiting when the outbox batch or the claim was full and room is left. */
  private async pass(): Promise<boolean> {
    let more = false;
    if (this.outboxDirty) {
      // One batch per pass: the claim below starts POSTs while a large outbox is still being dispatched.
      more = (await dispatchOnce(this.db, new Date(this.clock.now()))).more;
      this.outboxDirty = more;
    }
    if (this.sweepDue) {
      this.sweepDue = false;
      await this.sweep();
    }
    const room = this.room();
    if (this.loop.stopped || room <= 0) return more;
    const batch = await this.claim(room);
    if (batch.length === 0) {
      await this.startReady();
      return more;
    }
    const allowlist = await this.currentAllowlist();
    const claimedAt = this.clock.now();
    const claim = this.claims;
    for (const d of batch) {
      const openedAt = this.circuitsOpen.get(d.webhook_id);
      if (openedAt !== undefined && openedAt < claim) this.circuitsOpen.delete(d.webhook_id);
      this.ready.push({ d, claimedAt, claim, allowlist });
    }
    this.claimed += batch.length;
    await this.startReady();
    return more || (batch.length === room && this.room() > 0);
  }

  /**
   * How many deliveries a claim may take now: enough to fill the free slots and to keep `concurrency`
   * claimed ahead (see `posting`, `ready`). Attempts whose outcome is being written are bounded too:
   * at most 2 × concurrency in flight, plus the ones claimed ahead.
   */
  private room(): number {
    const ahead = this.concurrency - this.ready.length;
    return Math.min(this.concurrency - this.posting + ahead, 2 * this.concurrency - this.inFlight.size + ahead);
  }

  /** startReady() from a callback: a failed hand-back is logged (the leases then expire). */
  private startReadyNow(): void {
    this.startReady().catch((err) =>
      this.log.error('webhook deliveries claimed ahead could not be handed back; their leases will expire', { error: err instanceof Error ? err.message : String(err) }),
    );
  }

  /** Start the deliveries claimed ahead while slots are free; hand back those whose lease got too short. */
  private async startReady(): Promise<void> {
    const stale: Claimed[] = [];
    // The lease must still cover a whole attempt and the writing of its outcome.
    const oldest = this.clock.now() - (this.leaseMs - this.timeoutMs) / 2;
    while (this.ready.length && this.posting < this.concurrency && this.inFlight.size < 2 * this.concurrency && !this.loop.stopped) {
      const r = this.ready.shift()!;
      const openedAt = this.circuitsOpen.get(r.d.webhook_id);
      if (r.claimedAt < oldest || (openedAt !== undefined && r.claim <= openedAt)) stale.push(r.d);
      else this.launch(r.d, r.allowlist);
    }
    if (!stale.length) return;
    const back = this.release(stale).finally(() => this.handingBack.delete(back));
    this.handingBack.add(back);
    await back;
  }

  /**
   * Hand back deliveries claimed ahead that were never attempted: the attempt the claim counted and
   * recorded is taken back, and the lease ends, so the next claim (here or elsewhere) takes them at once.
   */
  private async release(ds: Claimed[]): Promise<void> {
    if (!ds.length) return;
    const ids = ds.map((d) => d.id);
    await this.db.query(handBack(ids, this.owner));
    this.log.debug('webhook deliveries claimed ahead handed back', { count: ids.length });
  }

  /** The allowlist, re-read when an admin changes it (NOTIFY) and at least every 5 seconds. */
  private async currentAllowlist(): Promise<Allowlist> {
    if (!this.allowlist || Date.now() - this.allowlist.loadedAt > 5000) {
      this.allowlist = { list: compileAllowlist(await loadAllowlist(this.db)), loadedAt: Date.now() };
    }
    return this.allowlist.list;
  }

  /** Outbox → deliveries, one per webhook that wants the event's type and project (dispatch.ts). */
  dispatch(): Promise<number> {
    return dispatch(this.db, new Date(this.clock.now()));
  }

  /** Housekeeping of leases and circuits (sweep.ts). */
  sweep(): Promise<void> {
    return sweep(this.db, this.log, new Date(this.clock.now()));
  }

  /** Take up to `n` due deliveries with a lease; count each attempt as it starts. */
  async claim(n: number): Promise<Claimed[]> {
    const now = new Date(this.clock.now());
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    this.claims++;
    return this.db.query<Claimed>(claimBatch(now, n, this.owner, leaseUntil));
  }

  private launch(d: Claimed, allowlist: Allowlist): void {
    const controller = new AbortController();
    const work = { area: 'a webhook delivery', fields: { deliveryId: d.id, webhookId: d.webhook_id, attempt: d.attempts } };
    this.posting++;
    let posted = false;
    const slotFree = () => {
      if (posted) return;
      posted = true;
      this.posting--;
      this.startReadyNow(); // the next delivery claimed ahead takes the slot; the pass refills what was claimed ahead
      this.loop.kick(); // counts once started
    };
    const done = runContained(work, async () => {
      try {
        const started = performance.now();
        const outcome = await this.attempt(d, allowlist, controller.signal);
        countWebhookAttempt(outcome.ok, outcome.error, outcome.status, (performance.now() - started) / 1000);
        // After a success the next delivery's POST overlaps this outcome's write. A failure keeps its slot
        // until written: it may open the webhook's circuit, and what was claimed ahead for it must wait.
        if (outcome.ok) slotFree();
        await this.record(d, outcome);
      } catch (err) {
        this.log.error('webhook attempt could not be recorded; its lease will expire', { deliveryId: d.id, error: err instanceof Error ? err.message : String(err) });
      } finally {
        this.inFlight.delete(d.id);
        slotFree();
        this.startReadyNow(); // room under the bound of attempts in flight
        this.loop.kick();
      }
    });
    this.inFlight.set(d.id, { done, controller });
  }

  /** Guard, sign, send: the outcome of one attempt (attempt.ts). Never throws for a receiver's fault. */
  attempt(d: Attemptable, allowlist: Allowlist, signal?: AbortSignal): Promise<Outcome> {
    return attempt(d, allowlist, { ...this.opts, clock: this.clock, timeoutMs: this.timeoutMs }, signal);
  }

  /** Write the attempt, the delivery's next state and the circuit, in one transaction. */
  private async record(d: Claimed, o: Outcome): Promise<void> {
    const now = this.clock.now();
    const at = new Date(now);
    if (o.error === 'aborted') {
      // Shutting down: the attempt counts, and its lease ends now so another process retries at once.
      await this.db.query(sql`
        update outbound_attempts set outcome = 'failure', error = 'aborted', detail = ${o.detail}, finished_at = ${at}
         where delivery_id = ${d.id} and attempt = ${d.attempts} and outcome is null`);
      await this.db.query(sql`update outbound_deliveries set lease_expires_at = ${at} where id = ${d.id} and lease_owner = ${this.owner}`);
      return;
    }
    const next = afterAttempt(d.attempts, d.attempts_allowed, o.ok, now, this.opts.random);
    // The attempt and the delivery, written with the other outcomes of the moment (outcomes.ts); it
    // also reads the circuit, without a lock.
    const kept = await this.outcomes.write({
      ...o, id: d.id, attempt: d.attempts, at, nextStatus: next.status, nextAt: next.nextAttemptAt === null ? null : new Date(next.nextAttemptAt),
    });
    // No row: the lease ran out and another process took over; its attempt decides. The common case
    // (closed, no failures, a success) changes nothing and takes no lock on the webhook.
    const circuit = kept && toCircuit(kept);
    if (circuit && circuitAfterAttempt(circuit, d.id, o.ok, now) !== circuit) await this.moveCircuit(d, o.ok, now);
    const fields = { deliveryId: d.id, webhookId: d.webhook_id, event: d.event_type, attempt: d.attempts, status: o.status ?? undefined, ms: o.ms };
    if (o.ok) this.log.debug('webhook delivered', fields);
    else this.log.info('webhook attempt failed', { ...fields, error: o.error, next: next.status === 'pending' ? new Date(next.nextAttemptAt!).toISOString() : next.status });
  }

  /** The circuit table applied under the webhook's row lock, so concurrent attempts count exactly. */
  private async moveCircuit(d: Claimed, ok: boolean, now: number): Promise<void> {
    const state = await this.db.transaction(async (tx) => {
      const [w] = await tx.query<CircuitRow>(sql`
        select circuit_state, consecutive_failures, circuit_opened_at, trial_delivery_id from webhooks where id = ${d.webhook_id} for update`);
      if (!w) return null;
      const before = toCircuit(w);
      const after = circuitAfterAttempt(before, d.id, ok, now);
      if (after === before) return null;
      await tx.query(sql`
        update webhooks set circuit_state = ${after.state}, consecutive_failures = ${after.consecutiveFailures},
               circuit_opened_at = ${after.openedAt === null ? null : new Date(after.openedAt)}, trial_delivery_id = ${after.trialDeliveryId}
         where id = ${d.webhook_id}`);
      if (after.state !== before.state) {
        await publish(tx, { type: 'webhook', id: d.webhook_id, circuit: after.state }, { admins: true });
        const log = after.state === 'open' ? this.log.warn : this.log.info;
        log(`webhook circuit ${after.state}`, { webhookId: d.webhook_id, consecutiveFailures: after.consecutiveFailures });
      }
      return after.state;
    });
    // Once committed: every claim started before now may have read the circuit closed.
    if (state === 'open') this.circuitsOpen.set(d.webhook_id, this.claims);
    else if (state) this.circuitsOpen.delete(d.webhook_id);
  }
}


const toCircuit = (w: CircuitRow): Circuit => ({
  state: w.circuit_state,
  consecutiveFailures: w.consecutive_failures,
  openedAt: w.circuit_opened_at ? new Date(w.circuit_opened_at).getTime() : null,
  trialDeliveryId: w.trial_delivery_id,
});
