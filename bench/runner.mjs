#!/usr/bin/env node
// The runner bundle's own figures (dist/svc-runner.mjs, the real daemon) against the real server on
// PostgreSQL, each with a baseline from the same run:
//   (a) spool → acked in PostgreSQL: a paired runner's spool is filled with --events events of about
//       1 KB (the internal `spool-append` command, `emit` in older bundles: one fsync'd file per
//       event), then `svc-runner run` starts; timed from its spawn until the spool directory holds no
//       event file AND all the rows are in runner_events. Also reported from its "connected" log line.
//       Baseline: the same number of rows of the same size INSERTed directly by postgres.js in batches
//       of MAX_BATCH (500, the runner's batch limit) into bench_events (like runner_events: same
//       columns, primary key and index). Order per round: baseline, fill, runner; medians of the rounds.
//   (b) idle RSS: a fresh daemon, connected (the server lists it online) and idle for --idle-seconds,
//       VmRSS from /proc/<pid>/status; baseline: `node -e "setInterval(()=>{},1e3)"` started at the
//       same moment and read at the same moment.
//   (c) bundle size: dist/svc-runner.mjs in bytes, and gzipped (zlib level 6, like `gzip`, and 9).
//   (d) latency under a steady stream (#17 item 8): the idle daemon of (b) watches a project (made
//       through the API, rootPath in the sandbox); lines are appended to its .svc/events.jsonl at each
//       --latency-rates rate for --latency-seconds, one appendFileSync per line as `svc-runner emit`
//       does, and each line's latency is its row's received_at in runner_events (the insert's
//       transaction time; it commits within the insert) minus the moment it was appended. Both clocks
//       are this machine's. Five warm-up lines are stored first. p50/p90/p99/max per rate; every line
//       must be stored exactly once.
//   (e) start-up of short commands (docs/runner.md, "Compile cache"): `--version` and `usage daily --json`
//       (no runner.json, no transcripts) with the compile cache in use (after the runs that write it) and
//       turned off (SVC_RUNNER_COMPILE_CACHE=0), --startup-runs of each, alternated with the baseline, node
//       running an empty .mjs; median wall ms of each (spawn to exit).
//
//   npm run bench:runner -- [options]   (builds, then runs:)
//   node --import tsx bench/runner.mjs [--events 20000] [--pad 880] [--rounds 3]
//                                    [--idle-seconds 10] [--database-url postgres://…]
//                                    [--profile-dir DIR]   (node --cpu-prof of each daemon run)
//                                    [--latency-rates 50,1000] [--latency-seconds 4]  (0 seconds: skip (d))
//                                    [--bundle FILE] [--daemon-node-flags "…"] [--daemon-env "K=V …"]
//                                    [--heap-snapshot DIR] [--daemon-log FILE]   (the idle daemon: what its memory is)
//                                    [--startup-runs 20]   (0: skip (e))
//
// The bundle is copied to a temp dir first (no node_modules near it, and a rebuild by someone else
// during the run does not change what is measured). The runner runs with HOME, XDG_CONFIG_HOME and
// XDG_STATE_HOME in a temp dir, so nothing touches the real home. The server is node dist/server.mjs,
// started by test/helpers/server.ts startServer({ admin: true }) on a fresh database svc_bench_<hex>;
// the admin makes the pairing code through the API (POST /api/runners) and `svc-runner pair` uses it.
// Loopback only; every process, temp dir and database it makes is removed at the end, also on error
// or Ctrl-C. Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, opendirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import postgres from 'postgres';
import { MAX_BATCH } from '../protocol/frames.ts';
import { compileCacheDir } from '../runner/boot.ts';
import { startServer } from '../test/helpers/server.ts';
import {
  alive,
  captureOutput,
  createDatabase,
  DEFAULT_DATABASE_URL,
  distHash,
  fmt,
  installGuards,
  machine,
  median,
  onCleanup,
  percentile,
  postgresVersion,
  problemLines,
  redactUrl,
  requireBuild,
  ROOT,
  round,
  heapSnapshotTop,
  spawnTracked,
  stopChild,
  table,
  tempDir,
  wholeOption,
} from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    pad: { type: 'string', default: '880' },
    rounds: { type: 'string', default: '3' },
    'idle-seconds': { type: 'string', default: '10' },
    'database-url': { type: 'string', default: DEFAULT_DATABASE_URL },
    /** Write a CPU profile of each draining daemon (node --cpu-prof) into this directory. */
    'profile-dir': { type: 'string' },
    'latency-rates': { type: 'string', default: '50,1000' },
    'latency-seconds': { type: 'string', default: '4' },
    /** Another svc-runner.mjs to measure instead of dist/svc-runner.mjs (a before/after comparison). */
    bundle: { type: 'string' },
    /** Node flags for the idle daemon (e.g. `--max-semi-space-size=1`), to find what its memory is. */
    'daemon-node-flags': { type: 'string', default: '' },
    /** Environment for the idle daemon, `K=V` pairs separated by spaces (e.g. `MALLOC_ARENA_MAX=2`). */
    'daemon-env': { type: 'string', default: '' },
    /** Write a heap snapshot of the idle daemon here (after its RSS is read) and print its largest parts. */
    'heap-snapshot': { type: 'string' },
    /** Write the idle daemon's output (stdout and stderr) here after its RSS is read, e.g. with `--trace-opt`. */
    'daemon-log': { type: 'string' },
    'startup-runs': { type: 'string', default: '20' },
  },
  strict: true,
});

