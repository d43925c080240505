#!/usr/bin/env node
// What a project budget costs on PostgreSQL (functions/cost/budget.ts, sql/0022_project_month_spend.sql;
// docs/performance.md "Budgets: a running total per month"), each figure beside a baseline from the
// same run:
//
//   read    budgetState() and budgetExceeded() of a project with --requests LLM requests this month
//           (from the running totals), against the statement they ran before 0022 (the month's requests
//           summed and the unpriced ones counted through the (project_id, at) index): ms per call.
//   ingest  recordUsage() (functions/cost/ingest.ts, what the hub runs for llm.request events) storing
//           batches of --batch new requests for a project without a budget, with the running total's
//           triggers enabled and disabled in turns: µs per request. What every ingested request pays
//           for the totals.
//
//   npm run bench:budget -- [options], that is:
//   node --import tsx bench/budget.mjs [--requests 150000] [--runners 4] [--calls 50] [--batches 20]
//                                      [--batch 100] [--rounds 3] [--database-url postgres://…]
//                                      [--trigger llm_requests_usage_totals_insert]   (GET /metrics's totals)
//
// It runs the TypeScript sources in-process through the Db port of functions/lib/db/postgres.ts. One
// fresh database svc_bench_<hex> is created on --database-url's server, migrated with sql/, analyzed
// after loading (as autovacuum would have), and dropped at the end (also on error or Ctrl-C).
// Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { budgetExceeded, budgetState } from '../functions/cost/budget.ts';
import { recordUsage } from '../functions/cost/ingest.ts';
import { loadMigrations, migrate } from '../functions/lib/db/migrate.ts';
import { sql } from '../functions/lib/db/port.ts';
import { openPostgres } from '../functions/lib/db/postgres.ts';
import { createDatabase, DEFAULT_DATABASE_URL, fmt, installGuards, machine, median, postgresVersion, redactUrl, ROOT, round, table, wholeOption } from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    requests: { type: 'string', default: '150000' },
    runners: { type: 'string', default: '4' },
    calls: { type: 'string', default: '50' },
    batches: { type: 'string', default: '20' },
    batch: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    'database-url': { type: 'string', default: DEFAULT_DATABASE_URL },
    // Which insert trigger the ingest figure switches off and on: the month's spend (0022), or GET /metrics's
    // all-time totals (0034, llm_requests_usage_totals_insert).
    trigger: { type: 'string', default: 'llm_requests_month_spend_insert' },
  },
  strict: true,
});
const REQUESTS = wholeOption('requests', opts.requests, 0);
const RUNNERS = wholeOption('runners', opts.runners, 1, 100);
const CALLS = wholeOption('calls', opts.calls);
const BATCHES = wholeOption('batches', opts.batches);
const BATCH = wholeOption('batch', opts.batch, 1, 10_000);
const ROUNDS = wholeOption('rounds', opts.rounds);
const ADMIN_URL = opts['database-url'];

const log = (m) => process.stderr.write(`[bench:budget] ${m}\n`);
const silent = { debug() {}, info() {}, warn: (m) => log(`migrate: ${m}`), error: (m) => log(`migrate: ${m}`), child: () => silent };

// The statement budgetState ran before 0022: the month's requests summed and counted.
const MONTH_START = sql`(date_trunc('month', now() at time zone 'UTC') at time zone 'UTC')`;
const MONTH_END = sql`((date_trunc('month', now() at time zone 'UTC') + interval '1 month') at time zone 'UTC')`;
const before = (projectId) => sql`
  select p.budget_usd, p.budget_action, to_char(now() at time zone 'UTC', 'YYYY-MM') as month,
         coalesce((select sum(r.cost_usd) from llm_requests r where r.project_id = p.id and r.at >= ${MONTH_START} and r.at < ${MONTH_END}), 0) as spent,
         (select count(*)::int from llm_requests r where r.project_id = p.id and r.at >= ${MONTH_START} and r.at < ${MONTH_END} and r.cost_usd is null) as unpriced
    from projects p where p.id = ${projectId}`;

async function timeCalls(fn) {
  const each = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    await fn();
    each.push(performance.now() - t0);
  }
  return median(each);
}

let n = 0;
function requestEvent(project) {
  const id = `bench-${++n}`;
  return {
    id: `llm.${id}`,
    source: 'sessions',
    kind: 'llm.request',
    ts: new Date().toISOString(),
    payload: {
      key: `claude:m:${id}`, runtime: 'claude', source: 'transcript', sessionId: 'bench-session', requestId: id, messageId: `msg_${id}`,
      model: 'claude-sonnet-4-5', at: new Date().toISOString(), inputTokens: 1200, outputTokens: 300, cacheWrite5mTokens: 4000, cacheWrite1hTokens: 0, cacheReadTokens: 20000, project,
    },
  };
}

