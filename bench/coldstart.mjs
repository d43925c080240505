#!/usr/bin/env node
// Cold start: time from spawning `node dist/server.mjs` to its first 200 from GET /health, as a ratio
// to a bare Node start (`node -e "require('http').createServer(…).listen(…)"`) measured in the same run.
//
//   npm run build && node bench/coldstart.mjs [--runs 3] [--poll-ms 20] [--database-url postgres://…]
//
// Rows (each the median of --runs; the scenarios are interleaved run by run to spread drift):
//   bare node          node -e http server, until its first response
//   pglite new         a brand-new PGlite data dir (initdb + migrations + seed)
//   pglite second      the same data dir again (migrations already applied)
//   postgres new       a brand-new database on --database-url's server (CREATE DATABASE svc_bench_<hex>)
//   postgres second    the same database again; the database is dropped after the run
//   postgres DDL alone the floor under "postgres new": sql/'s migrations applied to another new database
//                      by this process (already connected), in one transaction as the server does it —
//                      from BEGIN to COMMIT, nothing of Node's start or the connection
// The PostgreSQL rows are skipped (and the output says so) when the server does not answer.
// The port is picked free beforehand and GET /health is polled every --poll-ms from the spawn on, so
// the figures have a resolution of about one poll interval. Every child is stopped at the end.
// Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import {
  alive,
  captureOutput,
  createDatabase,
  distHash,
  fmt,
  freePort,
  get,
  installGuards,
  killAll,
  machine,
  median,
  problemLines,
  redactUrl,
  removeTempDir,
  requireBuild,
  round,
  SERVER,
  serverEnv,
  spawnTracked,
  stopChild,
  table,
  tempDir,
  wholeOption,
} from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'poll-ms': { type: 'string', default: '20' },
    'timeout-seconds': { type: 'string', default: '120' },
    'database-url': { type: 'string', default: process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test' },
  },
  strict: true,
});
const RUNS = whole('runs');
const POLL_MS = whole('poll-ms');
const TIMEOUT_MS = whole('timeout-seconds') * 1000;
const ADMIN_URL = opts['database-url'];

function whole(name) {
  return wholeOption(name, opts[name]);
}

const log = (m) => process.stderr.write(`[bench:coldstart] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const BARE_CODE = "require('http').createServer((q,s)=>s.end('ok')).listen(+process.env.PORT,'127.0.0.1')";

/**
 * Spawn, then poll GET /health every POLL_MS until a 200 with the expected body; returns the elapsed
 * ms since just before spawn() and the running child (the caller stops it).
 */
async function timeToFirst200(args, env, expectBody) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/health`;
  const t0 = performance.now();
  const child = captureOutput(spawnTracked(process.execPath, args, { env: { ...env, PORT: String(port) } }));
  const deadline = t0 + TIMEOUT_MS;
  for (;;) {
    if (!alive(child)) throw new Error(`${args.join(' ')} exited (${child.exitCode ?? child.signalCode}) before answering:\n${child.log}`);
    try {
      const res = await get(url, 1_000);
      if (res.status === 200) {
        const ms = performance.now() - t0;
        if (!expectBody(res.body)) throw new Error(`unexpected answer on ${url} (another process on the port?): ${res.body}`);
        return { ms, child };
      }
    } catch (err) {
      if (err.message.startsWith('unexpected answer')) throw err;
      // not listening yet (ECONNREFUSED) — poll again
    }
    if (performance.now() > deadline) throw new Error(`no 200 from ${url} within ${TIMEOUT_MS} ms:\n${child.log}`);
    await sleep(POLL_MS);
  }
}

const svcAnswer = (body) => {
  try {
    return JSON.parse(body).status === 'ok';
  } catch {
    return false;
  }
};

/** One svc start to first 200, then a graceful stop; returns ms, exit code and WARN/ERROR lines. */
async function svcStart(env) {
  const { ms, child } = await timeToFirst200([SERVER], serverEnv(env), svcAnswer);
  const exit = await stopChild(child);
  return { ms, exit, problems: problemLines(child.log) };
}

