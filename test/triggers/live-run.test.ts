// Whether a trigger's previous run is still live (previous_still_running), on a trigger with a long
// history: the answer in each case, and a plan that reads only the rows that can make it true — not
// every fired delivery of the trigger with its run (18–35 ms per claim at 20,000 fired deliveries
// before sql/0020). On PGlite and PostgreSQL, with statistics as autovacuum keeps them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { liveRunQuery } from '../../functions/triggers/fire.ts';
import { migratedTestDb } from '../helpers/db.ts';
import { explainAnalyze, rowsTouched } from '../helpers/explain.ts';

const HISTORY = 5000;
let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  await db.query(sql`insert into users (id, email, name) values ('u', 'u@example.test', 'u')`);
  await db.query(sql`insert into projects (id, name, repo) values ('p', 'p', 'a/p')`);
  await db.query(sql`insert into runners (id, name, paired_at, last_seen_at) values ('rn', 'box', now(), now())`);
  for (const t of ['t', 'other'])
    await db.query(sql`
      insert into triggers (id, project_id, name, action, value_pattern, public_id, public_id_hash, secret_ciphertext, created_by)
      values (${t}, 'p', ${t}, 'next_round', '.*', ${t.padEnd(24, 'x')}, ${t}, 'c', 'u')`);
  // Ten days of history: a fired delivery every three minutes, each run finished long ago.
  await db.query(sql`
    insert into skill_runs (id, runner_id, project_id, skill, args, output, profile_id, runtime, state, created_at)
    select 'run-' || g, 'rn', 'p', 'review', '[]', 'report', 'cc', 'claude', 'succeeded', now() - make_interval(mins => 3 * g)
      from generate_series(1, ${HISTORY}) g`);
  await db.query(sql`
    insert into inbound_deliveries (id, trigger_id, delivery_id, status, run_id, fired_at, created_at)
    select 'old-' || g, 't', 'old-' || g, 'fired', 'run-' || g, now() - make_interval(mins => 3 * g), now() - make_interval(mins => 3 * g)
      from generate_series(1, ${HISTORY}) g`);
  await db.query(sql`insert into inbound_deliveries (id, trigger_id, delivery_id, status) values ('new', 't', 'new', 'accepted')`);
  await db.query(sql`analyze`);
});
test.after(async () => cleanup?.());

const live = async (trigger = 't') => (await db.query<{ live: boolean }>(liveRunQuery(trigger, 'new', Date.now())))[0].live;

test('finished history only: not live, and the plan reads a handful of rows, not the history', async () => {
  assert.is(await live(), false);
  const touched = rowsTouched(await explainAnalyze(db, liveRunQuery('t', 'new', Date.now())));
  assert.ok(touched < 50, `rows read: ${touched} (the trigger has ${HISTORY} fired deliveries)`);
});

test('a run of an old delivery that is running again counts; another trigger’s live run does not', async () => {
  await db.query(sql`update skill_runs set state = 'running' where id = 'run-4000'`);
  try {
    assert.is(await live(), true);
    assert.is(await live('other'), false);
    const touched = rowsTouched(await explainAnalyze(db, liveRunQuery('t', 'new', Date.now())));
    assert.ok(touched < 50, `rows read: ${touched}`);
  } finally {
    await db.query(sql`update skill_runs set state = 'succeeded' where id = 'run-4000'`);
  }
  assert.is(await live(), false);
});

test('a delivery being fired counts', async () => {
  await db.query(sql`insert into inbound_deliveries (id, trigger_id, delivery_id, status) values ('firing', 't', 'firing', 'firing')`);
  assert.is(await live(), true);
  await db.query(sql`delete from inbound_deliveries where id = 'firing'`);
  assert.is(await live(), false);
});

test('a fired run without a record counts for ten minutes', async () => {
  await db.query(sql`
    insert into inbound_deliveries (id, trigger_id, delivery_id, status, run_id, fired_at)
    values ('unreported', 't', 'unreported', 'fired', 'run-unreported', now() - interval '9 minutes')`);
  assert.is(await live(), true);
  await db.query(sql`update inbound_deliveries set fired_at = now() - interval '11 minutes' where id = 'unreported'`);
  assert.is(await live(), false);
  await db.query(sql`delete from inbound_deliveries where id = 'unreported'`);
});

test.run();
