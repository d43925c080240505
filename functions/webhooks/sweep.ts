// The webhook worker's housekeeping (worker.ts runs it in its pass, at each timer wake-up).
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { publish } from '../live/publish.ts';
import { CIRCUIT_PAUSE_MS } from './circuit.ts';

/**
 * Housekeeping of leases and circuits: a delivery whose last allowed attempt died with its process
 * is failed; an open circuit whose pause passed (or a half-open one whose trial is gone) gets one
 * trial delivery, due now.
 */
export async function sweep(db: Db, log: Logger, now: Date): Promise<void> {
  await db.query(sql`
    with gone as (
      update outbound_deliveries
         set status = 'failed', last_error = 'lease_expired', lease_owner = null, lease_expires_at = null, next_attempt_at = null, updated_at = now()
       where status = 'pending' and lease_expires_at <= ${now} and attempts >= attempts_allowed
      returning id
    )
    update outbound_attempts a
       set outcome = 'failure', error = 'lease_expired', detail = 'the process making the attempt stopped before it finished', finished_at = ${now}
      from gone where a.delivery_id = gone.id and a.outcome is null`);
  const opened = await db.query<{ id: string; webhook_id: string }>(sql`
    with candidates as (
      select w.id,
             (select d.id from outbound_deliveries d
               where d.webhook_id = w.id and d.status = 'pending' and d.attempts < d.attempts_allowed
                 and (d.lease_expires_at is null or d.lease_expires_at <= ${now})
               order by d.next_attempt_at, d.created_at limit 1) as trial
        from webhooks w
       where (w.circuit_state = 'open' and w.circuit_opened_at <= ${new Date(now.getTime() - CIRCUIT_PAUSE_MS)})
          or (w.circuit_state = 'half-open'
              and not exists (select 1 from outbound_deliveries t where t.id = w.trial_delivery_id and t.status = 'pending'))
       for update of w skip locked
    ), opened as (
      update webhooks w set circuit_state = 'half-open', trial_delivery_id = c.trial, updated_at = now()
        from candidates c where w.id = c.id and c.trial is not null
      returning w.id, w.trial_delivery_id
    )
    update outbound_deliveries d set next_attempt_at = ${now}
      from opened where d.id = opened.trial_delivery_id
    returning d.id, d.webhook_id`);
  for (const o of opened) {
    log.info('webhook circuit half-open: trying the receiver again', { webhookId: o.webhook_id, deliveryId: o.id });
    await publish(db, { type: 'webhook', id: o.webhook_id, circuit: 'half-open' }, { admins: true });
  }
}