async function main() {
  installGuards(900);
  const m = machine();
  const pg = await postgresVersion(ADMIN_URL);
  log(`machine: nproc=${m.nproc} ${m.cpu}, node ${m.node}, PostgreSQL ${pg} at ${redactUrl(ADMIN_URL)}; load average ${m.loadavg1}`);
  const target = await createDatabase(ADMIN_URL);
  const db = await openPostgres(target.url, 4);
  try {
    await migrate(db, loadMigrations(join(ROOT, 'sql')), silent);
    await db.query(sql`insert into projects (id, name, repo, runner_id, budget_usd, budget_action) values ('big', 'big', 'a/big', null, 1000000, 'stop')`);
    for (let r = 1; r <= RUNNERS; r++) await db.query(sql`insert into runners (id, name, paired_at, last_seen_at) values (${`r${r}`}, ${`r${r}`}, now(), now())`);
    await db.query(sql`insert into projects (id, name, repo, runner_id) values ('ingest', 'ingest', 'a/ingest', 'r1')`);
    log(`loading ${REQUESTS} requests this month for one project over ${RUNNERS} runners (1 in 10 unpriced)…`);
    const t0 = performance.now();
    await db.query(sql`
      with m as (select date_trunc('month', now() at time zone 'UTC') at time zone 'UTC' as start)
      insert into llm_requests (runner_id, runtime, merge_key, model, at, project_id, cost_usd)
      select 'r' || (1 + g % ${RUNNERS}), 'claude', 'k' || g, 'claude-sonnet-4-5', m.start + (now() - m.start) * (g - 1) / greatest(${REQUESTS}, 1), 'big',
             case when g % 10 = 0 then null else 0.0123 end
        from m, generate_series(1, ${REQUESTS}) g`);
    const loadSeconds = (performance.now() - t0) / 1000;
    await db.query(sql`analyze`);
    log(`loaded in ${fmt(loadSeconds, 1)} s (the triggers on), analyzed`);

    // The same figures both ways, before anything is timed.
    const [old] = await db.query(before('big'));
    const now = await budgetState(db, 'big');
    const same = Number(old.spent) === now.monthToDateUsd && old.unpriced === now.unpricedRequests;
    log(`sanity: before ${old.spent} USD, ${old.unpriced} unpriced; totals ${now.monthToDateUsd} USD, ${now.unpricedRequests} unpriced — ${same ? 'equal' : 'DIFFERENT'}`);
    if (!same) throw new Error('the running totals do not equal the sum over the requests');

    if (!/^llm_requests_\w+_insert$/.test(opts.trigger)) throw new Error('--trigger: an insert trigger of llm_requests');
    const toggle = (on) => db.exec(`alter table llm_requests ${on ? 'enable' : 'disable'} trigger ${opts.trigger}`);
    const rounds = [];
    for (let round_ = 1; round_ <= ROUNDS; round_++) {
      const row = { round: round_, loadavg1: round(os.loadavg()[0], 2) };
      row.readBeforeMs = await timeCalls(() => db.query(before('big')));
      row.budgetStateMs = await timeCalls(() => budgetState(db, 'big'));
      row.budgetExceededMs = await timeCalls(() => budgetExceeded(db, 'big'));
      // Ingest, alternating which goes first; triggers off means the totals are not kept (restored after).
      for (const on of round_ % 2 ? [true, false] : [false, true]) {
        await toggle(on);
        const t = performance.now();
        for (let b = 0; b < BATCHES; b++) await recordUsage(db, 'r1', Array.from({ length: BATCH }, () => requestEvent('ingest')));
        row[on ? 'ingestOnUs' : 'ingestOffUs'] = ((performance.now() - t) * 1000) / (BATCHES * BATCH);
      }
      await toggle(true);
      // Requests stored while the insert trigger was off are not in the totals: take them out of the test's way.
      await db.query(sql`delete from project_month_spend where project_id = 'ingest'`);
      await db.query(sql`delete from llm_requests where project_id = 'ingest'`);
      await db.query(sql`delete from llm_usage_totals where project_id = 'ingest'`);
      row.readRatio = round(row.readBeforeMs / row.budgetStateMs, 1);
      row.ingestRatio = round(row.ingestOnUs / row.ingestOffUs, 3);
      rounds.push(row);
      log(`round ${round_}: read before ${fmt(row.readBeforeMs, 3)} ms, budgetState ${fmt(row.budgetStateMs, 3)} ms, budgetExceeded ${fmt(row.budgetExceededMs, 3)} ms; ingest ${fmt(row.ingestOnUs, 0)} µs/request with the totals, ${fmt(row.ingestOffUs, 0)} without; load ${row.loadavg1}`);
    }
    const stat = (f) => {
      const v = rounds.map(f);
      return { median: median(v), min: Math.min(...v), max: Math.max(...v) };
    };
    const summary = {
      readBeforeMs: stat((r) => r.readBeforeMs), budgetStateMs: stat((r) => r.budgetStateMs), budgetExceededMs: stat((r) => r.budgetExceededMs),
      ingestOnUs: stat((r) => r.ingestOnUs), ingestOffUs: stat((r) => r.ingestOffUs), readRatio: stat((r) => r.readRatio), ingestRatio: stat((r) => r.ingestRatio),
    };
    const cell = (s, d) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;
    console.log(`budget: commit ${m.commit}; nproc=${m.nproc} ${m.cpu}; PostgreSQL ${pg}; ${REQUESTS} requests this month over ${RUNNERS} runners; ${ROUNDS} round(s), median (range)`);
    console.log(table([
      ['figure', 'value'],
      ['month read before 0022 (sum over the requests), ms per call (baseline)', cell(summary.readBeforeMs, 3)],
      ['budgetState (running totals), ms per call', cell(summary.budgetStateMs, 3)],
      ['budgetExceeded (stop budget), ms per call', cell(summary.budgetExceededMs, 3)],
      ['before ÷ budgetState', cell(summary.readRatio, 1)],
      [`recordUsage, µs per request (batches of ${BATCH}), totals kept`, cell(summary.ingestOnUs, 0)],
      ['recordUsage, µs per request, insert trigger disabled (baseline)', cell(summary.ingestOffUs, 0)],
      ['kept ÷ disabled', cell(summary.ingestRatio, 3)],
    ]));
    console.log(JSON.stringify({ bench: 'budget', command: ['node --import tsx bench/budget.mjs', ...process.argv.slice(2)].join(' '), machine: m, postgres: pg, requests: REQUESTS, runners: RUNNERS, loadSeconds: round(loadSeconds, 2), rounds, summary }));
  } finally {
    await db.close();
    await target.drop();
  }
}

await main();
