#!/usr/bin/env node
// A fleet of simulated runners (issue #41 part 5) against --replicas replicas of dist/server.mjs on one
// fresh PostgreSQL database. Each simulated runner is the real runner's connection (runner/connection.ts
// Connection: its backoff 1 s → 60 s with ±20 % jitter, its frame budget, its ping every 25 s, ws
// pongs), paired as `svc-runner pair` pairs, and does what runner/daemon.ts does on a connection: hello
// with the real capabilities, profiles, capacity; it answers commands with the real runner.ping handler
// and sends its events as runner/sender.ts does (its frame budget; one batch in flight per source — one
// source per simulated runner — of up to MAX_BATCH events, the spool's 50 ms debounce as the tick on
// which events arrive). In this order:
//   memory     RSS of each replica with no runner connected (after pairing), then with all --runners
//              connected and settled: (sum of RSS deltas) / runners, in KB per connected runner;
//   idle cmd   command round trip (POST /api/runners/:id/commands runner.ping to a random replica, a
//              random runner) at --commands-per-second for --idle-seconds with no ingest: the baseline;
//              beside it, at the same rate, the floor: a command's path without svc (two processes of their
//              own on the same database, a row and a NOTIFY each way), in this phase and the next;
//   ingest     --rate events/s (~--event-bytes each) arriving at the runners (Poisson per 50 ms tick) for
//              --seconds, commands as above meanwhile; per --window seconds: events acked/s, lag (arrival
//              at the runner → ack) p50/p99, backlog (arrived, not acked), replica and PostgreSQL CPU,
//              PostgreSQL connections (pg_stat_activity, by state and wait event); then every event is
//              counted in runner_events (at-least-once, stored once);
//   storm      every replica stopped (SIGTERM: sockets closed 1012, as a restart does; --restart kill for
//              SIGKILL) and started again on its port; time until all runners have their welcome again,
//              from the stop and from the last replica listening; connection attempts made meanwhile.
// The runners reach a replica as through a least-connections balancer with health checks (docs/operations.md):
// a dial goes to the replica that is up (listening) and holds the fewest of the bench's sockets; no
// balancer process, so none takes a core of the 2 the machine may have.
//
//   npm run bench:fleet -- [--runners 1000] [--replicas 3] [--rate 5000] [--seconds 60] [--window 5]
//        [--commands-per-second 20] [--idle-seconds 10] [--event-bytes 500] [--restart term|kill]
//        [--pool-max 10] [--storm-timeout 120] [--profile]
// Bounded and self-stopping (a hard limit from the options); loopback only; the replicas and the database
// are removed at the end. Needs about --runners + 256 open files in this process and in each replica:
// when the soft limit (ulimit -n) is lower and the hard one allows, it runs itself again with it raised.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { MAX_BATCH } from '../protocol/frames.ts';
import { tokenBucket } from '../protocol/bucket.ts';
import { Connection, dialWs } from '../runner/connection.ts';
import { EVENTS_FRAMES_BURST, EVENTS_FRAMES_PER_SECOND } from '../runner/sender.ts';
import { capabilities } from '../runner/commands/context.ts';
import { runnerPing } from '../runner/commands/ping.ts';
import { VERSION } from '../protocol/version.ts';
import { freshPostgres } from '../test/helpers/db.ts';
import { pairRunner } from '../test/helpers/wsclient.ts';
import { benchEvents, cpuMs, cpuProfileTop, freePort, installGuards, machine, onCleanup, percentile, requireBuild, ROOT, round, spawnTracked, startSvc, table, tempDir, wholeOption } from './lib.mjs';

const { values: opt } = parseArgs({
  options: {
    runners: { type: 'string', default: '1000' },
    replicas: { type: 'string', default: '3' },
    rate: { type: 'string', default: '5000' },
    seconds: { type: 'string', default: '60' },
    window: { type: 'string', default: '5' },
    'commands-per-second': { type: 'string', default: '20' },
    'idle-seconds': { type: 'string', default: '10' },
    'event-bytes': { type: 'string', default: '500' },
    restart: { type: 'string', default: 'term' },
    'pool-max': { type: 'string', default: '10' },
    'storm-timeout': { type: 'string', default: '120' },
    profile: { type: 'boolean', default: false },
  },
  strict: true,
});
const N = {
  runners: wholeOption('runners', opt.runners, 1, 20_000),
  replicas: wholeOption('replicas', opt.replicas, 1, 8),
  rate: wholeOption('rate', opt.rate, 0, 100_000),
  seconds: wholeOption('seconds', opt.seconds, 1, 3600),
  window: wholeOption('window', opt.window, 1, 60),
  cps: wholeOption('commands-per-second', opt['commands-per-second'], 0, 500),
  idleSeconds: wholeOption('idle-seconds', opt['idle-seconds'], 0, 600),
  eventBytes: wholeOption('event-bytes', opt['event-bytes'], 10, 100_000),
  poolMax: wholeOption('pool-max', opt['pool-max'], 1, 200),
  stormTimeout: wholeOption('storm-timeout', opt['storm-timeout'], 5, 600),
};
if (!['term', 'kill'].includes(opt.restart)) {
  process.stderr.write(`--restart must be term or kill (got ${opt.restart})\n`);
  process.exit(2);
}
const log = (m) => process.stderr.write(`[fleet] ${m}\n`);
const TICK_MS = 50; // runner/sender.ts DEBOUNCE_MS: appends by other processes are picked up this long after
const r1 = (x) => round(x, 1);

