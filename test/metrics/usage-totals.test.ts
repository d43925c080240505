// The running totals behind the LLM token and cost counters of GET /metrics (sql/0034_llm_usage_totals.sql):
// after inserts, merges (updates), a project's deletion (its requests' project set to null), a repricing
// and deletes — in single statements and in bulk — they equal the sums over llm_requests.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/index.ts';
import type { Db } from '../../functions/lib/db/index.ts';
import { migratedTestDb } from '../helpers/db.ts';

let db: Db;
let cleanup: () => Promise<void>;

test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  for (const r of ['r1', 'r2']) await db.query(sql`insert into runners (id, name) values (${r}, ${r})`);
  for (const p of ['pa', 'pb']) await db.query(sql`insert into projects (id, name, repo) values (${p}, ${p}, ${`acme/${p}`})`);
});
test.after(() => cleanup());

const SUMS = sql`
  select coalesce(project_id, '') as project_id, model, runner_id, count(*)::text as requests, sum(input_tokens)::text as input,
         sum(output_tokens)::text as output, sum(cache_read_tokens)::text as cache_read,
         sum(cache_write_5m_tokens + cache_write_1h_tokens)::text as cache_write, coalesce(sum(cost_usd), 0)::numeric::text as cost
    from llm_requests group by 1, 2, 3 order by 1, 2, 3`;
const TOTALS = sql`
  select project_id, model, runner_id, requests::text, input_tokens::text as input, output_tokens::text as output,
         cache_read_tokens::text as cache_read, cache_write_tokens::text as cache_write, cost_usd::numeric::text as cost
    from llm_usage_totals order by 1, 2, 3`;
const norm = (rows: Record<string, string>[]) => rows.map((r) => ({ ...r, cost: String(Number(r.cost)) }));
async function same(what: string) {
  assert.equal(norm(await db.query(TOTALS)), norm(await db.query(SUMS)), what);
}

let n = 0;
const insert = (count: number, project: string | null, model: string, runner: string, cost: number | null) =>
  db.query(sql`
    insert into llm_requests (runner_id, runtime, merge_key, project_id, model, at, input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens, cost_usd)
    select ${runner}, 'claude', ${`k${++n}-`} || g, ${project}, ${model}, now(), 100 + g, 10 * g, g, 2 * g, ${cost}::numeric
      from generate_series(1, ${count}) as g`);

test('inserts, one and in bulk, of several projects, models and runners (and no project)', async () => {
  await insert(1, 'pa', 'claude-sonnet-4-5', 'r1', 0.25);
  await insert(500, 'pa', 'claude-sonnet-4-5', 'r2', 0.001);
  await insert(40, 'pb', 'gpt-5', 'r1', null);
  await insert(3, null, 'mystery', 'r2', null);
  await same('after inserts');
});

test('merges (updates of tokens and cost), a repricing, a moved project: the old values off, the new ones on', async () => {
  await db.query(sql`update llm_requests set output_tokens = output_tokens + 5, cost_usd = coalesce(cost_usd, 0) + 0.5 where merge_key like ${'k2-%'} and input_tokens < 150`);
  await db.query(sql`update llm_requests set cost_usd = 0.01 where model = 'gpt-5'`);
  await db.query(sql`update llm_requests set project_id = 'pb' where model = 'mystery'`);
  await same('after updates');
});

test("a project's deletion (its requests' project set to null), then deletes, down to nothing", async () => {
  await db.query(sql`delete from projects where id = 'pa'`);
  await same('after the project went');
  await db.query(sql`delete from llm_requests where input_tokens > 300`);
  await same('after a bulk delete');
  await db.query(sql`delete from llm_requests`);
  await same('after deleting every request');
  assert.equal(await db.query(sql`select * from llm_usage_totals`), [], 'no row left at 0');
});

test.run();
