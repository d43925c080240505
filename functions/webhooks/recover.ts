// Recover failed deliveries (issue #39 part 2; docs/webhooks.md "Recovering failed deliveries"): every
// delivery of one webhook that ended failed at or after `since` gets a new attempt series of
// MAX_ATTEMPTS, due now. It keeps its row and its id, so the receiver sees the same X-Svc-Delivery as in
// the first series and can deduplicate; its attempts go on numbering after the ones it used, each its
// own row of outbound_attempts, and its retry schedule starts again at 30 s (circuit.ts afterAttempt).
// An open circuit never skips a delivery: it holds it pending (spec: circuit table) until the circuit
// closes, so what the circuit cost is the failed ones — the trials that ran out of attempts and the
// deliveries failing when it opened — and those are recovered like any other. Recovered deliveries of a
// paused webhook wait behind its circuit like the rest.
// One conditional statement: a delivery is taken only while it is `failed`. Two recoveries at once both
// try the same rows; on PostgreSQL the second waits for the first's row locks, reads the rows again and
// finds them pending, so each delivery is queued once, and recovering again queues only the deliveries
// that failed again since.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { MAX_ATTEMPTS } from './circuit.ts';

/** How far back `since` may go. */
export const RECOVER_MAX_DAYS = 14;

/**
 * The recovery statement: this webhook's deliveries that ended failed at or after `since`, pending
 * again with MAX_ATTEMPTS more attempts, due at `now`; it returns their ids. Read through sql/0035's
 * index of failed deliveries (test/webhooks/recover.test.ts reads its plan).
 */
export const recoverStatement = (webhookId: string, since: Date, now: Date) => sql`
  update outbound_deliveries
     set status = 'pending', attempts_allowed = attempts + ${MAX_ATTEMPTS}, next_attempt_at = ${now},
         lease_owner = null, lease_expires_at = null, updated_at = now()
   where webhook_id = ${webhookId} and status = 'failed' and updated_at >= ${since}
  returning id`;

/** Queue a new attempt series for this webhook's deliveries that ended failed at or after `since`: their ids. */
export async function recoverFailed(q: Queryable, webhookId: string, since: Date, now: Date): Promise<string[]> {
  return (await q.query<{ id: string }>(recoverStatement(webhookId, since, now))).map((r) => r.id);
}