function whole(name, min = 1, max = Infinity) {
  return wholeOption(name, opts[name], min, max);
}
const EVENTS = whole('events', 1, 100_000); // the append command takes at most 100,000 per call
const PAD = whole('pad', 0, 200_000);
const ROUNDS = whole('rounds');
const IDLE_SECONDS = whole('idle-seconds');
const LATENCY_SECONDS = wholeOption('latency-seconds', opts['latency-seconds'], 0, 600);
const STARTUP_RUNS = wholeOption('startup-runs', opts['startup-runs'], 0, 1000);
const LATENCY_RATES = opts['latency-rates'].split(',').map((r, i) => wholeOption(`latency-rates[${i}]`, r, 1, 20_000));
/** The goal of #17 for an event appended on the runner → stored, p99, at 50 and 1,000 events/s. */
const LATENCY_GOAL_MS = 250;
const ADMIN_URL = opts['database-url'];
const SOURCE = 'bench/runner';
/** Spool files: one per append with its event count in the name (0.17 on), or one per event (older bundles). */
const SPOOL_NAME = /^\d{13}\.\d{8}\.[a-z0-9]{6}(?:\.(\d+)\.jsonl|\.json)$/;
const eventsIn = (name) => Number(SPOOL_NAME.exec(name)?.[1] ?? 1);
const DIST_RUNNER = opts.bundle ?? join(ROOT, 'dist', 'svc-runner.mjs');

