// Webhook dispatch (spec: Delivery behaviour): the stored events of webhook_outbox (capture.ts) become
// deliveries, one pending row of outbound_deliveries per webhook that wants the event's type and project.
// The worker (worker.ts) runs it in its pass whenever the outbox may hold events (a NOTIFY `outbox`, the
// poll, a LISTEN made again); outbox rows are taken with SKIP LOCKED, so processes dispatching at once
// split the events, and each event makes its deliveries once (on conflict of webhook and event: nothing).
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { wake } from './webhooks.ts';

/** Outbox rows moved to deliveries per statement. */
export const DISPATCH_BATCH = 500;

/** Outbox → deliveries, batch after batch until the outbox is empty: how many deliveries were made. */
export async function dispatch(q: Queryable, now: Date): Promise<number> {
  for (let total = 0; ; ) {
    const r = await dispatchOnce(q, now, false);
    total += r.deliveries;
    if (!r.more) {
      if (total) await wake(q); // the other processes share the new deliveries at once
      return total;
    }
  }
}

/**
 * One batch of the outbox → deliveries (the worker's pass claims between batches, so the first POSTs
 * do not wait for a large outbox to be dispatched whole); `more` when the batch was full. With
 * `wakeOthers`, a batch that made deliveries tells the other processes at once.
 */
export async function dispatchOnce(q: Queryable, now: Date, wakeOthers = true): Promise<{ deliveries: number; more: boolean }> {
  const [r] = await q.query<{ events: number; deliveries: number }>(dispatchBatch(now));
  if (wakeOthers && r.deliveries) await wake(q);
  return { deliveries: r.deliveries, more: r.events >= DISPATCH_BATCH };
}

/**
 * One dispatch statement: up to DISPATCH_BATCH outbox events, oldest first, deleted and turned into
 * deliveries; answers how many events it took and how many deliveries it made. Exported for the test
 * that reads its plan (test/webhooks/dispatch.test.ts).
 */
export const dispatchBatch = (now: Date) => sql`
  with picked as (
    -- any(array(…)): the batch is selected once (an init plan). As an IN (…) subquery or a join, the
    -- planner may rescan it for each outbox row, and with statistics taken while the outbox was empty,
    -- as it nearly always is, it did: 2,000 queued events took 1.6 s of PostgreSQL per batch of 500.
    delete from webhook_outbox
     where id = any(array(select id from webhook_outbox order by created_at limit ${DISPATCH_BATCH} for update skip locked))
    returning id, type, project_id, body, created_at
  ), made as (
    insert into outbound_deliveries (id, webhook_id, event_id, event_type, body, status, next_attempt_at)
    select gen_random_uuid()::text, w.id, p.id, p.type, p.body, 'pending', ${now}
      from picked p
      join webhooks w on w.events @> jsonb_build_array(p.type)
                     and (w.projects = '[]'::jsonb or w.projects @> jsonb_build_array(p.project_id))
                     and w.created_at <= p.created_at
    on conflict (webhook_id, event_id) do nothing
    returning id
  )
  select (select count(*)::int from picked) as events, (select count(*)::int from made) as deliveries`;
