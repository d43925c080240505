// The running monthly totals behind budgets (sql/0022_project_month_spend.sql): after any sequence of the
// writes svc makes to llm_requests — inserts priced and unpriced, merges, pricing a model later, a session
// learning its project, a request moved to another month, a project deleted (its requests' project set
// to null), requests deleted — project_month_spend equals the sum over llm_requests, row for row, and a
// row whose requests are all gone is gone too. Then the migration's backfill: requests stored before the
// table existed are counted once. On PGlite and PostgreSQL.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { budgetState } from '../../functions/cost/budget.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { migratedTestDb } from '../helpers/db.ts';

let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  for (const p of ['p1', 'p2', 'p3']) await db.query(sql`insert into projects (id, name, repo) values (${p}, ${p}, ${`a/${p}`})`);
  for (const r of ['r1', 'r2']) await db.query(sql`insert into runners (id, name, paired_at, last_seen_at) values (${r}, ${r}, now(), now())`);
});
test.after(async () => cleanup?.());

type Row = { project_id: string; month: string; runner_id: string; cost_usd: string; unpriced: number; requests: number };

/** The totals as the trigger kept them, and as a sum over the requests gives them. */
async function both(): Promise<{ kept: Row[]; summed: Row[] }> {
  const kept = await db.query<Row>(sql`
    select project_id, to_char(month, 'YYYY-MM-DD') as month, runner_id, (cost_usd::numeric(30, 10))::text as cost_usd, unpriced, requests
      from project_month_spend order by 1, 2, 3`);
  const summed = await db.query<Row>(sql`
    select project_id, to_char(date_trunc('month', at at time zone 'UTC'), 'YYYY-MM-DD') as month, runner_id,
           (coalesce(sum(cost_usd), 0)::numeric(30, 10))::text as cost_usd, (count(*) filter (where cost_usd is null))::int as unpriced, count(*)::int as requests
      from llm_requests where project_id is not null group by 1, 2, 3 order by 1, 2, 3`);
  return { kept, summed };
}

async function assertConsistent(label: string) {
  const { kept, summed } = await both();
  assert.equal(kept, summed, label);
}

// A small deterministic generator, so a failure names a step that can be replayed.
function prng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);
}

test('every kind of write keeps the totals equal to the sum over the requests', async () => {
  const rand = prng(7);
  const pick = <T>(a: readonly T[]) => a[Math.floor(rand() * a.length)]!;
  const months = ['2026-09-15T10:00:00Z', '2026-10-31T23:59:59.999Z', '2026-11-01T00:00:00Z', '2026-11-20T08:00:00Z'];
  let k = 0;
  for (let step = 1; step <= 160; step++) {
    const op = pick(['insert', 'insert', 'insert', 'merge', 'price', 'assign', 'move', 'delete'] as const);
    const label = `step ${step}: ${op}`;
    if (op === 'insert') {
      const priced = rand() < 0.7;
      await db.query(sql`
        insert into llm_requests (runner_id, runtime, merge_key, model, at, project_id, cost_usd)
        values (${pick(['r1', 'r2'])}, 'claude', ${`k${++k}`}, 'm', ${pick(months)}, ${pick(['p1', 'p2', 'p3', null])}, ${priced ? Math.round(rand() * 1e8) / 1e6 : null})`);
    } else if (op === 'merge') {
      // What the ingest's merge does most: the same row again with a duration, and the counts' cost.
      await db.query(sql`
        update llm_requests set duration_ms = ${Math.round(rand() * 1000)}, cost_usd = case when cost_usd is null then null else cost_usd + 0.5 end, updated_at = now()
         where id = (select id from llm_requests order by id desc offset ${Math.floor(rand() * 5)} limit 1)`);
    } else if (op === 'price') {
      // routes.ts priceUnpriced: a model got a price, every unpriced request of it is priced.
      await db.query(sql`update llm_requests set cost_usd = 0.25, updated_at = now() where cost_usd is null and id % 3 = ${Math.floor(rand() * 3)}`);
    } else if (op === 'assign') {
      // ingest.ts upsertSession: a session learnt its project.
      await db.query(sql`update llm_requests set project_id = ${pick(['p1', 'p2', 'p3'])} where project_id is null and id % 2 = ${Math.floor(rand() * 2)}`);
    } else if (op === 'move') {
      await db.query(sql`update llm_requests set at = ${pick(months)}, runner_id = ${pick(['r1', 'r2'])} where id = (select id from llm_requests order by random() limit 1)`);
    } else {
      await db.query(sql`delete from llm_requests where id = (select id from llm_requests order by random() limit 1)`);
    }
    await assertConsistent(label);
  }
  const { kept } = await both();
  assert.ok(kept.length >= 6, `rows over projects, months and runners: ${kept.length}`);
  assert.ok(kept.every((r) => r.requests > 0), 'no row of zero requests is left behind');
});

test('a project deleted: its requests lose their project and its totals go', async () => {
  await db.query(sql`insert into llm_requests (runner_id, runtime, merge_key, model, at, project_id, cost_usd) values ('r1', 'claude', 'gone-1', 'm', now(), 'p3', 1.5)`);
  assert.ok((await db.query(sql`select 1 from project_month_spend where project_id = 'p3'`)).length > 0);
  await db.query(sql`delete from projects where id = 'p3'`);
  assert.equal(await db.query(sql`select * from project_month_spend where project_id = 'p3'`), []);
  await assertConsistent('after the project was deleted');
});

test('budgetState reads this month from the totals: the same figures as the requests give', async () => {
  await db.query(sql`delete from llm_requests`);
  assert.equal(await db.query(sql`select * from project_month_spend`), [], 'nothing left once every request is deleted');
  await db.query(sql`update projects set budget_usd = 10, budget_action = 'stop' where id = 'p1'`);
  const month = sql`date_trunc('month', now() at time zone 'UTC') at time zone 'UTC'`;
  await db.query(sql`
    insert into llm_requests (runner_id, runtime, merge_key, model, at, project_id, cost_usd) values
      ('r1', 'claude', 'b1', 'm', ${month}, 'p1', 4.25),
      ('r2', 'claude', 'b2', 'm', ${month} + interval '1 second', 'p1', 3.5),
      ('r2', 'claude', 'b3', 'm', ${month} + interval '2 seconds', 'p1', null),
      ('r1', 'claude', 'b4', 'm', ${month} - interval '1 millisecond', 'p1', 100),
      ('r1', 'claude', 'b5', 'm', ${month}, 'p2', 100)`);
  const s = (await budgetState(db, 'p1'))!;
  assert.is(s.monthToDateUsd, 7.75);
  assert.is(s.unpricedRequests, 1);
  assert.is(s.exceeded, false);
  await db.query(sql`update llm_requests set cost_usd = 2.25 where merge_key = 'b3'`);
  const t = (await budgetState(db, 'p1'))!;
  assert.is(t.monthToDateUsd, 10);
  assert.is(t.unpricedRequests, 0);
  assert.is(t.stopped, true);
});

test('the migration counts the requests stored before it', async () => {
  // What 0022 does on an upgraded database: its backfill statement over what is there. Emptied first,
  // then the same statement as the migration's (read from the file, so the two cannot drift).
  const { readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const file = readFileSync(join(import.meta.dirname, '..', '..', 'sql', '0022_project_month_spend.sql'), 'utf8');
  const backfill = file.slice(file.lastIndexOf('insert into project_month_spend'));
  const before = (await both()).kept;
  assert.ok(before.length > 0);
  await db.query(sql`delete from project_month_spend`);
  await db.exec(backfill);
  assert.equal((await both()).kept, before);
});

test.run();
