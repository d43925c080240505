// Dispatch (outbox → deliveries) under the statistics a real database has: autovacuum analyzes the
// outbox while it is empty, as it nearly always is, and then a burst of events arrives. The planner,
// believing the outbox holds a row or two, once rescanned the batch's locking subquery for every
// outbox row (a semi join with a nested loop): 2,000 queued events cost 1.6 s of PostgreSQL per batch
// of 500 (docs/performance.md, "Outbound webhooks"). On PGlite and PostgreSQL.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { buildEnvelope, eventId } from '../../functions/webhooks/envelope.ts';
import { enqueue } from '../../functions/webhooks/capture.ts';
import { DISPATCH_BATCH, dispatchBatch } from '../../functions/webhooks/dispatch.ts';
import { explainAnalyze, planNodes } from '../helpers/explain.ts';
import { addProject, addWebhook, migratedDb, worker } from './_harness.ts';

let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await migratedDb());
});
test.after(async () => {
  await cleanup?.();
});

test('a burst of 2,000 events after the outbox was analyzed empty: each batch locks each event once', async () => {
  const project = await addProject(db);
  await addWebhook(db, { url: 'http://127.0.0.1:9/never', events: ['pr.opened'] });
  const queue = async (prefix: string, n: number) => {
    const envelopes = Array.from({ length: n }, (_, i) =>
      buildEnvelope({ id: eventId('test', `${prefix}-${i}`), type: 'pr.opened', ts: new Date(), project: { id: project, repo: 'acme/widgets' }, raw: {} }),
    );
    for (let i = 0; i < envelopes.length; i += 250) await enqueue(db, envelopes.slice(i, i + 250));
  };
  // Earlier traffic, dispatched: the outbox has pages and no live row when autovacuum analyzes it.
  await queue('earlier', 200);
  assert.is(await worker(db).dispatch(), 200);
  await db.query(sql`analyze webhook_outbox`);
  await queue('burst', 2000);

  const plan = await explainAnalyze(db, dispatchBatch(new Date()));
  const locks = planNodes(plan).filter((n) => n['Node Type'] === 'LockRows');
  assert.ok(locks.length >= 1, 'the batch is selected with FOR UPDATE SKIP LOCKED');
  const locked = locks.reduce((sum, n) => sum + n['Actual Rows'] * n['Actual Loops'], 0);
  assert.is(locked, DISPATCH_BATCH, `rows produced by the locking scan, over all its loops (a rescan per outbox row makes thousands)`);
  assert.ok(locks.every((n) => n['Actual Loops'] === 1), 'the locking scan runs once');

  // Rolled back: all 2,000 still queued. The worker then moves every one, once.
  const [{ queued }] = await db.query<{ queued: number }>(sql`select count(*)::int as queued from webhook_outbox`);
  assert.is(queued, 2000);
  assert.is(await worker(db).dispatch(), 2000);
  const [counts] = await db.query<{ outbox: number; deliveries: number; events: number }>(sql`
    select (select count(*)::int from webhook_outbox) as outbox,
           (select count(*)::int from outbound_deliveries) as deliveries,
           (select count(distinct event_id)::int from outbound_deliveries) as events`);
  assert.equal(counts, { outbox: 0, deliveries: 2200, events: 2200 });
});

test.run();
