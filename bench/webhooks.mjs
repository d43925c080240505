#!/usr/bin/env node
// Outbound webhook figures on PostgreSQL (docs/performance.md, "Outbound webhooks"):
//   1. deliveries/s to a local receiver (allowlisted loopback) with 1 server process, then with 3;
//   2. time from event to first attempt when idle, p50/p99 (1 process, one event at a time);
//   baseline, same run: a bare sign-and-POST loop (HMAC-SHA256 + a fresh-connection POST of the same
//   body, 16 at a time — the worker's concurrency per process), giving the ratios;
//   and, to show what PostgreSQL itself costs on the machine (issue #17: "where a dependency itself is
//   the limit, show it with a minimal app"), a minimal durable queue in this process on the same
//   PostgreSQL: the same loop, but each delivery claimed from a table with a lease (one UPDATE … FOR
//   UPDATE SKIP LOCKED … RETURNING for the free slots) and marked delivered after its POST (one UPDATE):
//   the least a delivery that survives a crash costs, without svc's attempts, circuits or guard.
// "Event" is the moment the catalogue event is written to the outbox, as the hub's ingest does; the
// figure includes NOTIFY, dispatch, the leased claim, the address guard, signing and the POST.
//
//   npm run build && node --import tsx bench/webhooks.mjs [--deliveries 2000] [--rounds 2] [--events 100] [--dead-backlog 0]
//                                                        [--profile-dir DIR: the first server under node --cpu-prof; its top self-time functions are printed]
// Loopback only; bounded counts; every process and database it makes is removed at the end.
import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { buildEnvelope, eventId } from '../functions/webhooks/envelope.ts';
import { freshPostgres } from '../test/helpers/db.ts';
import { startServer } from '../test/helpers/server.ts';
import { cpuMs, cpuProfileTop, fmt, installGuards, machine, median, percentile, problemLines, round, spawnTracked, table } from './lib.mjs';

const { values: opt } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '2' },
    events: { type: 'string', default: '100' },
    'dead-backlog': { type: 'string', default: '0' },
    'profile-dir': { type: 'string' },
  },
});
const N = { deliveries: Number(opt.deliveries), rounds: Number(opt.rounds), events: Number(opt.events), deadBacklog: Number(opt['dead-backlog']) };
const CONCURRENCY = 16;
const log = (m) => process.stderr.write(m + '\n');
installGuards(900);

// The receiver runs in its own process and reports each request's arrival time (epoch ms, µs precision).
const RECEIVER = `
const http = require('node:http');
const now = () => performance.timeOrigin + performance.now();
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    process.send({ t: now(), id: req.headers['x-svc-delivery'] || req.headers['x-bare'] || '', event: req.headers['x-svc-event'] || '' });
    res.end('ok');
  });
});
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
`;

const receiver = spawnTracked(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
const port = await new Promise((r) => receiver.on('message', (m) => m.port && r(m.port)));
const listeners = new Set();
receiver.on('message', (m) => m.t && listeners.forEach((fn) => fn(m)));
/** Resolves once `count` requests arrived; each arrival is also passed to `each`. */
const arrivals = (count, each = () => {}) =>
  new Promise((resolve) => {
    let n = 0;
    const fn = (m) => {
      each(m);
      if (++n === count) (listeners.delete(fn), resolve());
    };
    listeners.add(fn);
  });

const envelope = (type) => buildEnvelope({ id: eventId('bench', randomUUID()), type, ts: new Date(), project: { id: 'bench-project', repo: 'acme/bench' }, raw: { slot: 'w1', issue: 1, data: { title: 'Benchmark', pr: { number: 1, url: 'https://github.com/acme/bench/pull/1' } } } });

const LOOP_SECRET = 'bench-secret-bench-secret-bench-secret-abc';

/** What both baselines do per delivery: sign the body and POST it to `path` on a fresh connection. */
const signedPost = (body, path) =>
  new Promise((ok, fail) => {
    const t = Math.floor(Date.now() / 1000);
    const sig = createHmac('sha256', LOOP_SECRET).update(`${t}.`).update(body).digest('hex');
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent: false, headers: { 'content-type': 'application/json', 'x-bare': 'x', 'x-svc-signature': `t=${t},v1=${sig}`, 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', ok);
    });
    req.on('error', fail);
    req.end(body);
  });

/** Baseline: sign and POST each body on a fresh connection, CONCURRENCY at a time. */
async function bareLoop(count) {
  const bodies = Array.from({ length: count }, () => JSON.stringify(envelope('pr.merged')));
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => { while (next < count) await signedPost(bodies[next++], '/bare'); }));
  return count / ((performance.now() - started) / 1000);
}

