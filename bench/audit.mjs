#!/usr/bin/env node
// The hash-chained audit log on PostgreSQL: append throughput with 1 and 8 concurrent writers, and the
// time verifyChain() takes over a long chain, each as a ratio to a plain-SQL baseline from the same run.
//
//   npm run bench:audit -- [options]   (runs the TypeScript sources; no build needed), that is:
//   node --import tsx bench/audit.mjs [--records 2000] [--writers 1,8] [--rounds 2] [--verify-records 1000000]
//                                     [--verify-rounds 2] [--pool 8] [--database-url postgres://…]
//
// It runs the TypeScript sources in-process (functions/audit/audit.ts through the Db port of
// functions/lib/db/postgres.ts), not dist/server.mjs. Two fresh databases svc_bench_<hex> are created
// on --database-url's server, migrated with sql/, and dropped at the end (also on error or Ctrl-C).
//
// (a) Append throughput, database A, a pool of max(--pool, writers) connections. Per case, W writers
//     take records from a shared counter until --records are written:
//       plain   db.transaction(tx => INSERT one audit-like row into bench_plain)  (no lock, no hash)
//               bench_plain is `like audit_records including all` (same columns and indexes, no
//               triggers) with seq from a sequence and a constant hash
//       audit   db.transaction(tx => appendAudit(tx, entry))  (advisory lock, read last, hash, INSERT)
//     Order per round: plain×1, audit×1, plain×8, audit×8 …; the figures are medians over the rounds.
//     After a warm-up the pool holds all its connections. At the end verifyChain() must report ok and
//     every appended record (concurrent appends must form one gapless chain).
// (b) Verification, database B: --verify-records records are computed in JS (recordHash of the previous
//     hash and the canonical JSON, exactly as appendAudit does) and loaded with COPY … FROM STDIN in
//     the real audit_records table (its indexes and triggers in place), then VACUUM ANALYZE. Timed in
//     turns per round:
//       scan    select count(*), max(hash) from audit_records  (one full scan, the baseline)
//       read    the same batched queries verifyChain() runs, without hashing (where the time goes)
//       verify  verifyChain(db)  (must answer ok: true and recordsChecked = --verify-records)
//     During read and verify, the event-loop delay of this process is sampled (perf_hooks, 10 ms
//     resolution): in the server, where the nightly audit.verify job runs verifyChain, every other
//     request on that replica waits as long as the longest block.
// Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { GENESIS, appendAudit, recordHash } from '../functions/audit/audit.ts';
import { verifyChain } from '../functions/audit/verify.ts';
import { loadMigrations, migrate } from '../functions/lib/db/migrate.ts';
import { sql } from '../functions/lib/db/port.ts';
import { openPostgres } from '../functions/lib/db/postgres.ts';
import {
  createDatabase,
  DEFAULT_DATABASE_URL,
  fmt,
  installGuards,
  machine,
  median,
  percentile,
  postgresVersion,
  redactUrl,
  ROOT,
  round,
  table,
  wholeOption,
} from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    records: { type: 'string', default: '2000' },
    writers: { type: 'string', default: '1,8' },
    rounds: { type: 'string', default: '2' },
    'verify-records': { type: 'string', default: '1000000' },
    'verify-rounds': { type: 'string', default: '2' },
    pool: { type: 'string', default: '8' },
    'database-url': { type: 'string', default: DEFAULT_DATABASE_URL },
  },
  strict: true,
});

function whole(name, text = opts[name], min = 1) {
  return wholeOption(name, text, min);
}
const RECORDS = whole('records');
const WRITERS = opts.writers.split(',').map((w) => whole('writers', w));
const ROUNDS = whole('rounds');
const VERIFY_RECORDS = whole('verify-records', opts['verify-records'], 0);
const VERIFY_ROUNDS = whole('verify-rounds');
const POOL = Math.max(whole('pool'), ...WRITERS);
const ADMIN_URL = opts['database-url'];
const WARMUP_RECORDS = 100;
const COPY_CHUNK = 5_000; // lines per write to the COPY stream
const VERIFY_BATCH = 5_000; // verifyChain's default batch

const log = (m) => process.stderr.write(`[bench:audit] ${m}\n`);
const silent = { debug() {}, info() {}, warn: (m) => log(`migrate: ${m}`), error: (m) => log(`migrate: ${m}`), child: () => silent };
const ms = (t0) => performance.now() - t0;