// ---- open files ------------------------------------------------------------------------------------

const NEED_FILES = N.runners + 256;
function fileLimits() {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  const [soft, hard] = line.split(/\s{2,}/).slice(1, 3).map((v) => (v === 'unlimited' ? Infinity : Number(v)));
  return { soft, hard };
}
const limits = fileLimits();
if (limits.soft < NEED_FILES) {
  if (limits.hard < NEED_FILES || process.env.SVC_FLEET_REEXEC) {
    process.stderr.write(`--runners ${N.runners} needs ${NEED_FILES} open files; ulimit -n is ${limits.soft} (hard ${limits.hard}): raise it, or run fewer runners\n`);
    process.exit(2);
  }
  // Raise the soft limit for this process and the replicas it starts (they inherit it), and run again.
  log(`ulimit -n ${limits.soft} < ${NEED_FILES}: running again with it raised`);
  const again = spawnSync('sh', ['-c', `ulimit -n ${NEED_FILES} && exec "$@"`, 'sh', process.execPath, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, SVC_FLEET_REEXEC: '1' } });
  process.exit(again.status ?? 1);
}

requireBuild();
// Pairing, idle commands, ingest, drain, two starts and the storm, with room to spare.
installGuards(300 + N.runners / 5 + N.idleSeconds + N.seconds * 2 + N.stormTimeout);

// ---- measures of processes -------------------------------------------------------------------------

function rssKb(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  } catch {
    return NaN;
  }
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const loadavg = () => os.loadavg().map((x) => round(x, 2));

// ---- the replicas ----------------------------------------------------------------------------------

const pg = await freshPostgres();
onCleanup(() => pg.drop());
const dbEnv = { DATABASE_URL: pg.url };
const ports = await Promise.all(Array.from({ length: N.replicas }, () => freePort()));
const replicaEnv = (i) => ({
  PORT: String(ports[i]),
  CHECK_ANSWERS: 'false', // the production default (the test harness turns it on)
  SHUTDOWN_TIMEOUT_SECONDS: '5',
  DATABASE_POOL_MAX: String(N.poolMax),
});
/** replicas[i]: { server, up } — `up` is the balancer's health check: listening. */
const replicas = Array.from({ length: N.replicas }, () => ({ server: null, up: false, sockets: 0 }));
// --profile: replica 1's first process runs with --cpu-prof (written when the storm stops it): its self time
// by function, from pairing to the end of the ingest.
const profileDir = opt.profile ? tempDir('svc-fleet-prof-') : null;
async function startReplica(i, admin = false) {
  // (node refuses --cpu-prof in NODE_OPTIONS: a shell puts it after node, before the server's arguments)
  const wrap = profileDir && i === 0 && !replicas[0].server ? ['sh', '-c', `exec "$0" --cpu-prof --cpu-prof-dir=${profileDir} "$@"`] : undefined;
  const server = await startSvc({ admin, dbEnv, env: replicaEnv(i), wrap, timeoutMs: 120_000 });
  replicas[i].server = server;
  replicas[i].up = true;
  return server;
}

log(`machine: ${JSON.stringify(machine())}`);
log(`starting ${N.replicas} replicas on one database…`);
const first = await startReplica(0, true); // the admin is made on the first (the CLI, then the API)
await Promise.all(replicas.slice(1).map((_, k) => startReplica(k + 1)));
const admin = first.admin;
const api = first.api;
const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
onCleanup(() => sql.end({ timeout: 1 }));

// ---- pairing ---------------------------------------------------------------------------------------

log(`pairing ${N.runners} runners…`);
const t0 = performance.now();
const paired = new Array(N.runners);
{
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < N.runners) {
        const i = next++;
        const r = replicas[i % N.replicas].server;
        paired[i] = await pairRunner(api, r.url, `fleet-${i}`);
      }
    }),
  );
}
log(`paired in ${r1((performance.now() - t0) / 1000)} s`);

// ---- the simulated runners -------------------------------------------------------------------------

const makeEvent = benchEvents(N.eventBytes, 'fleet');
const caps = capabilities({ disabledCommands: [] });
let dials = 0;
/** The balancer: the up replica holding the fewest of our sockets (a down one when none is up: refused). */
function pick() {
  const up = replicas.map((r, i) => ({ r, i })).filter(({ r }) => r.up);
  const pool = up.length ? up : replicas.map((r, i) => ({ r, i }));
  return pool.reduce((a, b) => (b.r.sockets < a.r.sockets ? b : a));
}
const stats = { acked: 0, lags: [], errors: {}, commandsAnswered: 0 };
const readyWaiters = new Set();

