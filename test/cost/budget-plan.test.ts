// budgetExceeded is asked for every claim of an inbound trigger, every scheduled run and every
// orchestrator.start. Its answer for each kind of budget, the same as budgetState's, and what it reads:
// never the month of requests (before, every call summed them: 73–96 ms at 150,000); a stop budget
// reads the project's running totals (sql/0022), one row per runner. On PGlite and PostgreSQL, with
// statistics.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { budgetExceeded, budgetState, budgetStateQuery, stoppedQuery } from '../../functions/cost/budget.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { migratedTestDb } from '../helpers/db.ts';
import { explainAnalyze, rowsTouched } from '../helpers/explain.ts';

const REQUESTS = 5000; // this month, $0.01 each: $50
let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  await db.query(sql`insert into projects (id, name, repo) values ('p', 'p', 'a/p')`);
  await db.query(sql`insert into runners (id, name, paired_at, last_seen_at) values ('rn', 'box', now(), now())`);
  // Spread over the part of the month that has passed (UTC).
  await db.query(sql`
    with m as (select date_trunc('month', now() at time zone 'UTC') at time zone 'UTC' as start)
    insert into llm_requests (runner_id, runtime, merge_key, model, at, project_id, cost_usd)
    select 'rn', 'claude', 'k' || g, 'claude-sonnet-4-5', m.start + (now() - m.start) * (g - 1) / ${REQUESTS}, 'p', 0.01
      from m, generate_series(1, ${REQUESTS}) g`);
  await db.query(sql`analyze`);
});
test.after(async () => cleanup?.());

const setBudget = (usd: number | null, action: 'warn' | 'stop') => db.query(sql`update projects set budget_usd = ${usd}, budget_action = ${action} where id = 'p'`);

async function check(expected: boolean, label: string) {
  assert.is(await budgetExceeded(db, 'p'), expected, label);
  assert.is((await budgetState(db, 'p'))!.stopped, expected, `${label}: the same as budgetState`);
}

test('no budget, or a budget that only warns: not stopped, and the month is not read', async () => {
  for (const [usd, action] of [[null, 'stop'], [null, 'warn'], [10, 'warn'], [0, 'warn']] as const) {
    await setBudget(usd, action);
    await check(false, `${usd} ${action}`);
    const touched = rowsTouched(await explainAnalyze(db, stoppedQuery('p')));
    assert.ok(touched < 10, `${usd} ${action}: rows read ${touched} (the month has ${REQUESTS} requests)`);
  }
});

test('a stop budget: stopped from 100 % on (a budget of 0 from the start), not below', async () => {
  await setBudget(100, 'stop');
  await check(false, '$50 of $100');
  await setBudget(50, 'stop');
  await check(true, '$50 of $50');
  await setBudget(49.99, 'stop');
  await check(true, '$50 of $49.99');
  await setBudget(0, 'stop');
  await check(true, 'a budget of 0');
  for (const q of [stoppedQuery('p'), budgetStateQuery('p')]) {
    const touched = rowsTouched(await explainAnalyze(db, q));
    assert.ok(touched < 10, `a stop budget: rows read ${touched} (the month has ${REQUESTS} requests)`);
  }
});

test('an unknown project is not stopped', async () => {
  assert.is(await budgetExceeded(db, 'nosuch'), false);
});

test.run();