/** A new database, remembered in `dbs` (dropped by main's finally) before anything else can fail. */
async function freshMigratedDb(label, dbs) {
  const target = await createDatabase(ADMIN_URL);
  dbs.push(target);
  log(`database ${label}: ${target.name}`);
  target.db = await openPostgres(target.url, POOL);
  await migrate(target.db, loadMigrations(join(ROOT, 'sql')), silent);
  return target;
}

/** Make the pool open all its connections (postgres.js opens them lazily). */
async function fillPool(db, n) {
  await Promise.all(Array.from({ length: n }, () => db.transaction((tx) => tx.query(sql`select pg_sleep(0.05)`))));
}

// ---- (a) append throughput ---------------------------------------------------------------------------

const FAKE_HASH = 'f'.repeat(64);

function entryFor(w, i) {
  return {
    actor: { label: `bench-writer-${w}` },
    action: 'project.update',
    target: { type: 'project', id: `bench-${w}-${i}` },
    diff: { before: { name: `project ${i}`, budgetUsd: 100 }, after: { name: `project ${i + 1}`, budgetUsd: 125.5 } },
    requestId: `req-${w}-${i}`,
  };
}

const CASES = {
  plain: (db) => (w, i) => {
    const e = entryFor(w, i);
    return db.transaction((tx) =>
      tx.query(sql`
        insert into bench_plain (at, actor_id, actor_label, action, target_type, target_id, diff, request_id, prev_hash, hash)
        values (${new Date().toISOString()}, ${null}, ${e.actor.label}, ${e.action}, ${e.target.type}, ${e.target.id},
                ${sql.json(e.diff)}, ${e.requestId}, ${FAKE_HASH}, ${FAKE_HASH})`),
    );
  },
  audit: (db) => (w, i) => db.transaction((tx) => appendAudit(tx, entryFor(w, i))),
};