class SimRunner {
  constructor(i, { runnerId, token }) {
    this.i = i;
    this.runnerId = runnerId;
    this.seq = 0;
    this.queue = []; // arrived, not sent: [event, arrivedAtMs]
    this.inFlight = null; // one batch per source (spool.ts): [event, arrivedAtMs][]
    this.budget = tokenBucket(EVENTS_FRAMES_PER_SECOND, EVENTS_FRAMES_BURST);
    this.waiting = false;
    this.retrying = null;
    this.ready = false;
    this.readyAt = 0;
    this.conn = new Connection({
      server: 'http://fleet.invalid',
      token,
      dial: (_url, headers) => {
        dials++;
        const { r, i: at } = pick();
        const socket = dialWs(`ws://127.0.0.1:${ports[at]}/runner`, headers);
        r.sockets++;
        socket.on('close', () => r.sockets--);
        return socket;
      },
      onReady: () => this.onReady(),
      onFrame: (f) => this.onFrame(f),
      onInvalid: (reason) => (stats.errors[`invalid: ${reason.slice(0, 60)}`] = (stats.errors[`invalid: ${reason.slice(0, 60)}`] ?? 0) + 1),
      onFatal: (code, reason) => {
        throw new Error(`runner ${i} closed for good: ${code} ${reason}`);
      },
      onDown: () => {
        this.ready = false;
        // runner/sender.ts: the batch in flight goes back to the spool, to be sent on the next connection.
        if (this.inFlight) this.queue.unshift(...this.inFlight);
        this.inFlight = null;
      },
    });
  }

  onReady() {
    this.ready = true;
    this.readyAt = performance.now();
    // runner/daemon.ts onReady: hello, profiles, capacity, then the spool.
    this.conn.send({ type: 'hello', version: VERSION, target: 'linux-x64', hostname: `fleet-${this.i}`, capabilities: caps });
    this.conn.send({ type: 'profiles', profiles: [] });
    this.conn.send({ type: 'capacity', maxConcurrentRuns: 2, running: 0 });
    this.pump();
    for (const w of readyWaiters) w();
  }

  async onFrame(f) {
    if (f.type === 'command') {
      const data = f.name === 'runner.ping' ? await runnerPing() : undefined;
      this.conn.send(data ? { type: 'result', requestId: f.requestId, ok: true, data } : { type: 'result', requestId: f.requestId, ok: false, error: { code: 'unsupported', message: 'not simulated' } });
      stats.commandsAnswered++;
    } else if (f.type === 'ack' && this.inFlight) {
      const now = performance.now();
      const acked = new Set(f.ids);
      for (const [e, at] of this.inFlight) if (acked.has(e.id)) stats.lags.push(now - at);
      stats.acked += acked.size;
      this.inFlight = this.inFlight.filter(([e]) => !acked.has(e.id));
      if (!this.inFlight.length) this.inFlight = null;
      this.pump();
    } else if (f.type === 'error') {
      stats.errors[f.code] = (stats.errors[f.code] ?? 0) + 1;
      // runner/sender.ts: after a server error (or dropped frames) the batch in flight is sent again 5 s later.
      const batch = this.inFlight;
      if (batch && !this.retrying) {
        this.retrying = setTimeout(() => {
          this.retrying = null;
          if (this.inFlight !== batch) return;
          this.queue.unshift(...batch);
          this.inFlight = null;
          this.pump();
        }, 5000);
      }
    }
  }

  arrive(n, nowMs, iso) {
    for (let k = 0; k < n; k++) this.queue.push([makeEvent(`f${this.i}-${this.seq++}`, iso), nowMs]);
    this.pump();
  }

  pump() {
    if (!this.ready || this.inFlight || !this.queue.length || this.waiting) return;
    if (!this.budget.take()) {
      this.waiting = true;
      setTimeout(() => ((this.waiting = false), this.pump()), Math.max(1, Math.ceil(this.budget.waitMs())));
      return;
    }
    const batch = this.queue.splice(0, MAX_BATCH);
    if (this.conn.send({ type: 'events', events: batch.map(([e]) => e) })) this.inFlight = batch;
    else this.queue.unshift(...batch);
  }

  get backlog() {
    return this.queue.length + (this.inFlight?.length ?? 0);
  }
}

const runners = paired.map((p, i) => new SimRunner(i, p));
const readyCount = () => runners.filter((r) => r.ready).length;
/** Resolves once `test()` holds, checked whenever a runner becomes ready (and every 500 ms). */
function until(test, timeoutMs, what) {
  return new Promise((ok, fail) => {
    const check = () => {
      if (!test()) return;
      done();
      ok();
    };
    const every = setInterval(check, 500);
    const timer = setTimeout(() => (done(), fail(new Error(`${what}: not within ${timeoutMs / 1000} s (${readyCount()} of ${N.runners} connected)`))), timeoutMs);
    const done = () => (clearInterval(every), clearTimeout(timer), readyWaiters.delete(check));
    readyWaiters.add(check);
    check();
  });
}
const settle = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- PostgreSQL: connections, waits, CPU -----------------------------------------------------------

