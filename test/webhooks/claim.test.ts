// The claim beside an unreachable receiver's backlog: its circuit is open, its deliveries stay pending
// and due (and are the oldest), and every claim for the other webhooks used to walk past all of them
// (17 ms at 10,000; sql/0021). Which deliveries a claim takes, in what order, and what it reads
// (neither that backlog nor the history of the webhooks it claims for).
// On PGlite and PostgreSQL, with statistics.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { claimBatch } from '../../functions/webhooks/claim.ts';
import { explainAnalyze, rowsTouched } from '../helpers/explain.ts';
import { addWebhook, migratedDb } from './_harness.ts';

const BACKLOG = 3000;
let db: Db;
let cleanup: () => Promise<void>;
let dead = '';
let ok = '';
let trial = '';
test.before(async () => {
  ({ db, cleanup } = await migratedDb());
  dead = (await addWebhook(db, { url: 'http://127.0.0.1:9/dead', events: ['pr.opened'] })).id;
  ok = (await addWebhook(db, { url: 'http://127.0.0.1:9/ok', events: ['pr.opened'] })).id;
  trial = (await addWebhook(db, { url: 'http://127.0.0.1:9/trial', events: ['pr.opened'] })).id;
  const add = (webhook: string, prefix: string, n: number, minutesAgo: number) =>
    db.query(sql`
      insert into outbound_deliveries (id, webhook_id, event_type, event_id, body, status, next_attempt_at)
      select ${prefix} || '-' || g, ${webhook}, 'pr.opened', ${prefix} || '-' || g, '{}', 'pending',
             now() - make_interval(mins => ${minutesAgo}) + make_interval(secs => g)
        from generate_series(1, ${n}) g`);
  await add(dead, 'dead', BACKLOG, 600); // ten hours of events for a receiver that is gone
  await add(ok, 'ok', 20, 5);
  await add(trial, 'trial', 5, 30);
  // And a month of deliveries the healthy webhook made: its history is not read either.
  await db.query(sql`
    insert into outbound_deliveries (id, webhook_id, event_type, event_id, body, status, attempts, delivered_at, created_at)
    select 'old-' || g, ${ok}, 'pr.opened', 'old-' || g, '{}', 'delivered', 1, now() - make_interval(mins => 10 * g), now() - make_interval(mins => 10 * g)
      from generate_series(1, ${BACKLOG}) g`);
  await db.query(sql`update webhooks set circuit_state = 'open', circuit_opened_at = now(), consecutive_failures = 20 where id = ${dead}`);
  await db.query(sql`update webhooks set circuit_state = 'half-open', circuit_opened_at = now(), trial_delivery_id = 'trial-3' where id = ${trial}`);
  await db.query(sql`analyze`);
});
test.after(async () => cleanup?.());

const claim = (n: number) => claimBatch(new Date(), n, 'test-owner', new Date(Date.now() + 60_000));

test('an open circuit’s backlog is neither claimed nor read; a half-open one gives its trial only; oldest first', async () => {
  const touched = rowsTouched(await explainAnalyze(db, claim(8)));
  assert.ok(touched < 100, `rows read: ${touched} (the open circuit holds ${BACKLOG} due deliveries, the healthy webhook's history ${BACKLOG})`);

  const first = await db.query<{ id: string; attempts: number; trial: boolean }>(claim(8));
  assert.equal(
    first.map((c) => c.id),
    ['trial-3', 'ok-1', 'ok-2', 'ok-3', 'ok-4', 'ok-5', 'ok-6', 'ok-7'],
    'by next attempt: the trial (due 30 minutes ago) before the closed webhook’s',
  );
  assert.ok(first.every((c) => c.attempts === 1));
  assert.equal(first.map((c) => c.trial), [true, false, false, false, false, false, false, false]);

  const rest = await db.query<{ id: string }>(claim(50));
  assert.equal(rest.map((c) => c.id), Array.from({ length: 13 }, (_, i) => `ok-${i + 8}`), 'the leased ones are not taken again');
  assert.equal(await db.query(claim(50)), [], 'nothing else is claimable');

  const [{ started }] = await db.query<{ started: number }>(sql`select count(*)::int as started from outbound_attempts where owner = 'test-owner' and outcome is null`);
  assert.is(started, 21, 'one attempt row per claimed delivery');
  const [{ deadTouched }] = await db.query<{ deadTouched: number }>(sql`
    select count(*)::int as "deadTouched" from outbound_deliveries where webhook_id = ${dead} and (attempts > 0 or lease_owner is not null)`);
  assert.is(deadTouched, 0);
});

test('a healthy webhook’s long queue, with statistics: the claim walks its index from the head and stops at the batch', async () => {
  // The due deliveries of one closed webhook, the oldest 40 leased (in flight elsewhere), analyzed as a
  // database in use is. The circuit test inside the per-webhook read (closed, or the half-open trial)
  // made PostgreSQL expect a handful of rows there and read every delivery instead (6,111 rows here, for 16).
  const busy = (await addWebhook(db, { url: 'http://127.0.0.1:9/busy', events: ['pr.opened'] })).id;
  await db.query(sql`
    insert into outbound_deliveries (id, webhook_id, event_type, event_id, body, status, next_attempt_at, attempts, lease_owner, lease_expires_at)
    select 'busy-' || g, ${busy}, 'pr.opened', 'busy-' || g, '{}', 'pending', now() - interval '1 hour' + make_interval(secs => g),
           case when g <= 40 then 1 else 0 end, case when g <= 40 then 'elsewhere' end, case when g <= 40 then now() + interval '1 minute' end
      from generate_series(1, ${BACKLOG}) g`);
  await db.query(sql`analyze`);
  const touched = rowsTouched(await explainAnalyze(db, claim(16)));
  assert.ok(touched < 200, `rows read: ${touched} to claim 16 of ${BACKLOG} due`);
  const got = await db.query<{ id: string }>(claim(16));
  const ids = got.map((c) => c.id).sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
  assert.equal(ids, Array.from({ length: 16 }, (_, i) => `busy-${i + 41}`), 'the oldest not leased');
});

test.run();