/**
 * Baseline 2: the bare loop with durability — rows claimed from bench_queue with a lease, CONCURRENCY in
 * flight, each marked delivered after its POST. Same bodies, signing and POST as the bare loop.
 */
async function durableLoop(db, count, tag) {
  const rows = Array.from({ length: count }, (_, i) => ({ id: `${tag}.${i}`, body: JSON.stringify(envelope('pr.merged')) }));
  for (let i = 0; i < rows.length; i += 1000) await db`insert into bench_queue ${db(rows.slice(i, i + 1000), 'id', 'body')}`;
  const started = performance.now();
  let inFlight = 0;
  let delivered = 0;
  await new Promise((resolve, reject) => {
    let pumping = false;
    const pump = async () => {
      if (pumping) return;
      pumping = true;
      try {
        while (inFlight < CONCURRENCY) {
          const claimed = await db`
            update bench_queue q set lease_until = now() + interval '30 seconds', attempts = q.attempts + 1
             where q.id in (select id from bench_queue where status = 'pending' and (lease_until is null or lease_until < now())
                            order by id limit ${CONCURRENCY - inFlight} for update skip locked)
            returning q.id, q.body`;
          if (claimed.length === 0) break;
          for (const r of claimed) {
            inFlight++;
            signedPost(r.body, '/durable')
              .then(() => db`update bench_queue set status = 'delivered', delivered_at = now(), lease_until = null where id = ${r.id}`)
              .then(() => {
                inFlight--;
                if (++delivered === count) resolve();
                else void pump();
              }, reject);
          }
        }
      } catch (e) {
        reject(e);
      } finally {
        pumping = false;
      }
    };
    void pump();
  });
  return count / ((performance.now() - started) / 1000);
}