/** W writers share a counter until `total` operations are done; returns records/s and latencies. */
async function runWriters(writers, total, op) {
  let next = 0;
  const latencies = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        const s = performance.now();
        await op(w, i);
        latencies.push(ms(s));
      }
    }),
  );
  const seconds = ms(t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { records: total, seconds, perSecond: total / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

async function appendBench(db) {
  await db.exec(`
    create table bench_plain (like audit_records including defaults including constraints including indexes);
    create sequence bench_plain_seq owned by bench_plain.seq;
    alter table bench_plain alter column seq set default nextval('bench_plain_seq');`);
  await fillPool(db, POOL);
  let appended = 0;
  let plainInserted = 0;
  for (const name of Object.keys(CASES)) {
    await runWriters(Math.max(...WRITERS), WARMUP_RECORDS, CASES[name](db)); // warm-up, not counted
    if (name === 'audit') appended += WARMUP_RECORDS;
    else plainInserted += WARMUP_RECORDS;
  }
  const runs = Object.fromEntries(WRITERS.flatMap((w) => Object.keys(CASES).map((c) => [`${c}x${w}`, []])));
  for (let r = 1; r <= ROUNDS; r++) {
    for (const w of WRITERS) {
      for (const name of Object.keys(CASES)) {
        const res = await runWriters(w, RECORDS, CASES[name](db));
        if (name === 'audit') appended += RECORDS;
        else plainInserted += RECORDS;
        runs[`${name}x${w}`].push(res);
        log(`round ${r} ${name.padEnd(5)} writers=${w}  ${fmt(res.perSecond, 0)} records/s  p50 ${fmt(res.p50Ms, 2)} ms  p99 ${fmt(res.p99Ms, 2)} ms`);
      }
    }
  }
  const [{ n: plainRows }] = await db.query(sql`select count(*)::int as n from bench_plain`);
  const t0 = performance.now();
  const verification = await verifyChain(db);
  const verifySeconds = ms(t0) / 1000;
  log(`chain after the appends: ${JSON.stringify(verification)} (${fmt(verifySeconds, 2)} s)`);

  const summary = {};
  for (const [key, rs] of Object.entries(runs)) {
    summary[key] = {
      perSecond: round(median(rs.map((x) => x.perSecond)), 1),
      p50Ms: round(median(rs.map((x) => x.p50Ms)), 3),
      p99Ms: round(median(rs.map((x) => x.p99Ms)), 3),
      runs: rs.map((x) => ({ records: x.records, seconds: round(x.seconds, 3), perSecond: round(x.perSecond, 1), p50Ms: round(x.p50Ms, 3), p99Ms: round(x.p99Ms, 3) })),
    };
  }
  const ratios = Object.fromEntries(WRITERS.map((w) => [`writers${w}`, round(summary[`auditx${w}`].perSecond / summary[`plainx${w}`].perSecond, 3)]));
  const chainCheck = {
    expected: appended,
    verification,
    ok: verification.ok && verification.recordsChecked === appended,
    plainRowsExpected: plainInserted,
    plainRows,
  };
  return { summary, ratios, chainCheck, verifySeconds };
}

// ---- (b) verification of a long chain ----------------------------------------------------------------

const ACTIONS = ['project.update', 'user.create', 'token.create', 'settings.update', 'runner.pair', 'user.update'];
const ACTORS = Array.from({ length: 7 }, (_, k) => ({ id: `00000000-0000-4000-8000-00000000000${k}`, label: `user${k}@example.test` }));
const EPOCH = Date.parse('2026-01-01T00:00:00.000Z');

/** Record `seq`'s content (without the hashes), varied like real audit records. */
function syntheticRecord(seq) {
  const actor = seq % 11 === 0 ? { id: null, label: 'system' } : ACTORS[seq % ACTORS.length];
  const action = ACTIONS[seq % ACTIONS.length];
  const diff =
    seq % 5 === 0
      ? null
      : { before: { name: `project ${seq % 97}`, budgetUsd: (seq % 1000) / 4 }, after: { name: `project ${(seq + 1) % 97}`, budgetUsd: ((seq + 3) % 1000) / 4, active: seq % 2 === 0 } };
  return {
    seq,
    at: new Date(EPOCH + seq * 1_003).toISOString(),
    actorId: actor.id,
    actorLabel: actor.label,
    action,
    targetType: action.split('.')[0],
    targetId: `${action.split('.')[0]}-${(seq * 7919) % 100_003}`,
    diff,
    requestId: seq % 3 === 0 ? null : `req-${seq.toString(16).padStart(8, '0')}`,
  };
}

const copyField = (v) => (v === null ? '\\N' : String(v).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r'));

/** COPY lines for records 1…n, chunk by chunk, hashing each record onto the previous hash. */
function* copyChunks(n) {
  let prevHash = GENESIS;
  for (let start = 1; start <= n; start += COPY_CHUNK) {
    let chunk = '';
    for (let seq = start; seq < Math.min(n + 1, start + COPY_CHUNK); seq++) {
      const r = syntheticRecord(seq);
      const hash = recordHash(prevHash, r);
      chunk +=
        [r.seq, r.at, r.actorId, r.actorLabel, r.action, r.targetType, r.targetId, r.diff === null ? null : JSON.stringify(r.diff), r.requestId, prevHash, hash]
          .map(copyField)
          .join('\t') + '\n';
      prevHash = hash;
    }
    yield chunk;
  }
}

/** Event-loop delay from now until stop(): { maxMs, p99Ms, meanMs }. */
function loopMonitor() {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  return {
    stop() {
      h.disable();
      return { maxMs: round(h.max / 1e6, 1), p99Ms: round(h.percentile(99) / 1e6, 1), meanMs: round(h.mean / 1e6, 1) };
    },
  };
}

/** The queries verifyChain() runs (same text, same batch), without hashing: the cost of reading. */
async function readOnly(db, batch = VERIFY_BATCH) {
  let expectSeq = 1;
  let rowsRead = 0;
  for (;;) {
    const rows = await db.query(sql`select * from audit_records where seq >= ${expectSeq} order by seq limit ${batch}`);
    rowsRead += rows.length;
    if (rows.length) expectSeq = Number(rows[rows.length - 1].seq) + 1;
    if (rows.length < batch) return rowsRead;
  }
}

async function verifyBench(target) {
  const raw = postgres(target.url, { max: 1, onnotice: () => {} });
  let load;
  try {
    log(`loading ${VERIFY_RECORDS} records with COPY (hashes computed in JS)…`);
    const t0 = performance.now();
    const writable = await raw`copy audit_records (seq, at, actor_id, actor_label, action, target_type, target_id, diff, request_id, prev_hash, hash) from stdin`.writable();
    await pipeline(Readable.from(copyChunks(VERIFY_RECORDS)), writable);
    const loadSeconds = ms(t0) / 1000;
    const t1 = performance.now();
    await raw.unsafe('vacuum analyze audit_records');
    const vacuumSeconds = ms(t1) / 1000;
    const [{ size }] = await raw`select pg_size_pretty(pg_total_relation_size('audit_records')) as size`;
    load = { seconds: round(loadSeconds, 2), recordsPerSecond: round(VERIFY_RECORDS / loadSeconds, 0), vacuumSeconds: round(vacuumSeconds, 2), tableSize: size };
    log(`loaded in ${fmt(loadSeconds, 1)} s (${fmt(VERIFY_RECORDS / loadSeconds, 0)} records/s), vacuum analyze ${fmt(vacuumSeconds, 1)} s, table with indexes ${size}`);
  } finally {
    await raw.end({ timeout: 5 });
  }

  const runs = { scan: [], read: [], verify: [] };
  const verifications = [];
  const loopDelay = { read: [], verify: [] };
  for (let r = 1; r <= VERIFY_ROUNDS; r++) {
    let t0 = performance.now();
    const [scan] = await target.db.query(sql`select count(*)::bigint as n, max(hash) as max from audit_records`);
    runs.scan.push(ms(t0) / 1000);
    if (Number(scan.n) !== VERIFY_RECORDS) throw new Error(`audit_records holds ${scan.n} rows, expected ${VERIFY_RECORDS}`);
    log(`round ${r} scan    ${fmt(runs.scan.at(-1), 3)} s`);

    // Event-loop delay during the read and verify passes: in the server, every other request waits this.
    let h = loopMonitor();
    t0 = performance.now();
    const rowsRead = await readOnly(target.db);
    runs.read.push(ms(t0) / 1000);
    loopDelay.read.push(h.stop());
    if (rowsRead !== VERIFY_RECORDS) throw new Error(`the batched read saw ${rowsRead} rows, expected ${VERIFY_RECORDS}`);
    log(`round ${r} read    ${fmt(runs.read.at(-1), 3)} s; event-loop delay max ${loopDelay.read.at(-1).maxMs} ms`);

    h = loopMonitor();
    t0 = performance.now();
    const v = await verifyChain(target.db);
    runs.verify.push(ms(t0) / 1000);
    loopDelay.verify.push(h.stop());
    verifications.push(v);
    log(`round ${r} verify  ${fmt(runs.verify.at(-1), 3)} s  ${JSON.stringify(v)}; event-loop delay max ${loopDelay.verify.at(-1).maxMs} ms`);
  }
  const med = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
  const summary = Object.fromEntries(
    Object.entries(runs).map(([k, v]) => [k, { seconds: round(med[k], 3), recordsPerSecond: round(VERIFY_RECORDS / med[k], 0), runsSeconds: v.map((x) => round(x, 3)) }]),
  );
  const ok = verifications.every((v) => v.ok && v.recordsChecked === VERIFY_RECORDS);
  return {
    load,
    summary,
    ratios: { verifyOverScan: round(med.verify / med.scan, 1), readOverScan: round(med.read / med.scan, 1), readShareOfVerify: round(med.read / med.verify, 3) },
    eventLoopDelay: Object.fromEntries(
      Object.entries(loopDelay).map(([k, v]) => [k, { maxMs: round(median(v.map((d) => d.maxMs)), 1), p99Ms: round(median(v.map((d) => d.p99Ms)), 1), runs: v }]),
    ),
    chainCheck: { expected: VERIFY_RECORDS, verifications, ok },
  };
}

// ---- main ----------------------------------------------------------------------------------------------

async function main() {
  const m = machine();
  const pgVersion = await postgresVersion(ADMIN_URL);
  if (!pgVersion) throw new Error(`PostgreSQL at ${redactUrl(ADMIN_URL)} does not answer`);
  installGuards(300 + Math.ceil((ROUNDS * WRITERS.length * 2 * RECORDS) / 50) + Math.ceil((VERIFY_RECORDS * (1 + 3 * VERIFY_ROUNDS)) / 5_000));
  log(`PostgreSQL ${pgVersion} at ${redactUrl(ADMIN_URL)}; pool ${POOL}; ${RECORDS} records per case, writers ${WRITERS.join(',')}, ${ROUNDS} round(s); verify ${VERIFY_RECORDS} records, ${VERIFY_ROUNDS} round(s)`);

  let append;
  let verify;
  const dbs = [];
  try {
    const a = await freshMigratedDb('A (appends)', dbs);
    append = await appendBench(a.db);
    if (VERIFY_RECORDS > 0) {
      const b = await freshMigratedDb('B (verification)', dbs);
      verify = await verifyBench(b);
    }
  } finally {
    for (const d of dbs) {
      await d.db?.close().catch(() => {});
      await d.drop().catch((err) => log(`could not drop ${d.name}: ${err.message}`));
    }
  }

  const loadEnd = round(os.loadavg()[0], 2);
  const problems = [];
  if (!append.chainCheck.ok) problems.push(`chain after concurrent appends: expected ${append.chainCheck.expected} records, verifyChain said ${JSON.stringify(append.chainCheck.verification)}`);
  if (append.chainCheck.plainRows !== append.chainCheck.plainRowsExpected) problems.push(`bench_plain holds ${append.chainCheck.plainRows} rows, expected ${append.chainCheck.plainRowsExpected}`);
  if (verify && !verify.chainCheck.ok) problems.push(`verifyChain over ${VERIFY_RECORDS} loaded records: ${JSON.stringify(verify.chainCheck.verifications)}`);

  console.log(`audit append: ${RECORDS} records per case, ${ROUNDS} round(s) (medians), pool ${POOL}; PostgreSQL ${pgVersion} at ${redactUrl(ADMIN_URL)}`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  const s = append.summary;
  console.log(
    table([
      ['case', 'writers', 'records/s', 'p50 ms', 'p99 ms', 'audit/plain'],
      ...WRITERS.flatMap((w) => [
        ['plain INSERT', w, fmt(s[`plainx${w}`].perSecond, 0), fmt(s[`plainx${w}`].p50Ms, 2), fmt(s[`plainx${w}`].p99Ms, 2), ''],
        ['appendAudit', w, fmt(s[`auditx${w}`].perSecond, 0), fmt(s[`auditx${w}`].p50Ms, 2), fmt(s[`auditx${w}`].p99Ms, 2), fmt(append.ratios[`writers${w}`], 3)],
      ]),
    ]),
  );
  console.log(`chain after the appends: ${append.chainCheck.ok ? 'ok' : 'NOT OK'}, ${append.chainCheck.verification.recordsChecked} of ${append.chainCheck.expected} records checked`);
  if (verify) {
    const v = verify.summary;
    console.log(`\nverification of ${VERIFY_RECORDS} records, ${VERIFY_ROUNDS} round(s) (medians); loaded by COPY in ${verify.load.seconds} s, table with indexes ${verify.load.tableSize}`);
    console.log(
      table([
        ['pass', 'seconds', 'records/s', 'x scan'],
        ['scan: count(*), max(hash)', fmt(v.scan.seconds, 3), fmt(v.scan.recordsPerSecond, 0), '1.0'],
        ['read: verify queries, no hashing', fmt(v.read.seconds, 3), fmt(v.read.recordsPerSecond, 0), fmt(verify.ratios.readOverScan, 1)],
        ['verifyChain', fmt(v.verify.seconds, 3), fmt(v.verify.recordsPerSecond, 0), fmt(verify.ratios.verifyOverScan, 1)],
      ]),
    );
    const d = verify.eventLoopDelay;
    console.log(`longest event-loop block (median of rounds): read ${d.read.maxMs} ms, verifyChain ${d.verify.maxMs} ms (batch ${VERIFY_BATCH})`);
    console.log(`verifyChain: ${verify.chainCheck.ok ? 'ok' : 'NOT OK'} (${verify.chainCheck.verifications.map((x) => `ok=${x.ok} recordsChecked=${x.recordsChecked}`).join('; ')})`);
  }
  console.log(`problems: ${problems.length}`);
  for (const p of problems) console.log(`  ${p}`);
  console.log(
    JSON.stringify({
      bench: 'audit',
      command: ['node --import tsx bench/audit.mjs', ...process.argv.slice(2)].join(' '),
      machine: m,
      postgres: { version: pgVersion, url: redactUrl(ADMIN_URL) },
      loadavg1End: loadEnd,
      settings: { records: RECORDS, writers: WRITERS, rounds: ROUNDS, pool: POOL, warmupRecords: WARMUP_RECORDS, verifyRecords: VERIFY_RECORDS, verifyRounds: VERIFY_ROUNDS, verifyBatch: VERIFY_BATCH },
      append,
      verify: verify ?? null,
      problems,
    }),
  );
}

await main();