async function pgActivity() {
  const rows = await sql`
    select pid, coalesce(application_name, '') as app, coalesce(state, '') as state, coalesce(wait_event_type, '') as wait,
           coalesce(wait_event, '') as event
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
  return rows;
}
const pgCpu = (pids) => sum(pids.map((p) => cpuMs(p) ?? 0));

// ---- memory per connected runner -------------------------------------------------------------------

const figures = { machine: machine(), settings: N, loadavgStart: loadavg() };
const replicaRss = () => replicas.map((r) => rssKb(r.server.proc.pid));
await settle(3000);
const rssBefore = replicaRss();
log(`RSS before: ${rssBefore.join(', ')} KB; connecting ${N.runners} runners…`);
const tc = performance.now();
runners.forEach((r) => r.conn.start());
await until(() => readyCount() === N.runners, 180_000, 'first connect');
const connectSeconds = (performance.now() - tc) / 1000;
log(`all connected in ${r1(connectSeconds)} s; spread ${replicas.map((r) => r.sockets).join(', ')}; settling…`);
await settle(Math.max(5000, N.runners * 5));
const rssAfter = replicaRss();
const held = await sql`select connected_instance, count(*)::int as n from runners where connected_instance is not null group by 1`;
figures.memory = {
  rssBeforeKb: rssBefore,
  rssAfterKb: rssAfter,
  kbPerRunner: r1((sum(rssAfter) - sum(rssBefore)) / N.runners),
  spread: replicas.map((r) => r.sockets),
  connectedInDb: sum(held.map((h) => h.n)),
  firstConnectSeconds: r1(connectSeconds),
};
log(`RSS after: ${rssAfter.join(', ')} KB → ${figures.memory.kbPerRunner} KB per runner`);

// ---- commands --------------------------------------------------------------------------------------

const auth = { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' };

/**
 * Requests at --commands-per-second until stop(), each `send()` resolving with its status and, when 200, what
 * to keep of it: { stop: () => Promise<{count, p50, p99, max, statuses, kept}> } (latencies of the 200s, ms).
 */
function rateLoad(send) {
  const latencies = [];
  const statuses = {};
  const kept = [];
  const pending = new Set();
  const one = async () => {
    const t = performance.now();
    try {
      const { status, keep } = await send();
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === 200) {
        latencies.push(performance.now() - t);
        if (keep) kept.push(keep);
      }
    } catch (e) {
      statuses[e.cause?.code ?? 'error'] = (statuses[e.cause?.code ?? 'error'] ?? 0) + 1;
    }
  };
  // As many as the time since the start calls for: a late timer (a busy machine) sends the ones it owes.
  const start = performance.now();
  let sent = 0;
  const timer = N.cps ? setInterval(() => {
    for (const due = Math.floor(((performance.now() - start) / 1000) * N.cps); sent < due; sent++) {
      const p = one();
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
  }, 1000 / N.cps) : null;
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all(pending);
      latencies.sort((a, b) => a - b);
      return { count: latencies.length, p50: r1(percentile(latencies, 50)), p99: r1(percentile(latencies, 99)), max: r1(latencies.at(-1)), statuses, kept };
    },
  };
}

/** svc's commands: runner.ping to a random runner through a random replica; with where each one's time went. */
function commandLoad() {
  const load = rateLoad(async () => {
    const runner = runners[Math.floor(Math.random() * runners.length)];
    const { server } = replicas[Math.floor(Math.random() * replicas.length)];
    const sentAt = Date.now();
    const res = await fetch(`${server.url}/api/runners/${runner.runnerId}/commands`, { method: 'POST', headers: auth, body: '{"name":"runner.ping"}' });
    const body = await res.text();
    return { status: res.status, keep: res.status === 200 ? { runnerId: runner.runnerId, sentAt, runnerTime: JSON.parse(body).data.time, doneAt: Date.now() } : null };
  });
  return {
    stop: async () => {
      const { kept, ...figures } = await load.stop();
      return { ...figures, hops: await hopsOf(kept) };
    },
  };
}

// ---- the floor: a command's path without svc (what the machine allows it) ---------------------------
// Two processes of their own on the same database, as the replica asked and the replica holding the runner
// are: an HTTP request to the first, which inserts a row and its NOTIFY in one statement; the second, listening,
// answers it (an update and its NOTIFY, one statement); the first, listening, reads the row and answers. No
// runner hop, no token, no svc code. Sent beside svc's commands, at the same rate, in the same phases: when
// the floor's p99 is above the goal too, the goal is beyond this machine's cores, not svc's code.
const FLOOR_ASKED = `
const http = require('node:http');
const sql = require('postgres')(process.env.FLOOR_DB, { max: 10, onnotice() {} });
const waiting = new Map();
let n = 0;
sql.listen('bench_floor_done', (id) => { const w = waiting.get(id); if (w) (waiting.delete(id), w()); }).then(() => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      const id = process.pid + '.' + n++;
      try {
        const done = new Promise((r) => waiting.set(id, r));
        await sql\`with i as (insert into bench_floor (id) values (\${id}) returning id) select pg_notify('bench_floor_new', id) from i\`;
        await done;
        const [row] = await sql\`select result from bench_floor where id = \${id}\`;
        res.end(JSON.stringify({ result: row.result }));
      } catch (e) {
        res.statusCode = 500;
        res.end(String(e));
      }
    });
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
});`;
const FLOOR_HOLDER = `
const sql = require('postgres')(process.env.FLOOR_DB, { max: 10, onnotice() {} });
sql.listen('bench_floor_new', (id) => {
  sql\`with u as (update bench_floor set result = \${new Date().toISOString()} where id = \${id} returning id) select pg_notify('bench_floor_done', id) from u\`.catch(() => {});
}).then(() => process.send({ ready: true }));`;
await sql`create table bench_floor (id text primary key, result text, created_at timestamptz not null default now())`;
const floorProcs = [FLOOR_ASKED, FLOOR_HOLDER].map((code) => spawnTracked(process.execPath, ['-e', code], { cwd: ROOT, env: { ...process.env, FLOOR_DB: pg.url }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
onCleanup(() => floorProcs.forEach((c) => c.kill('SIGKILL')));
const [floorPort] = await Promise.all(floorProcs.map((c) => new Promise((resolve, reject) => (c.once('message', (m) => resolve(m.port)), c.once('exit', (code) => reject(new Error(`a floor process exited ${code}`)))))));
function floorLoad() {
  const load = rateLoad(async () => {
    const res = await fetch(`http://127.0.0.1:${floorPort}/`, { method: 'POST', body: '{}' });
    await res.text();
    return { status: res.status };
  });
  return { stop: async () => (({ kept, ...figures }) => figures)(await load.stop()) };
}

/**
 * Where a command's time went, p50/p99 of each hop (one clock: all on this machine): `in` request sent →
 * its row inserted (HTTP, the token, the runner's presence); `toRunner` → the runner ran it (the frame
 * sent here or through NOTIFY by the replica holding the socket, and the runner's event loop); `answer` →
 * the answer stored (the result frame, its update); `out` → the HTTP answer received (the requester woken,
 * through NOTIFY when another replica stored it, its final update, the response). From runner_commands'
 * created_at and finished_at and the ping's own time.
 */
async function hopsOf(hops) {
  const rows = await sql`
    select runner_id, result ->> 'time' as time, extract(epoch from created_at) * 1000 as created, extract(epoch from finished_at) * 1000 as finished
      from runner_commands where name = 'runner.ping' and status = 'done'`;
  const byKey = new Map(rows.map((r) => [`${r.runner_id} ${r.time}`, r]));
  const parts = { in: [], toRunner: [], answer: [], out: [] };
  const each = [];
  for (const h of hops) {
    const row = byKey.get(`${h.runnerId} ${h.runnerTime}`);
    if (!row) continue;
    const ran = Date.parse(h.runnerTime);
    const one = { in: Number(row.created) - h.sentAt, toRunner: ran - Number(row.created), answer: Number(row.finished) - ran, out: h.doneAt - Number(row.finished) };
    for (const k of Object.keys(parts)) parts[k].push(one[k]);
    each.push({ total: h.doneAt - h.sentAt, ...one });
  }
  const out = {};
  for (const [k, xs] of Object.entries(parts)) {
    xs.sort((a, b) => a - b);
    out[k] = { p50: r1(percentile(xs, 50)), p99: r1(percentile(xs, 99)) };
  }
  // The three slowest commands, hop by hop: where a tail comes from (one hop, or all of them).
  out.slowest = each.sort((a, b) => b.total - a.total).slice(0, 3).map((e) => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, Math.round(v)])));
  return out;
}

if (N.idleSeconds > 0 && N.cps > 0) {
  log(`commands without ingest for ${N.idleSeconds} s…`);
  const load = commandLoad();
  const floor = floorLoad();
  await settle(N.idleSeconds * 1000);
  figures.commandsIdle = await load.stop();
  figures.floorIdle = await floor.stop();
  log(`  idle: ${JSON.stringify(figures.commandsIdle)}; the floor: ${JSON.stringify(figures.floorIdle)}`);
}

// ---- sustained ingest ------------------------------------------------------------------------------

/** Knuth's Poisson sample (small means: a runner's arrivals in one tick). */
function poisson(mean) {
  const l = Math.exp(-mean);
  let k = 0;
  let p = 1;
  for (;;) {
    p *= Math.random();
    if (p <= l) return k;
    k++;
  }
}

log(`ingest: ${N.rate} events/s for ${N.seconds} s across ${N.runners} runners, commands at ${N.cps}/s…`);
// Arrivals over the time since the last tick, not per tick: a tick this process runs late (it shares the
// cores with the replicas and PostgreSQL) brings more events, so the offered rate stays --rate.
let offered = 0;
let lastTick = performance.now();
const arrivals = setInterval(() => {
  const now = performance.now();
  const mean = (N.rate * (now - lastTick)) / 1000 / N.runners;
  lastTick = now;
  const iso = new Date().toISOString();
  for (const r of runners) {
    const n = poisson(mean);
    if (n) {
      offered += n;
      r.arrive(n, now, iso);
    }
  }
}, TICK_MS);
const windows = [];
const pgSamples = { maxConnections: 0, byState: {}, lockWaitSamples: 0, samples: 0, maxActive: 0 };
const cpuOf = () => ({ replicas: replicas.map((r) => cpuMs(r.server.proc.pid) ?? 0), bench: process.cpuUsage() });
// Per event, which hardly depends on how busy the machine is: the replicas' and PostgreSQL's CPU, and the
// transactions committed in the database (pg_stat_database: every statement outside a transaction is one).
const commits = async () => Number((await sql`select xact_commit::text as c from pg_stat_database where datname = current_database()`)[0].c);
const totals = { replicaCpuMs: 0, postgresCpuMs: 0, commits0: await commits() };
const load = commandLoad();
const floor = floorLoad();
const ingestStart = performance.now();
let pids = (await pgActivity()).map((r) => r.pid);
let last = { t: performance.now(), acked: stats.acked, cpu: cpuOf(), pg: pgCpu(pids) };
const sampler = setInterval(async () => {
  const rows = await pgActivity().catch(() => []);
  pgSamples.samples++;
  pgSamples.maxConnections = Math.max(pgSamples.maxConnections, rows.length);
  const active = rows.filter((r) => r.state === 'active').length;
  pgSamples.maxActive = Math.max(pgSamples.maxActive, active);
  for (const r of rows) {
    const key = `${r.state || 'none'}${r.wait ? `/${r.wait}:${r.event}` : ''}`;
    pgSamples.byState[key] = (pgSamples.byState[key] ?? 0) + 1;
    if (r.wait === 'Lock') pgSamples.lockWaitSamples++;
  }
  pids = rows.map((r) => r.pid);
}, 1000);
const windowTimer = setInterval(() => {
  const now = performance.now();
  const lags = stats.lags.splice(0).sort((a, b) => a - b);
  const cpu = cpuOf();
  const pgNow = pgCpu(pids);
  const span = now - last.t;
  const w = {
    atSeconds: r1((now - ingestStart) / 1000),
    ackedPerSecond: Math.round(((stats.acked - last.acked) * 1000) / span),
    lagP50Ms: r1(percentile(lags, 50)),
    lagP99Ms: r1(percentile(lags, 99)),
    backlog: sum(runners.map((r) => r.backlog)),
    replicaCpuPct: cpu.replicas.map((c, i) => Math.round(((c - last.cpu.replicas[i]) / span) * 100)),
    postgresCpuPct: Math.round(((pgNow - last.pg) / span) * 100), // its backends for this database
    benchCpuPct: Math.round(((cpu.bench.user + cpu.bench.system - last.cpu.bench.user - last.cpu.bench.system) / 1000 / span) * 100),
    loadavg1: loadavg()[0],
  };
  totals.replicaCpuMs += sum(cpu.replicas) - sum(last.cpu.replicas);
  totals.postgresCpuMs += pgNow - last.pg;
  windows.push(w);
  log(`  ${JSON.stringify(w)}`);
  last = { t: now, acked: stats.acked, cpu, pg: pgNow };
}, N.window * 1000);
await settle(N.seconds * 1000);
clearInterval(arrivals);
clearInterval(windowTimer);
const arrivalsEnd = performance.now();
const ingestSeconds = (arrivalsEnd - ingestStart) / 1000;
const ackedInRun = stats.acked;
const ackedInWindows = sum(windows.map((w) => w.ackedPerSecond * N.window)); // about: the windows' events
const commitsInRun = (await commits()) - totals.commits0;
figures.commandsLoaded = await load.stop();
figures.floorLoaded = await floor.stop();
// The same-run baselines: the round trip without ingest, and the floor's under the same ingest.
if (figures.commandsIdle) figures.commandP99LoadedOverIdle = round(figures.commandsLoaded.p99 / figures.commandsIdle.p99, 2);
figures.commandP99OverFloorP99 = round(figures.commandsLoaded.p99 / figures.floorLoaded.p99, 2);
log(`  commands under load: ${JSON.stringify(figures.commandsLoaded)}; the floor: ${JSON.stringify(figures.floorLoaded)}`);
log('draining the backlog…');
await until(() => runners.every((r) => r.backlog === 0), 120_000, 'drain');
const drainSeconds = (performance.now() - arrivalsEnd) / 1000; // from the last arrival
clearInterval(sampler);
const [{ stored }] = await sql`select count(*)::int as stored from runner_events where source = 'fleet'`;
const steady = windows.slice(1); // the first window holds the start
const third = Math.max(1, Math.floor(steady.length / 3));
const avg = (ws, k) => sum(ws.map((w) => w[k])) / ws.length;
figures.ingest = {
  offered,
  offeredPerSecond: Math.round(offered / ingestSeconds),
  ackedPerSecond: Math.round(ackedInRun / ingestSeconds),
  // Sustained: the windows after the first (the start) acked what arrived (the last events of the run are
  // acked during the drain, so the whole run's acked ÷ offered reads low in a short run).
  ackedOverOffered: round(avg(steady, 'ackedPerSecond') / N.rate, 3),
  replicaCpuMsPer1000Events: r1((totals.replicaCpuMs / ackedInWindows) * 1000),
  postgresCpuMsPer1000Events: r1((totals.postgresCpuMs / ackedInWindows) * 1000),
  commitsPer1000Events: r1((commitsInRun / ackedInRun) * 1000),
  stored,
  drainSeconds: r1(drainSeconds),
  lagP99FirstThirdMs: r1(avg(steady.slice(0, third), 'lagP99Ms')),
  lagP99LastThirdMs: r1(avg(steady.slice(-third), 'lagP99Ms')),
  backlogFirstThird: Math.round(avg(steady.slice(0, third), 'backlog')),
  backlogLastThird: Math.round(avg(steady.slice(-third), 'backlog')),
  replicaCpuPct: steady.length ? replicas.map((_, i) => Math.round(avg(steady.map((w) => ({ c: w.replicaCpuPct[i] })), 'c'))) : [],
  postgresCpuPct: steady.length ? Math.round(avg(steady, 'postgresCpuPct')) : null,
  benchCpuPct: steady.length ? Math.round(avg(steady, 'benchCpuPct')) : null,
  windows,
};
// Growing: the backlog at the end is more than a second of events, and larger than at the start.
figures.ingest.lagGrowing = figures.ingest.backlogLastThird > N.rate && figures.ingest.backlogLastThird > 2 * figures.ingest.backlogFirstThird;
figures.postgres = { poolMaxPerReplica: N.poolMax, ...pgSamples };
figures.errors = stats.errors;

// ---- connect storm after a restart of every replica -----------------------------------------------

log(`storm: ${opt.restart === 'kill' ? 'kill -9' : 'SIGTERM'} of all ${N.replicas} replicas, then start them again…`);
const dialsBefore = dials;
const tStop = performance.now();
for (const r of replicas) r.up = false;
await Promise.all(replicas.map((r) => r.server.stop(opt.restart === 'kill' ? 'SIGKILL' : 'SIGTERM')));
const stoppedSeconds = (performance.now() - tStop) / 1000;
await Promise.all(replicas.map((r) => r.server.cleanup()));
if (profileDir) {
  const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
  figures.profile = file ? await cpuProfileTop(join(profileDir, file), 25) : { error: 'no profile written' };
  for (const t of figures.profile.top ?? []) log(`  ${String(t.percent).padStart(5)} %  ${t.fn}  ${t.where}`);
}
const listening = [];
await Promise.all(replicas.map((_, i) => startReplica(i).then(() => listening.push(performance.now()))));
const lastListening = Math.max(...listening);
const back = [];
const sinceStop = () => {
  for (const r of runners) if (r.ready && r.readyAt > tStop && !r.counted) (r.counted = true), back.push(r.readyAt - tStop);
  return back.length === N.runners;
};
await until(sinceStop, N.stormTimeout * 1000, 'storm');
const tBack = Math.max(...back) + tStop;
back.sort((a, b) => a - b);
figures.storm = {
  restart: opt.restart,
  secondsToStop: r1(stoppedSeconds),
  secondsFromStopToAllBack: r1((tBack - tStop) / 1000),
  secondsFromLastListeningToAllBack: r1((tBack - lastListening) / 1000),
  backP50Seconds: r1(percentile(back, 50) / 1000),
  backP90Seconds: r1(percentile(back, 90) / 1000),
  dials: dials - dialsBefore,
  spread: replicas.map((r) => r.sockets),
};
log(`  ${JSON.stringify(figures.storm)}`);
const rows = await pgActivity();
figures.postgres.connectionsAfterStorm = rows.length;
figures.loadavgEnd = loadavg();

// ---- the end ---------------------------------------------------------------------------------------

runners.forEach((r) => r.conn.stop());
await Promise.all(replicas.map((r) => r.server.stop('SIGTERM')));
await Promise.all(replicas.map((r) => r.server.cleanup()));
await sql.end({ timeout: 1 });
await pg.drop();

const goals = [
  // Issue #41's goals are for 1,000 runners: a brief run (bench:all) shows its figures without judging them.
  { figure: `${N.runners} runners back after a restart of ${N.replicas} replicas (s from the stop)`, value: figures.storm.secondsFromStopToAllBack, goal: '< 30 (1,000)', met: N.runners >= 1000 ? figures.storm.secondsFromStopToAllBack < 30 : null },
  { figure: 'replica RSS per connected runner (KB)', value: figures.memory.kbPerRunner, goal: '< 100 (1,000)', met: N.runners >= 1000 ? figures.memory.kbPerRunner < 100 : null },
  { figure: `ingest at ${N.rate}/s: acked ÷ offered; lag growing`, value: `${figures.ingest.ackedOverOffered}; ${figures.ingest.lagGrowing ? 'yes' : 'no'}`, goal: '≈ 1; no', met: figures.ingest.ackedOverOffered >= 0.98 && !figures.ingest.lagGrowing },
  { figure: `command round trip p99 under that load (ms)`, value: figures.commandsLoaded.p99, goal: '< 200', met: figures.commandsLoaded.p99 < 200 },
  // Not a goal of svc's: what the machine allows a command's path (two processes, PostgreSQL, two NOTIFYs).
  { figure: `  the floor's round trip p99 under that load (ms)`, value: figures.floorLoaded.p99, goal: '(what the machine allows)', met: null },
];
figures.goals = goals;
const i = figures.ingest;
console.log(
  table([
    ['figure', 'value'],
    ['runners, replicas, pool per replica', `${N.runners}, ${N.replicas}, ${N.poolMax}`],
    ['first connect: all welcomed (s); spread', `${figures.memory.firstConnectSeconds}; ${figures.memory.spread.join('/')}`],
    ['replica RSS before / after (KB)', `${sum(rssBefore)} / ${sum(rssAfter)} → ${figures.memory.kbPerRunner} KB per runner`],
    ['commands, no ingest: p50 / p99 / max (ms)', figures.commandsIdle ? `${figures.commandsIdle.p50} / ${figures.commandsIdle.p99} / ${figures.commandsIdle.max} (${figures.commandsIdle.count})` : '—'],
    ['commands under ingest: p50 / p99 / max (ms)', `${figures.commandsLoaded.p50} / ${figures.commandsLoaded.p99} / ${figures.commandsLoaded.max} (${figures.commandsLoaded.count}, ${JSON.stringify(figures.commandsLoaded.statuses)})`],
    ...['floorIdle', 'floorLoaded'].filter((k) => figures[k]).map((k) => [`the floor (no svc), ${k === 'floorIdle' ? 'no ingest' : 'under ingest'}: p50 / p99 / max (ms)`, `${figures[k].p50} / ${figures[k].p99} / ${figures[k].max} (${figures[k].count}, ${JSON.stringify(figures[k].statuses)})`]),
    ['command p99 under ingest ÷ the floor\'s', String(figures.commandP99OverFloorP99)],
    ...['commandsIdle', 'commandsLoaded'].filter((k) => figures[k]).flatMap((k) => [
      [`  ${k === 'commandsIdle' ? 'no ingest' : 'under ingest'}: p50/p99 by hop (ms)`, Object.entries(figures[k].hops).filter(([h]) => h !== 'slowest').map(([h, v]) => `${h} ${v.p50}/${v.p99}`).join(', ')],
      [`  ${k === 'commandsIdle' ? 'no ingest' : 'under ingest'}: the slowest, in/toRunner/answer/out (ms)`, figures[k].hops.slowest.map((e) => `${e.total} = ${e.in}+${e.toRunner}+${e.answer}+${e.out}`).join('; ')],
    ]),
    ['ingest offered / acked (events/s)', `${i.offeredPerSecond} / ${i.ackedPerSecond} (${i.stored} of ${i.offered} stored, drained in ${i.drainSeconds} s)`],
    ['lag p99 first / last third (ms)', `${i.lagP99FirstThirdMs} / ${i.lagP99LastThirdMs}`],
    ['backlog first / last third (events)', `${i.backlogFirstThird} / ${i.backlogLastThird}${i.lagGrowing ? ' — GROWING' : ''}`],
    ['CPU %: replicas / PostgreSQL / this bench', `${i.replicaCpuPct.join('+')} / ${i.postgresCpuPct} / ${i.benchCpuPct}`],
    ['per 1,000 events: replica CPU ms / PostgreSQL CPU ms / commits', `${i.replicaCpuMsPer1000Events} / ${i.postgresCpuMsPer1000Events} / ${i.commitsPer1000Events}`],
    ['PostgreSQL connections: max / max active / lock-wait samples', `${figures.postgres.maxConnections} / ${figures.postgres.maxActive} / ${figures.postgres.lockWaitSamples}`],
    [`storm (${opt.restart}): all back from stop / from last listening (s)`, `${figures.storm.secondsFromStopToAllBack} / ${figures.storm.secondsFromLastListeningToAllBack} (p50 ${figures.storm.backP50Seconds}, p90 ${figures.storm.backP90Seconds}; ${figures.storm.dials} dials)`],
    ['load average start → end', `${figures.loadavgStart.join(' ')} → ${figures.loadavgEnd.join(' ')}`],
  ]),
);
console.log(JSON.stringify(figures));
process.exit(0);
