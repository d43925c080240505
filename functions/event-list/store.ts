// The one writer of the event list (GET /api/events; sql/0033_event_list.sql): every catalogue envelope,
// the exact text an outbound webhook sends, whether or not a webhook subscribes. webhooks/capture.ts
// calls it for every envelope it stores, Send test (webhooks/webhooks.ts) for its webhook.test.
//
// Order (issue #39: "never skips an event committed late by another replica"): the list pages on `seq`,
// assigned at commit order. The rows are inserted at the very end of the writer's transaction (the port's
// beforeCommit, lib/db/port.ts) under one transaction-level advisory lock, held until COMMIT: a transaction
// takes its seq only after every transaction that took a lower one has committed (PostgreSQL makes a
// commit visible before it releases the locks), so a reader that sees seq n sees every seq below n. The
// lock is the last one a transaction takes (the audit lock, the pull-request locks come before it), and
// under it the transaction only inserts here and commits: no deadlock, and writers wait on each other for
// one insert and one commit. On PGlite (one connection) transactions are serial anyway.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { Envelope } from '../webhooks/envelope.ts';

/** pg_advisory_xact_lock key of the event list's commit order (migrations 4_242_001, audit 4_242_002). */
export const EVENTS_LOCK = 4_242_003;

interface Pending {
  rows: { id: string; type: string; project_id: string | null; body: string }[];
}
const pending = new WeakMap<Queryable, Pending>();

/** Lock, then insert in the given order (a re-sent envelope, same id, is stored once). */
async function insert(q: Queryable, rows: Pending['rows']): Promise<void> {
  if (rows.length === 0) return;
  await q.query(sql`select pg_advisory_xact_lock(${EVENTS_LOCK})`);
  await q.query(sql`
    insert into catalogue_events (id, type, project_id, body)
    select x.id, x.type, x.project_id, x.body
      from rows from (jsonb_to_recordset(${sql.json(rows)}) as (id text, type text, project_id text, body text)) with ordinality as x(id, type, project_id, body, n)
     order by x.n
    on conflict (id) do nothing`);
}

/**
 * Add envelopes to the event list, with `body` the exact text sent (JSON.stringify of the envelope when
 * not given). In a transaction the rows are written just before its COMMIT; given the database itself,
 * in a transaction of their own.
 */
export async function storeEvents(q: Queryable, envelopes: { envelope: Envelope; body?: string }[]): Promise<void> {
  if (envelopes.length === 0) return;
  const rows = envelopes.map(({ envelope: e, body }) => ({ id: e.id, type: e.type, project_id: e.project?.id ?? null, body: body ?? JSON.stringify(e) }));
  if (q.beforeCommit) {
    let p = pending.get(q);
    if (!p) {
      const mine: Pending = { rows: [] };
      pending.set(q, mine);
      q.beforeCommit(() => insert(q, mine.rows));
      p = mine;
    }
    p.rows.push(...rows);
    return;
  }
  const db = q as Queryable & { transaction?: <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T> };
  if (db.transaction) await db.transaction((tx) => insert(tx, rows));
  else await insert(q, rows);
}