async function postgresReachable() {
  const sql = postgres(ADMIN_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await sql`select 1`;
    return { ok: true };
  } catch (err) {
    return { ok: false, reason: err.message };
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** sql/'s migrations, in the order and form lib/db/migrate.ts applies them to a new database. */
function migrationText() {
  const dir = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', 'sql');
  const files = readdirSync(dir).filter((n) => /^\d{4}_[a-z0-9_-]+\.sql$/.test(n)).sort();
  const record = `insert into schema_migrations (name, checksum) values ${files.map((f) => `('${f}', 'bench')`).join(', ')}`;
  return [...files.map((f) => readFileSync(join(dir, f), 'utf8')), record].join('\n;\n');
}

/**
 * The migrations' DDL alone on a new database: ms from BEGIN to COMMIT, on a connection made before. The
 * database is dropped by `later` (see `main`).
 */
async function ddlAlone(later) {
  const db = await createDatabase(ADMIN_URL);
  later.push(() => db.drop());
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await sql`select 1`;
    const t0 = performance.now();
    await sql.begin(async (tx) => {
      await tx.unsafe('create table if not exists schema_migrations (name text primary key, checksum text not null, applied_at timestamptz not null default now())');
      await tx.unsafe(migrationText()).simple();
    });
    return { ms: performance.now() - t0 };
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

async function main() {
  requireBuild();
  const m = machine(); // at the start: the commit and build the figures belong to
  installGuards(60 + RUNS * (30 + 4 * (TIMEOUT_MS / 1000 + 20)));
  const pg = await postgresReachable();
  if (!pg.ok) log(`PostgreSQL at ${redactUrl(ADMIN_URL)} not reachable (${pg.reason}): the postgres rows are skipped`);

  const rows = ['bare node', 'pglite new', 'pglite second', ...(pg.ok ? ['postgres new', 'postgres second', 'postgres DDL alone'] : [])];
  const results = Object.fromEntries(rows.map((r) => [r, []]));
  const exits = [];
  const problems = [];
  const record = (row, r) => {
    results[row].push(r.ms);
    if (r.exit !== undefined && r.exit !== 0) exits.push({ row, exit: r.exit });
    for (const line of r.problems ?? []) problems.push(`[${row}] ${line}`);
    log(`${row.padEnd(15)} ${fmt(r.ms, 0)} ms${r.exit !== undefined ? `  (exit on SIGTERM: ${r.exit})` : ''}`);
  };

  // What a run creates (data dirs, databases) is removed after the last run, not between runs. On an ext4
  // without a journal (these VMs), the kernel skips inodes freed in the last ~30 s when it allocates one,
  // scanning past each of them: right after a run had removed its ~600 PGlite files and two databases, the
  // next run's DDL spent half its time in that scan (`perf`: recently_deleted, find_get_block_common), a
  // cost of this benchmark's own cleanup that no first start of a user's pays.
  const later = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      log(`run ${run}/${RUNS}`);
      const bare = await timeToFirst200(['-e', BARE_CODE], serverEnv({}), (b) => b === 'ok');
      await stopChild(bare.child, 2_000);
      record('bare node', { ms: bare.ms });

      const dir = tempDir('svc-bench-coldstart-');
      later.push(() => removeTempDir(dir));
      const dataDir = join(dir, 'pglite'); // does not exist yet: the server creates it and runs initdb
      record('pglite new', await svcStart({ PGLITE_DATA_DIR: dataDir }));
      record('pglite second', await svcStart({ PGLITE_DATA_DIR: dataDir }));

      if (pg.ok) {
        const db = await createDatabase(ADMIN_URL);
        later.push(() => db.drop());
        record('postgres new', await svcStart({ DATABASE_URL: db.url }));
        record('postgres second', await svcStart({ DATABASE_URL: db.url }));
        record('postgres DDL alone', await ddlAlone(later));
      }
    }
  } finally {
    killAll();
    for (const clean of later) await Promise.resolve().then(clean).catch((err) => log(`cleanup: ${err.message}`));
  }

  const bareMs = median(results['bare node']);
  const summary = rows.map((row) => {
    const ms = median(results[row]);
    return { row, medianMs: round(ms, 1), ratio: round(ms / bareMs, 2), runsMs: results[row].map((x) => round(x, 1)) };
  });
  // What a new database cannot go below: a bare Node start plus the migrations' DDL, each measured here.
  const floor = pg.ok ? { ms: round(bareMs + median(results['postgres DDL alone']), 1) } : null;
  if (floor) floor.postgresNewRatio = round(median(results['postgres new']) / floor.ms, 2);
  const distChanged = distHash() !== m.dist;
  const loadEnd = round(os.loadavg()[0], 2);
  console.log(`cold start to first 200 from GET /health, median of ${RUNS} run(s), poll every ${POLL_MS} ms`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}, dist/server.mjs ${m.dist}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  if (distChanged) console.log('WARNING: dist/server.mjs changed during the run (rebuilt by someone else); the figures mix two builds');
  if (!pg.ok) console.log(`PostgreSQL not reachable at ${redactUrl(ADMIN_URL)} (${pg.reason}): postgres rows skipped`);
  console.log(
    table([
      ['start', 'median ms', 'x bare node', 'runs (ms)'],
      ...summary.map((s) => [s.row, fmt(s.medianMs, 0), fmt(s.ratio, 2), s.runsMs.map((x) => Math.round(x)).join(' ')]),
    ]),
  );
  if (floor) console.log(`postgres new ÷ (bare node + DDL alone = ${fmt(floor.ms, 0)} ms): ${fmt(floor.postgresNewRatio, 2)}`);
  console.log(`svc log: ${problems.length} WARN/ERROR line(s); non-zero exits on SIGTERM: ${exits.length}`);
  for (const line of problems.slice(0, 20)) console.log(`  ${line}`);
  for (const e of exits) console.log(`  ${e.row}: exit ${e.exit}`);
  console.log(
    JSON.stringify({
      bench: 'coldstart',
      command: ['node', 'bench/coldstart.mjs', ...process.argv.slice(2)].join(' '),
      machine: m,
      distChangedDuringRun: distChanged,
      loadavg1End: loadEnd,
      settings: { runs: RUNS, pollMs: POLL_MS, baseline: `node -e "${BARE_CODE}"` },
      postgres: pg.ok ? { reachable: true, url: redactUrl(ADMIN_URL) } : { reachable: false, url: redactUrl(ADMIN_URL), reason: pg.reason },
      results: summary,
      newDatabaseFloor: floor,
      svcLog: { problems, nonZeroExits: exits },
    }),
  );
}

await main();