const pg = await freshPostgres();
const servers = [];
const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
// The durable baseline's own pool, as many connections as a server process's (DATABASE_POOL_MAX's default).
const durableSql = postgres(pg.url, { max: 10, onnotice: () => {} });
const figures = { ...machine(), deliveries: N.deliveries, rounds: N.rounds, deadBacklog: N.deadBacklog, concurrencyPerProcess: CONCURRENCY, runs: [] };
try {
  const env = { APP_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') };
  // --cpu-prof is not allowed in NODE_OPTIONS: a shell execs node with it in front of the helper's arguments.
  const wrap = opt['profile-dir'] ? ['/bin/sh', '-c', `exec "$0" --cpu-prof --cpu-prof-dir='${opt['profile-dir']}' "$@"`] : undefined;
  if (wrap) mkdirSync(opt['profile-dir'], { recursive: true });
  const a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url }, wrap });
  servers.push(a);
  await a.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } });
  const made = await a.api('/api/webhooks', { method: 'POST', json: { url: `http://127.0.0.1:${port}/hook`, events: ['pr.merged'] } });
  if (made.status !== 201) throw new Error(`creating the webhook failed: ${made.status}`);
  if (N.deadBacklog > 0) {
    // A receiver that is gone: its circuit open, its deliveries pending and due (older than any of the
    // runs'), as they pile up while it stays away. It wants another event type, so the runs add none.
    const dead = await a.api('/api/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/gone', events: ['pr.closed'] } });
    if (dead.status !== 201) throw new Error(`creating the dead webhook failed: ${dead.status}`);
    const { id } = await dead.json();
    await sql`update webhooks set circuit_state = 'open', circuit_opened_at = now() + interval '1 day', consecutive_failures = 20 where id = ${id}`;
    await sql`
      insert into outbound_deliveries (id, webhook_id, event_type, event_id, body, status, next_attempt_at)
      select 'gone-' || g, ${id}, 'pr.closed', 'gone-' || g, '{}', 'pending', now() - interval '1 hour' + make_interval(secs => g / 10.0)
        from generate_series(1, ${N.deadBacklog}) g`;
    log(`dead webhook with ${N.deadBacklog} due deliveries, circuit open`);
  }

  const insert = async (count) => {
    const rows = Array.from({ length: count }, () => {
      const e = envelope('pr.merged');
      return { id: e.id, type: e.type, project_id: 'bench-project', body: JSON.stringify(e) };
    });
    for (let i = 0; i < rows.length; i += 1000) await sql`insert into webhook_outbox ${sql(rows.slice(i, i + 1000), 'id', 'type', 'project_id', 'body')}`;
    await sql`select pg_notify('svc_webhooks', 'outbox')`;
  };
  // CPU time per delivery (ms, /proc: Linux) of this process (the bare loop, the minimal queue), of the
  // server processes, and of this database's PostgreSQL backends: what each loop costs, whatever the
  // other load on the machine does to its rate. The backends are the ones connected at the start.
  const cpuPerDelivery = async (serverPids = []) => {
    const backends = (await sql`select pid from pg_stat_activity where datname = current_database()`).map((r) => r.pid);
    const sum = (pids) => pids.reduce((t, pid) => t + (cpuMs(pid) ?? 0), 0);
    const at = { bench: process.cpuUsage(), servers: sum(serverPids), postgres: sum(backends), receiver: sum([receiver.pid]) };
    return async () => {
      const u = process.cpuUsage(at.bench);
      const per = (ms) => round(ms / N.deliveries, 3);
      return { bench: per((u.user + u.system) / 1000), ...(serverPids.length ? { servers: per(sum(serverPids) - at.servers) } : {}), postgres: per(sum(backends) - at.postgres), receiver: per(sum([receiver.pid]) - at.receiver) };
    };
  };
  const svcRun = async (count) => {
    const started = performance.now();
    const done = arrivals(count);
    await insert(count);
    await done;
    return count / ((performance.now() - started) / 1000);
  };

  await sql`create table bench_queue (id text primary key, body text not null, status text not null default 'pending', attempts int not null default 0, lease_until timestamptz, delivered_at timestamptz)`;
  await sql`create index bench_queue_pending on bench_queue (id) where status = 'pending'`;

  // Warm-up: connections, JIT.
  await bareLoop(200);
  await durableLoop(durableSql, 200, 'warm');
  await svcRun(200);
  // Statistics, as on any database in use: autovacuum analyzes a table after its first few hundred
  // changes, but only once a minute, and this database is seconds old. Without them the planner takes
  // every table for a handful of rows and answers a single-row update with a sequential scan.
  await sql`analyze`;

  for (const processes of [1, 3]) {
    if (processes === 3) servers.push(...(await Promise.all([1, 2].map(() => startServer({ env, dbEnv: { DATABASE_URL: pg.url } })))));
    for (let round = 1; round <= N.rounds; round++) {
      log(`${processes} process(es), round ${round}: bare loop…`);
      const cpu = {};
      let measured = await cpuPerDelivery();
      const bare = await bareLoop(N.deliveries);
      cpu.bare = await measured();
      let durable = null;
      if (processes === 1) {
        log(`${processes} process(es), round ${round}: durable loop…`);
        measured = await cpuPerDelivery();
        durable = await durableLoop(durableSql, N.deliveries, `r${round}`);
        cpu.durable = await measured();
      }
      log(`${processes} process(es), round ${round}: svc…`);
      measured = await cpuPerDelivery(servers.map((s) => s.proc.pid));
      const svc = await svcRun(N.deliveries);
      cpu.svc = await measured();
      figures.runs.push({ processes, round, barePerSecond: Math.round(bare), ...(durable === null ? {} : { durablePerSecond: Math.round(durable) }), svcPerSecond: Math.round(svc), cpuMsPerDelivery: cpu });
    }
    if (processes === 1) {
      // Idle latency: one event at a time, the system quiet in between.
      log(`event → first attempt, ${N.events} events one at a time…`);
      const svcLat = [];
      const bareLat = [];
      for (let i = 0; i < N.events; i++) {
        await new Promise((r) => setTimeout(r, 100));
        let t0 = 0;
        const got = arrivals(1, (m) => svcLat.push(m.t - t0));
        t0 = performance.timeOrigin + performance.now();
        await insert(1);
        await got;
        await new Promise((r) => setTimeout(r, 100));
        let b0 = 0;
        const gotBare = arrivals(1, (m) => bareLat.push(m.t - b0));
        b0 = performance.timeOrigin + performance.now();
        await bareLoopOne();
        await gotBare;
      }
      svcLat.sort((x, y) => x - y);
      bareLat.sort((x, y) => x - y);
      figures.latency = {
        events: N.events,
        svc: { p50: round(percentile(svcLat, 50), 2), p99: round(percentile(svcLat, 99), 2) },
        bare: { p50: round(percentile(bareLat, 50), 2), p99: round(percentile(bareLat, 99), 2) },
      };
    }
  }
  // Every delivery recorded as delivered with one attempt (the receiver answers before the record is written).
  for (let i = 0; i < 100; i++) {
    const [{ delivered, attempts, total }] = await sql`
      select count(*) filter (where status = 'delivered')::int as delivered, coalesce(sum(attempts), 0)::int as attempts, count(*)::int as total from outbound_deliveries`;
    figures.check = { total, delivered, attempts };
    if (delivered === total) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (N.deadBacklog > 0) {
    const [{ touched }] = await sql`select count(*)::int as touched from outbound_deliveries where id like 'gone-%' and (attempts > 0 or status <> 'pending')`;
    figures.deadBacklogTouched = touched; // must stay 0: an open circuit's deliveries wait
    if (touched) log(`WARNING: ${touched} deliveries of the dead webhook were attempted or changed`);
  }
  figures.problems = servers.flatMap((s) => problemLines(s.output())).slice(0, 20);
  if (wrap) {
    await a.stop('SIGTERM');
    const file = readdirSync(opt['profile-dir']).filter((f) => f.endsWith('.cpuprofile')).sort().at(-1);
    if (file) figures.profile = { file: join(opt['profile-dir'], file), ...(await cpuProfileTop(join(opt['profile-dir'], file), 15)) };
  }
} finally {
  await sql.end().catch(() => {});
  await durableSql.end().catch(() => {});
  for (const s of servers) await s.cleanup().catch(() => {});
  await pg.drop().catch(() => {});
  receiver.kill('SIGKILL');
}

