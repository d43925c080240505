// The worker's outcome writes (worker.ts), batched like a group commit (issue #41): an attempt that ends
// queues its outcome; one statement writes every outcome queued by then — each attempt's own row, each
// delivery's next state — and the outcomes that end while it runs go in the next one. Idle, an outcome
// waits for no one (the first is written at once, after the current turn of the event loop); under
// load, one statement serves many deliveries. A crash between the POST and the write leaves the
// attempt started and leased, as before: the next claim marks it `lease_expired` and counts it once.
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import type { CircuitState } from './circuit.ts';

/** What one attempt came to (worker.ts attempt). */
export interface Outcome {
  ok: boolean;
  /** Why the attempt failed: blocked_address, timeout, http_status, redirect, connection_reset, … */
  error: string | null;
  detail: string | null;
  status: number | null;
  body: string | null;
  address: string | null;
  ms: number;
}

/** One finished attempt: its outcome, which attempt of which delivery, and the delivery's next state (circuit.ts afterAttempt). */
export interface OutcomeRow extends Outcome {
  id: string;
  attempt: number;
  at: Date;
  nextStatus: string;
  nextAt: Date | null;
}

/** The delivery's webhook circuit as the write saw it (read without a lock). */
export interface CircuitRow {
  circuit_state: CircuitState;
  consecutive_failures: number;
  circuit_opened_at: Date | null;
  trial_delivery_id: string | null;
}

/**
 * Every outcome in one statement: the attempts, the deliveries still leased to `owner` at that attempt
 * (a delivery whose lease ran out and was taken over is left to its new owner), and their circuits.
 */
const writeOutcomes = (owner: string, rows: OutcomeRow[]) => sql`
  with input as (
    select * from jsonb_to_recordset(${sql.json(rows)})
      as x(id text, attempt int, ok boolean, error text, detail text, status int, body text, address text, ms int,
           at timestamptz, "nextStatus" text, "nextAt" timestamptz)
  ), attempt as (
    update outbound_attempts a
       set outcome = case when i.ok then 'success' else 'failure' end, error = i.error, detail = i.detail, finished_at = i.at,
           response_code = i.status, response_body = i.body, address = i.address, duration_ms = i.ms
      from input i where a.delivery_id = i.id and a.attempt = i.attempt
    returning 1
  ), delivery as (
    update outbound_deliveries d
       set status = i."nextStatus", next_attempt_at = i."nextAt", response_code = i.status, response_body = i.body,
           last_error = i.error, delivered_at = case when i.ok then i.at end, lease_owner = null, lease_expires_at = null, updated_at = now()
      from input i where d.id = i.id and d.lease_owner = ${owner} and d.attempts = i.attempt
    returning d.id, d.webhook_id
  )
  select delivery.id, w.circuit_state, w.consecutive_failures, w.circuit_opened_at, w.trial_delivery_id
    from delivery join webhooks w on w.id = delivery.webhook_id`;

type Waiting = { row: OutcomeRow; done: (circuit: CircuitRow | null) => void; fail: (err: unknown) => void };

export class OutcomeWriter {
  private queue: Waiting[] = [];
  private writing = false;

  /** Statements written and outcomes they carried (the benchmark and the tests read them). */
  readonly stats = { statements: 0, outcomes: 0 };

  constructor(
    private readonly db: Db,
    private readonly owner: string,
    private readonly max = 256,
  ) {}

  /** Queue an outcome; resolves with its webhook's circuit once written, or null when the lease was lost. */
  write(row: OutcomeRow): Promise<CircuitRow | null> {
    return new Promise((done, fail) => {
      this.queue.push({ row, done, fail });
      if (!this.writing) {
        this.writing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.max);
        try {
          const rows = await this.db.query<CircuitRow & { id: string }>(writeOutcomes(this.owner, batch.map((w) => w.row)));
          this.stats.statements++;
          this.stats.outcomes += batch.length;
          const byId = new Map(rows.map((r) => [r.id, r]));
          for (const w of batch) w.done(byId.get(w.row.id) ?? null);
        } catch (err) {
          for (const w of batch) w.fail(err);
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