const log = (m) => process.stderr.write(`[bench:runner] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const since = (t0) => (performance.now() - t0) / 1000;

/** VmRSS and VmHWM of a process in KiB (from /proc/<pid>/status). */
function memoryOf(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1]);
  return { rssKiB: kb('VmRSS'), hwmKiB: kb('VmHWM') };
}

/** Proportional and unique (private) resident KiB of a process (/proc/<pid>/smaps_rollup): pages shared with other processes, such as the node executable's, count in PSS by share and not in USS. */
function sharingOf(pid) {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { pssKiB: kb('Pss'), ussKiB: kb('Private_Clean') + kb('Private_Dirty') };
}

/**
 * A node process that has optimised one function and is then idle: V8's optimising compiler (TurboFan) is
 * part of the node executable, and its pages become resident in a process the first time any function is
 * optimised — the floor of every Node process that has run hot code once (docs/performance.md, "The idle
 * daemon's memory").
 */
const OPTIMISED_NODE = 'function f(x){return x*2+1}let s=0;for(let i=0;i<1e6;i++)s+=f(i);setInterval(()=>s,1e3)';
/** An idle ES module: the runner is one `.mjs` file, and node starts its ES module loader (~20 modules of its
 *  own) for an `.mjs` entry, which `node -e` does not. */
const EMPTY_MODULE = 'setInterval(() => {}, 1e3);\n';

/** Resident KiB per kind of mapping (/proc/<pid>/smaps): anonymous ([anon], [heap], [stack]) or the file mapped. */
function smapsTop(pid, count = 6) {
  const by = new Map();
  let name = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) name = head[1] ? head[1].replace(/^.*\//, '') : '[anon]';
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) by.set(name, (by.get(name) ?? 0) + Number(rss[1]));
  }
  return [...by.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
}

/** True while the spool directory holds at least one event file (stops at the first one it sees). */
function spoolHasEvents(dir) {
  let d;
  try {
    d = opendirSync(dir);
  } catch {
    return false;
  }
  try {
    for (let e = d.readSync(); e; e = d.readSync()) if (SPOOL_NAME.test(e.name)) return true;
    return false;
  } finally {
    d.closeSync();
  }
}

const spoolFiles = (dir) => {
  try {
    return readdirSync(dir).filter((n) => SPOOL_NAME.test(n));
  } catch {
    return [];
  }
};

/** Run the copied bundle to completion: { status, stdout, stderr }. */
function runBundle(bundle, sb, args, timeoutMs = 120_000) {
  const child = spawnTracked(process.execPath, [bundle, ...args], { cwd: sb.dir, env: sb.env });
  captureOutput(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return child.exited.then((status) => (clearTimeout(timer), { status, output: child.log }));
}

/**
 * (e) Short commands' start-up, cache in use and off, against node running an empty .mjs: alternated runs in
 * a home of their own, median ms from spawn to exit. The cache is written by the first runs of each command
 * (runner/boot.ts GENERATIONS), which are not counted.
 */
function measureStartup(bundle, runs) {
  const dir = tempDir('svc-bench-runner-start-');
  const empty = join(dir, 'empty.mjs');
  writeFileSync(empty, '');
  const env = { HOME: join(dir, 'home'), PATH: [dirname(process.execPath), '/usr/bin', '/bin'].join(':'), TZ: 'UTC', LANG: 'C' };
  mkdirSync(env.HOME);
  const off = { ...env, SVC_RUNNER_COMPILE_CACHE: '0' };
  const cases = {
    emptyModule: [[empty], env],
    versionCached: [[bundle, '--version'], env],
    versionUncached: [[bundle, '--version'], off],
    usageCached: [[bundle, 'usage', 'daily', '--json'], env],
    usageUncached: [[bundle, 'usage', 'daily', '--json'], off],
  };
  const once = ([args, e]) => {
    const t = performance.now();
    const r = spawnSync(process.execPath, args, { env: e, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
    return performance.now() - t;
  };
  for (let i = 0; i < 4; i++) for (const c of Object.values(cases)) once(c); // the cache's writes, and warm files
  const ms = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let i = 0; i < runs; i++) for (const [k, c] of Object.entries(cases)) ms[k].push(once(c));
  const med = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, round(median(v), 1)]));
  return {
    runs,
    medianMs: med,
    // 0: a bundle from before the compile cache (its two kinds of runs are the same).
    cacheFiles: existsSync(compileCacheDir(env)) ? readdirSync(compileCacheDir(env)).length : 0,
    versionCachedOverUncached: round(med.versionCached / med.versionUncached, 3),
    usageCachedOverUncached: round(med.usageCached / med.usageUncached, 3),
    usageCachedOverEmptyModule: round(med.usageCached / med.emptyModule, 3),
  };
}

/**
 * (d) Lines appended to a watched project's .svc/events.jsonl at a steady rate → stored in runner_events.
 * Returns { goalMs, rates: [{ rate, lines, seconds, p50Ms, p90Ms, p99Ms, maxMs }] }.
 */
async function measureLatency({ server, sql, sb, runnerId, daemon }) {
  const root = join(sb.dir, 'latency-project');
  mkdirSync(join(root, '.svc'), { recursive: true }); // .svc/ exists, so the daemon watches it from the start
  // A project's root must be the top of a git work tree on its runner (checked with project.inspect on
  // create since fcbfee1: 422 root_not_a_repository otherwise), so the root is an empty repository.
  execFileSync('git', ['init', '-q', root], { env: sb.env, stdio: 'ignore' });
  const file = join(root, '.svc', 'events.jsonl');
  const watchLines = () => (daemon.log.match(/project watch list updated/g) ?? []).length;
  const before = watchLines();
  const made = await server.api('/api/projects', { method: 'POST', json: { name: 'bench-latency', repo: 'bench/latency', runnerId, rootPath: root } });
  if (made.status !== 200 && made.status !== 201) throw new Error(`POST /api/projects answered ${made.status}: ${await made.text()}`);
  const until = async (what, check, ms = 60_000) => {
    const deadline = performance.now() + ms;
    while (!(await check())) {
      if (!alive(daemon)) throw new Error(`svc-runner run exited while waiting for ${what}:\n${daemon.log}`);
      if (performance.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s\n${daemon.log.slice(-3000)}`);
      await sleep(10);
    }
  };
  await until('the project on the daemon\'s watch list', () => watchLines() > before, 30_000);
  const line = (rate, i, t) => `${JSON.stringify({ v: 1, time: new Date(t).toISOString(), type: 'bench.latency', data: { rate, i } })}\n`;
  const storedOf = async (rate) => (await sql`select count(*)::int as n, count(distinct payload->'data'->>'i')::int as d from runner_events where runner_id = ${runnerId} and kind = 'fleet.bench.latency' and payload->'data'->>'rate' = ${String(rate)}`)[0];
  // Warm-up: five lines, stored before the clock starts.
  for (let i = 0; i < 5; i++) appendFileSync(file, line(0, i, Date.now()));
  await until('the warm-up lines stored', async () => (await storedOf(0)).n >= 5);

  const rates = [];
  for (const rate of LATENCY_RATES) {
    const lines = Math.max(1, Math.round(rate * LATENCY_SECONDS));
    const written = new Array(lines);
    const start = Date.now();
    // Each line at its moment: start + i / rate. The loop wakes about every millisecond and writes what is due.
    for (let i = 0; i < lines; ) {
      const due = Math.min(lines, Math.floor(((Date.now() - start) * rate) / 1000) + 1);
      for (; i < due; i++) {
        const t = Date.now();
        written[i] = t;
        appendFileSync(file, line(rate, i, t));
      }
      if (i < lines) await sleep(Math.max(1, Math.floor(start + (i * 1000) / rate - Date.now())));
    }
    const seconds = (Date.now() - start) / 1000;
    await until(`${lines} lines at ${rate}/s stored`, async () => (await storedOf(rate)).n >= lines);
    const { n, d } = await storedOf(rate);
    if (n !== lines || d !== lines) throw new Error(`at ${rate}/s: ${n} rows for ${lines} lines (${d} distinct): each line must be stored once`);
    const rows = await sql`select (payload->'data'->>'i')::int as i, (extract(epoch from received_at) * 1000)::float8 as ms from runner_events where runner_id = ${runnerId} and kind = 'fleet.bench.latency' and payload->'data'->>'rate' = ${String(rate)}`;
    const ms = rows.map((r) => r.ms - written[r.i]).sort((a, b) => a - b);
    const figure = { rate, lines, seconds: round(seconds, 2), p50Ms: round(percentile(ms, 50), 1), p90Ms: round(percentile(ms, 90), 1), p99Ms: round(percentile(ms, 99), 1), maxMs: round(ms.at(-1), 1), minMs: round(ms[0], 1) };
    rates.push(figure);
    log(`latency at ${rate}/s (${lines} lines in ${fmt(seconds, 1)} s): p50 ${fmt(figure.p50Ms, 0)} ms, p90 ${fmt(figure.p90Ms, 0)}, p99 ${fmt(figure.p99Ms, 0)}, max ${fmt(figure.maxMs, 0)}`);
  }
  return { goalMs: LATENCY_GOAL_MS, rates };
}