async function bareLoopOne() {
  const body = JSON.stringify(envelope('pr.merged'));
  const t = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', 'bench-secret').update(`${t}.`).update(body).digest('hex');
  await new Promise((ok, fail) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/bare', agent: false, headers: { 'content-type': 'application/json', 'x-bare': 'x', 'x-svc-signature': `t=${t},v1=${sig}` } }, (res) => (res.resume(), res.on('end', ok)));
    req.on('error', fail);
    req.end(body);
  });
}

const rows = [['run', 'deliveries/s', 'bare loop /s', 'svc / bare']];
for (const p of [1, 3]) {
  const runs = figures.runs.filter((r) => r.processes === p);
  const svc = median(runs.map((r) => r.svcPerSecond));
  const bare = median(runs.map((r) => r.barePerSecond));
  figures[`processes${p}`] = { svcPerSecond: Math.round(svc), barePerSecond: Math.round(bare), ratio: round(svc / bare, 3) };
  rows.push([`${p} server process${p > 1 ? 'es' : ''}`, Math.round(svc), Math.round(bare), fmt(svc / bare, 3)]);
}
{
  const runs = figures.runs.filter((r) => r.processes === 1);
  const durable = median(runs.map((r) => r.durablePerSecond));
  const bare = median(runs.map((r) => r.barePerSecond));
  const svc = median(runs.map((r) => r.svcPerSecond));
  figures.durable1 = { durablePerSecond: Math.round(durable), durableOverBare: round(durable / bare, 3), svcOverDurable: round(svc / durable, 3) };
  rows.push(['minimal durable queue (1 process)', Math.round(durable), Math.round(bare), fmt(durable / bare, 3)]);
  rows.push(['svc / minimal durable queue', '', '', fmt(svc / durable, 3)]);
  const cpu = (loop, who) => median(runs.map((r) => r.cpuMsPerDelivery[loop][who] ?? 0));
  figures.cpu1 = {
    bare: { bench: cpu('bare', 'bench'), receiver: cpu('bare', 'receiver') },
    durable: { bench: cpu('durable', 'bench'), postgres: cpu('durable', 'postgres'), receiver: cpu('durable', 'receiver') },
    svc: { server: cpu('svc', 'servers'), postgres: cpu('svc', 'postgres'), receiver: cpu('svc', 'receiver'), bench: cpu('svc', 'bench') },
  };
}
const lat = figures.latency;
figures.latency.ratioP50 = round(lat.svc.p50 / lat.bare.p50, 2);
figures.latency.ratioP99 = round(lat.svc.p99 / lat.bare.p99, 2);
console.log(table(rows));
console.log();
console.log(table([
  ['event → first attempt (idle)', 'p50 ms', 'p99 ms'],
  ['svc (1 process)', fmt(lat.svc.p50), fmt(lat.svc.p99)],
  ['bare sign-and-POST', fmt(lat.bare.p50), fmt(lat.bare.p99)],
  ['svc / bare', fmt(figures.latency.ratioP50), fmt(figures.latency.ratioP99)],
]));
console.log();
console.log(table([
  ['CPU ms per delivery, 1 process', 'the loop\'s process', 'PostgreSQL', 'receiver'],
  ['bare sign-and-POST', fmt(figures.cpu1.bare.bench, 3), '', fmt(figures.cpu1.bare.receiver, 3)],
  ['minimal durable queue', fmt(figures.cpu1.durable.bench, 3), fmt(figures.cpu1.durable.postgres, 3), fmt(figures.cpu1.durable.receiver, 3)],
  ['svc (the server)', fmt(figures.cpu1.svc.server, 3), fmt(figures.cpu1.svc.postgres, 3), fmt(figures.cpu1.svc.receiver, 3)],
]));
if (figures.profile) {
  console.log(`\nprofile of the first server process (${fmt(figures.profile.samplesMs / 1000, 1)} s of samples):`);
  console.log(table([['self ms', '%', 'function', 'where'], ...figures.profile.top.map((t) => [t.selfMs, t.percent, t.fn, t.where])]));
}
console.log(JSON.stringify(figures));
