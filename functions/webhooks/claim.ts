// The worker's claim (worker.ts): due deliveries taken with a lease, oldest first, each attempt counted
// and recorded as started in the same statement. Processes claiming at once take different rows (SKIP
// LOCKED); an open circuit's backlog is never read.
import { sql } from '../lib/db/index.ts';

/** A delivery `d` a worker may attempt at `now`: pending, due, not leased, attempts left. */
const claimable = (now: Date) => sql`d.status = 'pending' and d.next_attempt_at <= ${now}
  and (d.lease_expires_at is null or d.lease_expires_at <= ${now}) and d.attempts < d.attempts_allowed`;

/**
 * One claim: up to `n` due deliveries, oldest first, leased to `owner` until `leaseUntil`, each attempt
 * counted and recorded as started. Exported for the test that reads its plan
 * (test/webhooks/claim.test.ts).
 */
export const claimBatch = (now: Date, n: number, owner: string, leaseUntil: Date) => sql`
  with due as (
    -- Candidates per webhook whose circuit lets it through, from sql/0021's index: a closed one's oldest
    -- n, a half-open one's trial only (by its id); the backlog of an open circuit is never read. The two
    -- are apart because the circuit test inside the per-webhook read made PostgreSQL, with statistics,
    -- expect a handful of rows and read the whole queue instead of walking the index from its head.
    -- Then the oldest n of them, locked; the conditions again, for a row another process claimed meanwhile.
    select d.id from outbound_deliveries d
     where d.id = any(array(
             select c.id from webhooks w
              cross join lateral (
                select d.id from outbound_deliveries d
                 where d.webhook_id = w.id and ${claimable(now)}
                 order by d.next_attempt_at
                 limit ${n}) c
              where w.circuit_state = 'closed'
             union all
             select d.id from webhooks w join outbound_deliveries d on d.id = w.trial_delivery_id and d.webhook_id = w.id
              where w.circuit_state = 'half-open' and ${claimable(now)}))
       and ${claimable(now)}
     order by d.next_attempt_at
     limit ${n}
     for update of d skip locked
  ), claimed as (
    update outbound_deliveries d
       set attempts = d.attempts + 1, lease_owner = ${owner}, lease_expires_at = ${leaseUntil}, updated_at = now()
      from due where d.id = due.id
    returning d.id, d.webhook_id, d.event_type, d.body, d.attempts, d.attempts_allowed
  ), abandoned as (
    update outbound_attempts a
       set outcome = 'failure', error = 'lease_expired', detail = 'the process making the attempt stopped before it finished', finished_at = ${now}
      from claimed c where c.attempts > 1 and a.delivery_id = c.id and a.outcome is null -- a first attempt has none before it
    returning a.delivery_id
  ), started as (
    insert into outbound_attempts (delivery_id, attempt, owner, started_at, trial)
    select c.id, c.attempts, ${owner}, ${now}, w.circuit_state = 'half-open'
      from claimed c join webhooks w on w.id = c.webhook_id
    returning delivery_id
  )
  select c.*, w.url, w.secret_ciphertext, w.kind, w.circuit_state = 'half-open' as trial
    from claimed c join webhooks w on w.id = c.webhook_id`;

/**
 * Hand back deliveries claimed ahead and never attempted (worker.ts): the attempt their claim counted
 * and recorded is taken back and the lease ends, so the next claim takes them at once. Only rows still
 * leased to `owner`.
 */
export const handBack = (ids: string[], owner: string) => sql`
  with back as (
    update outbound_deliveries
       set attempts = attempts - 1, lease_owner = null, lease_expires_at = null, updated_at = now()
     where id = any(${ids}::text[]) and lease_owner = ${owner} and status = 'pending'
    returning id, attempts + 1 as attempt
  )
  delete from outbound_attempts a using back where a.delivery_id = back.id and a.attempt = back.attempt and a.outcome is null`;