async function main() {
  requireBuild();
  const m = machine();
  const pgVersion = await postgresVersion(ADMIN_URL);
  if (!pgVersion) throw new Error(`PostgreSQL at ${redactUrl(ADMIN_URL)} does not answer`);
  installGuards(180 + Math.ceil((ROUNDS * EVENTS) / 100) + IDLE_SECONDS + LATENCY_RATES.length * (LATENCY_SECONDS + 60));

  // (c) the bundle, copied where no node_modules is near.
  const bytes = readFileSync(DIST_RUNNER);
  const bundleInfo = {
    bytes: bytes.length,
    gzipBytes: gzipSync(bytes, { level: 6 }).length,
    gzip9Bytes: gzipSync(bytes, { level: 9 }).length,
    sha256: createHash('sha256').update(bytes).digest('hex').slice(0, 12),
  };
  const binDir = tempDir('svc-bench-runner-bin-');
  const bundle = join(binDir, 'svc-runner.mjs');
  copyFileSync(DIST_RUNNER, bundle);
  const help = execFileSync(process.execPath, [bundle, 'help'], { encoding: 'utf8' });
  const appendCommand = /^\s+spool-append\b/m.test(help) ? 'spool-append' : /^\s+emit\b/m.test(help) ? 'emit' : null;
  if (!appendCommand) throw new Error(`the runner bundle has neither spool-append nor emit:\n${help}`);
  log(`runner bundle ${bundleInfo.bytes} B (gzip ${bundleInfo.gzipBytes} B), sha256 ${bundleInfo.sha256}; append command: ${appendCommand}`);
  log(`PostgreSQL ${pgVersion}; ${EVENTS} events per round, ${ROUNDS} round(s); idle ${IDLE_SECONDS} s`);
  let startup = null;
  if (STARTUP_RUNS > 0) {
    log(`start-up: ${STARTUP_RUNS} runs of each command, the compile cache in use and off, and of node on an empty .mjs`);
    startup = measureStartup(bundle, STARTUP_RUNS);
  }

  // The runner's sandbox: nothing of the real home.
  const dir = tempDir('svc-bench-runner-');
  const sb = {
    dir,
    env: {
      HOME: join(dir, 'home'),
      XDG_CONFIG_HOME: join(dir, 'config'),
      XDG_STATE_HOME: join(dir, 'state'),
      PATH: [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
      TZ: 'UTC',
      LANG: 'C',
    },
  };
  mkdirSync(sb.env.HOME, { recursive: true });
  const spoolDir = join(sb.env.XDG_STATE_HOME, 'svc', 'spool');

  const db = await createDatabase(ADMIN_URL);
  let server = null;
  let starting = null;
  const forget = onCleanup(async () => {
    const s = server ?? (await starting?.catch(() => null));
    await s?.cleanup();
  });
  const killServer = () => {
    try {
      if (server && server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
    } catch {}
  };
  process.on('exit', killServer);
  let sql = null;
  let output = '';
  const daemonLogs = [];
  const daemonExits = [];
  const rounds = [];
  let idle = null;
  let latency = null;
  let afterDrain = null;
  let eventBytes = null;
  const batchMs = [];
  try {
    log(`database ${db.name}; starting the server`);
    starting = startServer({ admin: true, dbEnv: { DATABASE_URL: db.url } });
    server = await starting;
    sql = postgres(db.url, { max: 2, onnotice: () => {} });

    // Pair: the admin makes a code through the API, `svc-runner pair` exchanges it.
    const made = await server.api('/api/runners', { method: 'POST', json: { name: 'bench-runner' } });
    if (made.status !== 200 && made.status !== 201) throw new Error(`POST /api/runners answered ${made.status}: ${await made.text()}`);
    const { code, runner } = await made.json();
    const paired = await runBundle(bundle, sb, ['pair', '--server', server.url, '--code', code, '--no-detect'], 30_000);
    if (paired.status !== 0) throw new Error(`svc-runner pair exited ${paired.status}:\n${paired.output}`);
    const runnerId = runner.id;
    log(`server on ${server.url}; runner ${runnerId} paired`);

    await sql`create table bench_events (like runner_events including defaults including constraints including indexes)`;
    const pad = 'x'.repeat(PAD);

    /** Start the daemon; resolves with the child and the time its "connected" line appeared. */
    const startDaemon = (nodeFlags = [], extraEnv = {}) => {
      const prof = opts['profile-dir'] ? ['--cpu-prof', `--cpu-prof-dir=${opts['profile-dir']}`] : nodeFlags;
      const d = spawnTracked(process.execPath, [...prof, bundle, 'run'], { cwd: sb.dir, env: { ...sb.env, ...extraEnv } });
      captureOutput(d);
      d.connected = new Promise((ok, fail) => {
        const check = () => {
          if (!/connected to /.test(d.log)) return;
          ok(performance.now());
          d.stdout.off('data', check);
          d.stderr.off('data', check);
        };
        d.stdout.on('data', check);
        d.stderr.on('data', check);
        d.exited.then((c) => fail(new Error(`svc-runner run exited (${c}) before connecting:\n${d.log}`)));
      });
      d.connected.catch(() => {});
      return d;
    };
    const stopDaemon = async (d) => {
      const code = await stopChild(d, 10_000);
      daemonExits.push(code);
      daemonLogs.push(d.log);
      return code;
    };

    for (let r = 1; r <= ROUNDS; r++) {
      const kind = `bench.r${r}`;
      // Baseline: the same number of rows of the same size, INSERTed directly in batches.
      const ms36 = Date.now().toString(36);
      const rows = (from, to) =>
        Array.from({ length: to - from }, (_, k) => ({
          runner_id: runnerId,
          event_id: `${runnerId.slice(0, 12)}.${ms36}.bench0.${from + k + 1}`,
          source: SOURCE,
          kind,
          ts: new Date().toISOString(),
          payload: { pad, seq: from + k },
        }));
      let t0 = performance.now();
      for (let i = 0; i < EVENTS; i += MAX_BATCH) {
        const s = performance.now();
        await sql`insert into bench_events ${sql(rows(i, Math.min(EVENTS, i + MAX_BATCH)))} on conflict do nothing`;
        batchMs.push(performance.now() - s);
      }
      const directSeconds = since(t0);
      const [{ n: directRows }] = await sql`select count(*)::int as n from bench_events where kind = ${kind}`;
      if (directRows !== EVENTS) throw new Error(`bench_events holds ${directRows} rows of ${kind}, expected ${EVENTS}`);
      log(`round ${r} direct INSERT  ${fmt(EVENTS / directSeconds, 0)} rows/s (${fmt(directSeconds, 2)} s)`);

      // Fill the spool (the daemon is not running).
      t0 = performance.now();
      const filled = await runBundle(bundle, sb, [appendCommand, kind, '--source', SOURCE, '--count', String(EVENTS), '--payload', JSON.stringify({ pad })]);
      const fillSeconds = since(t0);
      if (filled.status !== 0) throw new Error(`svc-runner ${appendCommand} exited ${filled.status}:\n${filled.output}`);
      const files = spoolFiles(spoolDir).sort();
      const spooled = files.reduce((sum, n) => sum + eventsIn(n), 0);
      if (spooled !== EVENTS) throw new Error(`the spool holds ${spooled} events, expected ${EVENTS}`);
      eventBytes ??= Math.round(statSync(join(spoolDir, files[0])).size / eventsIn(files[0]));
      log(`round ${r} spool filled  ${fmt(EVENTS / fillSeconds, 0)} events/s (${fmt(fillSeconds, 2)} s), ~${eventBytes} B per event`);

      // The runner drains it.
      t0 = performance.now();
      const d = startDaemon();
      let stored = 0;
      let lastProgress = performance.now();
      const deadline = performance.now() + 180_000;
      for (;;) {
        if (!spoolHasEvents(spoolDir)) {
          [{ n: stored }] = await sql`select count(*)::int as n from runner_events where runner_id = ${runnerId} and kind = ${kind}`;
          if (stored === EVENTS) break;
        }
        if (d.exitCode !== null || d.signalCode !== null) throw new Error(`svc-runner run exited (${d.exitCode ?? d.signalCode}) while draining:\n${d.log}`);
        if (performance.now() > deadline) throw new Error(`the spool did not drain within 180 s (${spoolFiles(spoolDir).length} left)\n${d.log}`);
        if (performance.now() - lastProgress > 5_000) {
          lastProgress = performance.now();
          const [{ n }] = await sql`select count(*)::int as n from runner_events where runner_id = ${runnerId} and kind = ${kind}`;
          log(`round ${r} … ${n} stored after ${fmt(since(t0), 1)} s`);
        }
        await sleep(25);
      }
      const done = performance.now();
      const connectedAt = await d.connected;
      afterDrain = memoryOf(d.pid);
      const runnerSeconds = (done - t0) / 1000;
      const drainSeconds = (done - connectedAt) / 1000;
      const exit = await stopDaemon(d);
      rounds.push({
        round: r,
        direct: { seconds: round(directSeconds, 3), rowsPerSecond: round(EVENTS / directSeconds, 0) },
        fill: { seconds: round(fillSeconds, 3), eventsPerSecond: round(EVENTS / fillSeconds, 0) },
        runner: {
          seconds: round(runnerSeconds, 3),
          eventsPerSecond: round(EVENTS / runnerSeconds, 0),
          startToConnectedSeconds: round((connectedAt - t0) / 1000, 3),
          drainSecondsFromConnected: round(drainSeconds, 3),
          eventsPerSecondFromConnected: round(EVENTS / drainSeconds, 0),
          stored,
          memoryAfterDrain: afterDrain,
          exitOnSigterm: exit,
        },
      });
      log(
        `round ${r} runner        ${fmt(EVENTS / runnerSeconds, 0)} events/s from spawn (${fmt(runnerSeconds, 2)} s), ${fmt(EVENTS / drainSeconds, 0)} from connected; ` +
          `RSS after ${fmt(afterDrain.rssKiB / 1024, 1)} MiB, peak ${fmt(afterDrain.hwmKiB / 1024, 1)} MiB; exit ${exit}`,
      );
    }

    // (b) idle RSS: a fresh daemon on the empty spool and a bare node process, side by side.
    log(`idle: a fresh daemon and a bare node process, ${IDLE_SECONDS} s`);
    const bare = spawnTracked(process.execPath, ['-e', 'setInterval(()=>{},1e3)'], { cwd: sb.dir, env: sb.env });
    const optimised = spawnTracked(process.execPath, ['-e', OPTIMISED_NODE], { cwd: sb.dir, env: sb.env });
    writeFileSync(join(sb.dir, 'idle.mjs'), EMPTY_MODULE);
    const emptyModule = spawnTracked(process.execPath, [join(sb.dir, 'idle.mjs')], { cwd: sb.dir, env: sb.env });
    const d = startDaemon([...(opts['heap-snapshot'] ? ['--heapsnapshot-signal=SIGUSR2'] : []), ...opts['daemon-node-flags'].split(' ').filter(Boolean)], Object.fromEntries(opts['daemon-env'].split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])));
    const connectedAt = await Promise.race([d.connected, sleep(30_000).then(() => Promise.reject(new Error(`svc-runner run did not connect within 30 s:\n${d.log}`)))]);
    const listed = await (await server.api('/api/runners')).json();
    const status = listed.runners?.find((x) => x.id === runnerId)?.status;
    const samples = [];
    while (performance.now() - connectedAt < IDLE_SECONDS * 1000) {
      await sleep(1000);
      samples.push({ runner: memoryOf(d.pid), bare: memoryOf(bare.pid), optimised: memoryOf(optimised.pid), emptyModule: memoryOf(emptyModule.pid) });
    }
    const last = samples.at(-1);
    const sharing = { runner: sharingOf(d.pid), bare: sharingOf(bare.pid), optimised: sharingOf(optimised.pid) };
    const maps = { runner: smapsTop(d.pid), bare: smapsTop(bare.pid) };
    log(`idle RSS by mapping (KiB): runner ${maps.runner.map(([k, v]) => `${k} ${v}`).join(', ')}; bare ${maps.bare.map(([k, v]) => `${k} ${v}`).join(', ')}`);
    let heap = null;
    if (opts['heap-snapshot']) {
      // Node writes Heap.<date>.<time>.<pid>.<thread>.<seq>.heapsnapshot into the daemon's cwd.
      d.kill('SIGUSR2');
      const deadline = performance.now() + 60_000;
      let file;
      while (!(file = readdirSync(sb.dir).find((f) => f.endsWith('.heapsnapshot') && f.includes(`.${d.pid}.`)))) {
        if (performance.now() > deadline) throw new Error('no heap snapshot within 60 s');
        await sleep(500);
      }
      // Written on the daemon's main thread, in pieces: complete once it parses.
      for (;;) {
        try {
          heap = { file: join(opts['heap-snapshot'], file), ...heapSnapshotTop(join(sb.dir, file)) };
          break;
        } catch (e) {
          if (!(e instanceof SyntaxError) || performance.now() > deadline) throw e;
          await sleep(2000);
        }
      }
      mkdirSync(opts['heap-snapshot'], { recursive: true });
      copyFileSync(join(sb.dir, file), heap.file);
    }
    if (opts['daemon-log']) writeFileSync(opts['daemon-log'], d.log);
    idle = {
      maps,
      heap,
      seconds: IDLE_SECONDS,
      statusListed: status,
      runner: last.runner,
      bare: last.bare,
      optimised: last.optimised,
      emptyModule: last.emptyModule,
      sharing,
      ratio: round(last.runner.rssKiB / last.bare.rssKiB, 2),
      overOptimised: round(last.runner.rssKiB / last.optimised.rssKiB, 2),
      optimisedOverBare: round(last.optimised.rssKiB / last.bare.rssKiB, 2),
      overEmptyModule: round(last.runner.rssKiB / last.emptyModule.rssKiB, 2),
      emptyModuleOverBare: round(last.emptyModule.rssKiB / last.bare.rssKiB, 2),
      minusBareKiB: last.runner.rssKiB - last.bare.rssKiB,
      samplesRssKiB: samples.map((s) => [s.runner.rssKiB, s.bare.rssKiB]),
    };
    log(`idle RSS: runner ${fmt(idle.runner.rssKiB / 1024, 1)} MiB, bare node ${fmt(idle.bare.rssKiB / 1024, 1)} MiB (×${idle.ratio}), node that optimised one function ${fmt(idle.optimised.rssKiB / 1024, 1)} MiB (runner ×${idle.overOptimised}; it is ×${idle.optimisedOverBare} bare), node running an empty .mjs ${fmt(idle.emptyModule.rssKiB / 1024, 1)} MiB (runner ×${idle.overEmptyModule}; it is ×${idle.emptyModuleOverBare} bare); listed ${status}`);
    log(`idle PSS / USS, MiB: runner ${fmt(sharing.runner.pssKiB / 1024, 1)} / ${fmt(sharing.runner.ussKiB / 1024, 1)}, bare ${fmt(sharing.bare.pssKiB / 1024, 1)} / ${fmt(sharing.bare.ussKiB / 1024, 1)}, optimised ${fmt(sharing.optimised.pssKiB / 1024, 1)} / ${fmt(sharing.optimised.ussKiB / 1024, 1)}`);
    if (heap) log(`idle heap snapshot ${heap.file}: ${fmt(heap.totalKiB / 1024, 1)} MiB; by type ${heap.byType.map(([t, k]) => `${t} ${fmt(k / 1024, 1)}`).join(', ')}; largest scripts ${heap.scripts.map(([n, k]) => `${n} ${fmt(k, 0)} KiB`).join(', ')}`);
    await stopChild(bare, 5_000);
    await stopChild(optimised, 5_000);
    await stopChild(emptyModule, 5_000);
    if (LATENCY_SECONDS > 0) latency = await measureLatency({ server, sql, sb, runnerId, daemon: d });
    await stopDaemon(d);
  } finally {
    await sql?.end({ timeout: 5 }).catch(() => {});
    if (server) {
      await Promise.race([server.stop('SIGTERM'), sleep(15_000)]);
      output = server.output();
      await server.cleanup();
    }
    await db.drop().catch((err) => log(`could not drop ${db.name}: ${err.message}`));
    forget();
  }

  const med = (f) => median(rounds.map(f));
  const summary = {
    directRowsPerSecond: round(med((x) => x.direct.rowsPerSecond), 0),
    runnerEventsPerSecond: round(med((x) => x.runner.eventsPerSecond), 0),
    runnerEventsPerSecondFromConnected: round(med((x) => x.runner.eventsPerSecondFromConnected), 0),
    startToConnectedSeconds: round(med((x) => x.runner.startToConnectedSeconds), 3),
    fillEventsPerSecond: round(med((x) => x.fill.eventsPerSecond), 0),
  };
  const ratios = {
    runnerOverDirect: round(summary.runnerEventsPerSecond / summary.directRowsPerSecond, 3),
    runnerFromConnectedOverDirect: round(summary.runnerEventsPerSecondFromConnected / summary.directRowsPerSecond, 3),
    idleRssOverBareNode: idle.ratio,
    idleRssOverOptimisedNode: idle.overOptimised,
    idleRssOverEmptyModuleNode: idle.overEmptyModule,
    ...(startup ? { usageStartCachedOverUncached: startup.usageCachedOverUncached, versionStartCachedOverUncached: startup.versionCachedOverUncached } : {}),
  };
  const problems = [...problemLines(output).map((l) => `server: ${l}`), ...daemonLogs.flatMap((l) => problemLines(l).map((x) => `runner: ${x}`))];
  const loadEnd = round(os.loadavg()[0], 2);
  const distChanged = distHash() !== m.dist;
  const MiB = (kib) => fmt(kib / 1024, 1);

  console.log(`runner: ${EVENTS} events of ~${eventBytes} B per round, ${ROUNDS} round(s) (medians); PostgreSQL ${pgVersion} at ${redactUrl(ADMIN_URL)}`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}, dist/server.mjs ${m.dist}, dist/svc-runner.mjs ${bundleInfo.sha256}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  if (distChanged) console.log('WARNING: dist/server.mjs changed during the run (rebuilt by someone else); the server started before the change');
  console.log(
    table([
      ['figure', 'value', 'baseline', 'ratio'],
      [`spool → PostgreSQL, events/s (from spawn)`, fmt(summary.runnerEventsPerSecond, 0), `${fmt(summary.directRowsPerSecond, 0)} direct INSERT rows/s`, fmt(ratios.runnerOverDirect, 3)],
      [`spool → PostgreSQL, events/s (from connected)`, fmt(summary.runnerEventsPerSecondFromConnected, 0), '', fmt(ratios.runnerFromConnectedOverDirect, 3)],
      ['spawn → connected, s', fmt(summary.startToConnectedSeconds, 2), '', ''],
      [`spool fill (${appendCommand}), events/s`, fmt(summary.fillEventsPerSecond, 0), '', ''],
      [`idle RSS after ${IDLE_SECONDS} s, MiB`, MiB(idle.runner.rssKiB), `${MiB(idle.bare.rssKiB)} bare node`, fmt(idle.ratio, 2)],
      ['  against a node that optimised one function', '', `${MiB(idle.optimised.rssKiB)} (×${fmt(idle.optimisedOverBare, 2)} bare)`, fmt(idle.overOptimised, 2)],
      ['  against a node running an empty .mjs', '', `${MiB(idle.emptyModule.rssKiB)} (×${fmt(idle.emptyModuleOverBare, 2)} bare)`, fmt(idle.overEmptyModule, 2)],
      ['RSS after the last drain / peak, MiB', `${MiB(afterDrain.rssKiB)} / ${MiB(afterDrain.hwmKiB)}`, '', ''],
      ...(latency?.rates ?? []).map((l) => [
        `events.jsonl line → stored at ${l.rate}/s: p50 / p90 / p99 / max ms`,
        `${fmt(l.p50Ms, 0)} / ${fmt(l.p90Ms, 0)} / ${fmt(l.p99Ms, 0)} / ${fmt(l.maxMs, 0)}`,
        `goal p99 < ${LATENCY_GOAL_MS}`,
        l.p99Ms < LATENCY_GOAL_MS ? 'met' : 'MISSED',
      ]),
      ...(startup
        ? [
            [`start-up, median of ${startup.runs}: usage daily --json, cache in use / off, ms`, `${fmt(startup.medianMs.usageCached, 1)} / ${fmt(startup.medianMs.usageUncached, 1)}`, `${fmt(startup.medianMs.emptyModule, 1)} node on an empty .mjs`, fmt(startup.usageCachedOverUncached, 3)],
            ['  --version, cache in use / off, ms', `${fmt(startup.medianMs.versionCached, 1)} / ${fmt(startup.medianMs.versionUncached, 1)}`, '', fmt(startup.versionCachedOverUncached, 3)],
          ]
        : []),
      ['dist/svc-runner.mjs, bytes', String(bundleInfo.bytes), '', ''],
      ['  gzip -6 / -9, bytes', `${bundleInfo.gzipBytes} / ${bundleInfo.gzip9Bytes}`, '', ''],
    ]),
  );
  console.log(`per round (runner events/s from spawn; direct rows/s): ${rounds.map((x) => `${x.runner.eventsPerSecond}; ${x.direct.rowsPerSecond}`).join(' | ')}`);
  console.log(`runner exits on SIGTERM: ${daemonExits.join(', ')}; problems: ${problems.length}`);
  for (const p of problems.slice(0, 20)) console.log(`  ${p}`);
  console.log(
    JSON.stringify({
      bench: 'runner',
      command: ['node --import tsx bench/runner.mjs', ...process.argv.slice(2)].join(' '),
      machine: m,
      distChangedDuringRun: distChanged,
      loadavg1End: loadEnd,
      postgres: { version: pgVersion, url: redactUrl(ADMIN_URL) },
      settings: { startupRuns: STARTUP_RUNS, events: EVENTS, pad: PAD, eventBytes, rounds: ROUNDS, idleSeconds: IDLE_SECONDS, directBatch: MAX_BATCH, appendCommand, latencyRates: LATENCY_RATES, latencySeconds: LATENCY_SECONDS },
      bundle: bundleInfo,
      summary,
      ratios,
      idle,
      latency,
      startup,
      rounds,
      directBatchMs: { median: round(median(batchMs), 2), max: round(Math.max(...batchMs), 2) },
      daemonExits,
      problems,
    }),
  );
}

await main();
