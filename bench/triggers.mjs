#!/usr/bin/env node
// Inbound trigger figures on PostgreSQL (docs/performance.md, "Inbound triggers"), each against a
// baseline from the same run:
//   accepted  correctly signed POST /hooks/<publicId> with unique delivery ids at --connections
//             keep-alive connections for --seconds: 202/s and p50/p99 of the 202
//   bare      the baseline: a node:http server in its own process (same Node) that reads the body and
//             answers 202 after one INSERT through postgres.js (pool = the server's DATABASE_POOL_MAX)
//             into a table of the same database; the same requests, byte for byte
//   rejected  the same POSTs signed with a wrong secret: 401/s and p50/p99 (the cheap path)
//   floor     a node:http server that answers 401 with no work at all: the most any rejection can reach
//   minimal   the design card's HTTP stack and nothing else (bench/lib.mjs minimalStackServer): POST
//             /hooks/:publicId reads the body and answers an empty 401: the most a rejection built on
//             those dependencies can reach
// The server is the real dist/server.mjs on a fresh database; the admin (real CLI), the project and
// the trigger are made through the API, with APP_ENCRYPTION_KEY set and TRIGGER_RATE_PER_HOUR raised
// to its maximum (README) so the bucket never refuses. The project has no runner: every accepted
// delivery is later fired by the server's firer and ends `failed`/`runner_offline` (or `skipped`), off
// the request path. That work runs in the same process, so the benchmark reports the backlog left at
// the end of each accepted window and waits until it is drained before the next phase starts.
// Per round: bare, accepted, (drain), rejected, floor, minimal (below); the tables give the median and range of the rounds.
// --triggers N spreads the requests over N triggers of the project (request n → trigger n mod N): a
// diagnosis, since each trigger's rate bucket is one row that every accepted delivery locks until it
// commits; the figures of the issue are those of the default, one trigger.
// --profile accepted|rejected|both then restarts the server under `node --cpu-prof` on the same
// database, loads it for --seconds more, stops it, and lists the top self-time functions.
//
//   npm run bench:triggers -- [options]   (builds, then runs:)
//   node --import tsx bench/triggers.mjs [--seconds 10] [--warmup 3] [--rounds 3] [--connections 50]
//                                        [--triggers 1] [--pool 10] [--profile none|accepted|rejected|both]
//                                        [--profile-dir DIR (keep the .cpuprofile files)] [--database-url …]
//                                        [--max-requests 200000 (per pass; every request signed before the pass starts)]
// Load comes from a raw-socket generator in a child process (bench/lib.mjs rawHttpLoad) to 127.0.0.1
// only, bounded in time and count; every process, temp dir and database it makes is removed at the
// end, also on error or Ctrl-C. Output: progress on stderr, tables on stdout, then one JSON line.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  captureOutput,
  cpuMs,
  cpuProfileTop,
  createDatabase,
  DEFAULT_DATABASE_URL,
  distHash,
  fmt,
  httpRequestBytes,
  installGuards,
  machine,
  median,
  minimalStackServer,
  percentile,
  postgresVersion,
  problemLines,
  rawHttpLoad,
  redactUrl,
  requireBuild,
  round,
  spawnTracked,
  startSvc,
  stopChild,
  table,
  tempDir,
  waitForPort,
  wholeOption,
} from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    triggers: { type: 'string', default: '1' },
    pool: { type: 'string', default: '10' },
    'max-requests': { type: 'string', default: '200000' },
    'drain-timeout': { type: 'string', default: '300' },
    profile: { type: 'string', default: 'none' },
    'profile-dir': { type: 'string' },
    'database-url': { type: 'string', default: DEFAULT_DATABASE_URL },
  },
  strict: true,
});
const whole = (name, min = 1, max = Infinity) => wholeOption(name, opts[name], min, max);
const SECONDS = whole('seconds', 1, 600);
const WARMUP = whole('warmup', 0, 600);
const ROUNDS = whole('rounds', 1, 20);
const CONNECTIONS = whole('connections', 1, 1000);
const TRIGGERS = whole('triggers', 1, 1000);
const POOL = whole('pool', 1, 200);
const MAX_REQUESTS = whole('max-requests');
const DRAIN_TIMEOUT = whole('drain-timeout');
const ADMIN_URL = opts['database-url'];
const PROFILES = { none: [], accepted: ['accepted'], rejected: ['rejected'], both: ['accepted', 'rejected'] }[opts.profile];
if (!PROFILES) {
  process.stderr.write(`--profile must be none, accepted, rejected or both (got ${opts.profile})\n`);
  process.exit(2);
}
const KEY = Buffer.alloc(32, 7).toString('base64');
/** The payload every request carries (~0.5 KB, like a CI push notification); `ref` fills the trigger's arg. */
const BODY = JSON.stringify({
  ref: 'refs/heads/main',
  before: 'a'.repeat(40),
  after: 'b'.repeat(40),
  repository: { full_name: 'acme/bench', default_branch: 'main' },
  pusher: { name: 'ci-bot', email: 'ci@example.test' },
  commits: Array.from({ length: 3 }, (_, i) => ({ id: String(i).repeat(40), message: `commit ${i}: a short message`, author: 'dev' })),
});

const log = (m) => process.stderr.write(`[bench:triggers] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- child role: the baseline server ------------------------------------------------------------------

async function bareServer() {
  const { default: postgres } = await import('postgres');
  const sql = postgres(process.env.BENCH_DATABASE_URL, { max: Number(process.env.BENCH_POOL), onnotice: () => {} });
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const delivery = String(req.headers['x-svc-delivery'] ?? '');
      try {
        await sql`insert into bench_bare_deliveries (id, delivery_id, body) values (gen_random_uuid()::text, ${delivery}, ${Buffer.concat(chunks).toString('utf8')})`;
        const body = JSON.stringify({ deliveryId: delivery, status: 'accepted' });
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      } catch (err) {
        process.stderr.write(`bare: ${err.message}\n`);
        res.writeHead(500, { 'content-length': 0 }).end();
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => console.log(`listening port=${server.address().port}`));
  process.on('SIGTERM', () => server.close(() => sql.end({ timeout: 2 }).then(() => process.exit(0))));
}

// ---- child role: the floor of any rejection ----------------------------------------------------------
// A node:http server that reads the body and answers 401 with an empty body: no database, no signature.
// No server's rejection can be much cheaper on this machine with this load generator, so floor/s says how
// far "rejected/s ÷ accepted/s" can go at a given accepted rate.

function floorServer() {
  const server = http.createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => res.writeHead(401, { 'content-length': 0 }).end());
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => console.log(`listening port=${server.address().port}`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

// ---- child role: the minimal app on the design card's stack -----------------------------------------

const minimalServer = () =>
  minimalStackServer((router, Response) =>
    router.post('/hooks/:publicId', async (request) => {
      await request.arrayBuffer();
      return new Response(null, { status: 401, headers: { 'content-length': '0' } });
    }),
  );

// ---- child role: the load generator -------------------------------------------------------------------

/** Signs like docs/examples/sign-trigger.ts; `bad` signs with another secret (same work, wrong digest). All signed up front (below). */
async function loadRole() {
  const job = JSON.parse(process.env.BENCH_LOAD);
  const targets = job.targets.map((t) => ({ path: t.path, key: Buffer.from(job.bad ? `not-${t.secret}` : t.secret, 'utf8') }));
  const request = (n) => {
    const { path, key } = targets[n % targets.length];
    const delivery = `${job.tag}-${n}`;
    const t = String(Math.floor(Date.now() / 1000));
    const hex = createHmac('sha256', key).update(`${t}.${delivery}.`).update(BODY).digest('hex');
    const headers = { 'content-type': 'application/json', 'x-svc-timestamp': t, 'x-svc-delivery': delivery, 'x-svc-signature': `sha256=${hex}` };
    return httpRequestBytes('POST', path, job.port, headers, BODY);
  };
  // Every request of the pass is signed before the clock starts (the timestamps stay well inside the 300 s
  // window): signing while loading took a core share from the server under test, most of all on the
  // cheap 401 path. The same for every pass, so no target is favoured.
  const pool = Array.from({ length: job.maxRequests }, (_, n) => request(n));
  const r = await rawHttpLoad({ port: job.port, connections: job.connections, seconds: job.seconds, request: (n) => pool[n], maxRequests: job.maxRequests });
  const ok = r.latencies; // every answer; the expected status is checked by the parent
  process.stdout.write(
    JSON.stringify({ requests: r.requests, seconds: r.seconds, statuses: r.statuses, errors: r.errors, reconnects: r.reconnects, p50Ms: percentile(ok, 50), p99Ms: percentile(ok, 99) }) + '\n',
  );
  process.exit(0);
}

// ---- the benchmark ------------------------------------------------------------------------------------

const perRequest = (before, after, n) => (before === null || after === null || !n ? null : round((after - before) / n, 3));

/** One load pass in a child process; `expect` is the status that counts (202 or 401). */
async function load(name, target, expect, seconds, maxRequests = MAX_REQUESTS) {
  const tag = `${name}-${randomBytes(4).toString('hex')}`;
  const child = captureOutput(
    spawnTracked(process.execPath, [import.meta.filename, '--role', 'load'], {
      env: { PATH: process.env.PATH, BENCH_LOAD: JSON.stringify({ ...target, tag, connections: CONNECTIONS, seconds, maxRequests }) },
    }),
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 60) * 1000);
  const code = await child.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`load generator (${name}) ended with ${code}:\n${child.log}`);
  const r = JSON.parse(out.trim().split('\n').pop());
  const counted = r.statuses[expect] ?? 0;
  const other = r.requests - counted;
  return { ...r, expect, counted, other, perSecond: counted / r.seconds, p50Ms: round(r.p50Ms, 2), p99Ms: round(r.p99Ms, 2) };
}

async function main() {
  if (opts.role === 'bare') return bareServer();
  if (opts.role === 'floor') return floorServer();
  if (opts.role === 'minimal') return minimalServer();
  if (opts.role === 'load') return loadRole();
  requireBuild();
  const m = machine();
  const pgVersion = await postgresVersion(ADMIN_URL);
  if (!pgVersion) throw new Error(`PostgreSQL at ${redactUrl(ADMIN_URL)} does not answer`);
  const phases = (ROUNDS + 1) * 5 + PROFILES.length;
  installGuards(180 + phases * (SECONDS + WARMUP + 30) + (ROUNDS + 2) * DRAIN_TIMEOUT);
  log(`PostgreSQL ${pgVersion}; ${CONNECTIONS} connections, ${SECONDS} s per pass after ${WARMUP} s warm-up, ${ROUNDS} round(s); pool ${POOL}`);

  const { default: postgres } = await import('postgres');
  const db = await createDatabase(ADMIN_URL);
  const env = { APP_ENCRYPTION_KEY: KEY, TRIGGER_RATE_PER_HOUR: '1000000', DATABASE_POOL_MAX: String(POOL) };
  const dbEnv = { DATABASE_URL: db.url };
  let server = null;
  let bare = null;
  let floor = null;
  let minimal = null;
  let sql = null;
  const outputs = [];
  const rounds = [];
  const drains = [];
  const profiles = {};
  let outcomes = [];
  try {
    log(`database ${db.name}; starting the server`);
    server = await startSvc({ admin: true, dbEnv, env });
    const project = await server.api('/api/projects', { method: 'POST', json: { name: 'bench', repo: 'acme/bench' } });
    if (project.status !== 201) throw new Error(`POST /api/projects answered ${project.status}: ${await project.text()}`);
    const projectId = (await project.json()).id;
    const targets = [];
    for (let i = 0; i < TRIGGERS; i++) {
      const made = await server.api(`/api/projects/${projectId}/triggers`, {
        method: 'POST',
        json: { name: `bench ${i}`, action: 'skill', skill: 'review', args: ['--ref', '{{payload.ref}}'], allowedPaths: ['ref'] },
      });
      if (made.status !== 201) throw new Error(`creating a trigger answered ${made.status}: ${await made.text()}`);
      const { trigger, secret } = await made.json();
      targets.push({ path: `/hooks/${trigger.publicId}`, secret });
    }
    // Request n goes to trigger n mod --triggers (one trigger by default).
    const svc = { port: server.port, targets };

    sql = postgres(db.url, { max: 2, onnotice: () => {} });
    await sql`create table bench_bare_deliveries (id text primary key, delivery_id text not null, body text not null, created_at timestamptz not null default now())`;
    bare = captureOutput(
      spawnTracked(process.execPath, [import.meta.filename, '--role', 'bare'], { env: { PATH: process.env.PATH, BENCH_DATABASE_URL: db.url, BENCH_POOL: String(POOL) } }),
    );
    const barePort = await waitForPort(bare, 10_000, /listening port=(\d+)/);
    const bareTarget = { port: barePort, targets };
    floor = captureOutput(spawnTracked(process.execPath, [import.meta.filename, '--role', 'floor'], { env: { PATH: process.env.PATH } }));
    const floorTarget = { port: await waitForPort(floor, 10_000, /listening port=(\d+)/), targets };
    minimal = captureOutput(spawnTracked(process.execPath, [import.meta.filename, '--role', 'minimal'], { env: { PATH: process.env.PATH } }));
    const minimalTarget = { port: await waitForPort(minimal, 10_000, /listening port=(\d+)/), targets };
    log(`server on ${server.url}, ${TRIGGERS} trigger(s); bare server on 127.0.0.1:${barePort}`);

    /** Deliveries not yet decided by the firer. */
    const open = async () => (await sql`select count(*)::int as n from inbound_deliveries where status in ('accepted', 'firing')`)[0].n;
    const drain = async (label) => {
      const t0 = performance.now();
      const backlog = await open();
      let left = backlog;
      while (left > 0) {
        if (performance.now() - t0 > DRAIN_TIMEOUT * 1000) throw new Error(`${left} deliveries still open ${DRAIN_TIMEOUT} s after ${label}`);
        await sleep(50);
        left = await open();
      }
      const d = { after: label, backlog, seconds: round((performance.now() - t0) / 1000, 2) };
      drains.push(d);
      return d;
    };

    // Each answer right once before measuring.
    for (const [name, target, expect] of [['check-bare', bareTarget, 202], ['check-svc', svc, 202], ['check-bad', { ...svc, bad: true }, 401]]) {
      const r = await load(name, target, expect, 5, 1);
      if (r.counted !== 1) throw new Error(`${name}: expected one ${expect}, got ${JSON.stringify(r.statuses)} (errors ${r.errors})`);
    }
    if (WARMUP) {
      log(`warm-up, ${WARMUP} s each`);
      await load('warm-bare', bareTarget, 202, WARMUP);
      await load('warm-svc', svc, 202, WARMUP);
      await drain('warm-up');
      await load('warm-bad', { ...svc, bad: true }, 401, WARMUP);
    }

    for (let r = 1; r <= ROUNDS; r++) {
      const cb0 = cpuMs(bare.pid);
      const b = await load(`bare${r}`, bareTarget, 202, SECONDS);
      b.cpuMsPerRequest = perRequest(cb0, cpuMs(bare.pid), b.requests);
      const ca0 = cpuMs(server.proc.pid);
      log(`round ${r} bare      ${fmt(b.perSecond, 0)} 202/s  p50 ${fmt(b.p50Ms)} ms  p99 ${fmt(b.p99Ms)} ms  (other ${b.other}, errors ${b.errors})`);
      const a = await load(`svc${r}`, svc, 202, SECONDS);
      const d = await drain(`round ${r}`);
      a.cpuMsPerRequest = perRequest(ca0, cpuMs(server.proc.pid), a.requests); // with the firer's work on them
      const cx0 = cpuMs(server.proc.pid);
      log(`round ${r} accepted  ${fmt(a.perSecond, 0)} 202/s  p50 ${fmt(a.p50Ms)} ms  p99 ${fmt(a.p99Ms)} ms  (statuses ${JSON.stringify(a.statuses)}, errors ${a.errors}); backlog ${d.backlog} drained in ${d.seconds} s`);
      const x = await load(`bad${r}`, { ...svc, bad: true }, 401, SECONDS);
      x.cpuMsPerRequest = perRequest(cx0, cpuMs(server.proc.pid), x.requests);
      log(`round ${r} CPU ms per request: bare ${b.cpuMsPerRequest}, accepted (incl. firing) ${a.cpuMsPerRequest}, rejected ${x.cpuMsPerRequest}`);
      log(`round ${r} rejected  ${fmt(x.perSecond, 0)} 401/s  p50 ${fmt(x.p50Ms)} ms  p99 ${fmt(x.p99Ms)} ms  (other ${x.other}, errors ${x.errors})`);
      const cf0 = cpuMs(floor.pid);
      const f = await load(`floor${r}`, floorTarget, 401, SECONDS);
      f.cpuMsPerRequest = perRequest(cf0, cpuMs(floor.pid), f.requests);
      log(`round ${r} floor     ${fmt(f.perSecond, 0)} 401/s  p50 ${fmt(f.p50Ms)} ms  p99 ${fmt(f.p99Ms)} ms  (other ${f.other}, errors ${f.errors}); CPU ms per request ${f.cpuMsPerRequest}`);
      const n = await load(`minimal${r}`, minimalTarget, 401, SECONDS);
      log(`round ${r} minimal   ${fmt(n.perSecond, 0)} 401/s  p50 ${fmt(n.p50Ms)} ms  p99 ${fmt(n.p99Ms)} ms  (other ${n.other}, errors ${n.errors})`);
      rounds.push({
        round: r,
        bare: b,
        accepted: a,
        drain: d,
        rejected: x,
        floor: f,
        minimal: n,
        ratios: {
          acceptedOverBare: round(a.perSecond / b.perSecond, 3),
          acceptedP50OverBare: round(a.p50Ms / b.p50Ms, 2),
          acceptedP99OverBare: round(a.p99Ms / b.p99Ms, 2),
          rejectedOverAccepted: round(x.perSecond / a.perSecond, 2),
          rejectedOverFloor: round(x.perSecond / f.perSecond, 3),
          floorOverBare: round(f.perSecond / b.perSecond, 2),
          // The stack's own ceiling for a rejection, against the accepted rate, and how close svc comes to it.
          minimalOverAccepted: round(n.perSecond / a.perSecond, 2),
          rejectedOverMinimal: round(x.perSecond / n.perSecond, 3),
          minimalOverFloor: round(n.perSecond / f.perSecond, 3),
          acceptedCpuOverBare: a.cpuMsPerRequest && b.cpuMsPerRequest ? round(a.cpuMsPerRequest / b.cpuMsPerRequest, 2) : null,
          acceptedCpuOverRejected: a.cpuMsPerRequest && x.cpuMsPerRequest ? round(a.cpuMsPerRequest / x.cpuMsPerRequest, 2) : null,
          // Accepting and disposing of (firing) every delivery of the window, per second of window + drain.
          sustainedOverBare: round(a.counted / (a.seconds + d.seconds) / b.perSecond, 3),
        },
      });
    }
    outcomes = await sql`select status, reason, count(*)::int as n from inbound_deliveries group by 1, 2 order by 3 desc`;

    for (const kind of PROFILES) {
      log(`profile: restarting the server under --cpu-prof, ${kind} load for ${SECONDS} s`);
      outputs.push(server.output());
      await server.stop('SIGTERM');
      await server.cleanup();
      const dir = opts['profile-dir'] ? join(opts['profile-dir'], `${kind}-${Date.now()}`) : tempDir('svc-bench-cpuprof-');
      mkdirSync(dir, { recursive: true });
      // --cpu-prof is not allowed in NODE_OPTIONS: a shell execs node with it in front of the helper's arguments.
      server = await startSvc({ dbEnv, env, wrap: ['/bin/sh', '-c', `exec "$0" --cpu-prof --cpu-prof-dir='${dir}' "$@"`] });
      const p = await load(`prof-${kind}`, { ...svc, port: server.port, bad: kind === 'rejected' }, kind === 'accepted' ? 202 : 401, SECONDS);
      const code = await Promise.race([server.stop('SIGTERM'), sleep(30_000).then(() => 'timeout')]);
      outputs.push(server.output());
      await server.cleanup();
      const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error(`no .cpuprofile in ${dir} after the server stopped (${code})`);
      profiles[kind] = { file: opts['profile-dir'] ? join(dir, file) : null, perSecond: round(p.perSecond, 0), p50Ms: p.p50Ms, p99Ms: p.p99Ms, exit: code, ...(await cpuProfileTop(join(dir, file), 15)) };
      server = await startSvc({ dbEnv, env });
      if (kind === 'accepted') await drain(`profile (${kind})`);
    }
  } finally {
    await sql?.end({ timeout: 5 }).catch(() => {});
    if (bare) await stopChild(bare, 5_000);
    if (floor) await stopChild(floor, 5_000);
    if (minimal) await stopChild(minimal, 5_000);
    if (server) {
      await Promise.race([server.stop('SIGTERM'), sleep(15_000)]);
      outputs.push(server.output());
      await server.cleanup();
    }
    await db.drop().catch((err) => log(`could not drop ${db.name}: ${err.message}`));
  }

  // ---- report -----------------------------------------------------------------------------------------
  const stat = (f) => {
    const v = rounds.map(f);
    return { median: median(v), min: Math.min(...v), max: Math.max(...v) };
  };
  const cell = (s, d = 0) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;
  const S = {
    bare: { perSecond: stat((r) => r.bare.perSecond), p50Ms: stat((r) => r.bare.p50Ms), p99Ms: stat((r) => r.bare.p99Ms) },
    accepted: { perSecond: stat((r) => r.accepted.perSecond), p50Ms: stat((r) => r.accepted.p50Ms), p99Ms: stat((r) => r.accepted.p99Ms) },
    rejected: { perSecond: stat((r) => r.rejected.perSecond), p50Ms: stat((r) => r.rejected.p50Ms), p99Ms: stat((r) => r.rejected.p99Ms) },
    floor: { perSecond: stat((r) => r.floor.perSecond), p50Ms: stat((r) => r.floor.p50Ms), p99Ms: stat((r) => r.floor.p99Ms) },
    minimal: { perSecond: stat((r) => r.minimal.perSecond), p50Ms: stat((r) => r.minimal.p50Ms), p99Ms: stat((r) => r.minimal.p99Ms) },
    ratios: Object.fromEntries(Object.keys(rounds[0].ratios).map((k) => [k, stat((r) => r.ratios[k])])),
    drain: { backlog: stat((r) => r.drain.backlog), seconds: stat((r) => r.drain.seconds) },
  };
  const problems = outputs.flatMap((o) => problemLines(o)).filter((l) => !/APP_ENCRYPTION_KEY is not set/.test(l));
  const loadEnd = round(os.loadavg()[0], 2);
  const distChanged = distHash() !== m.dist;

  console.log(`triggers: ${CONNECTIONS} connections to ${TRIGGERS} trigger(s), ${SECONDS} s per pass, ${ROUNDS} round(s): median (range); PostgreSQL ${pgVersion}; pool ${POOL}; body ${Buffer.byteLength(BODY)} B`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}, dist/server.mjs ${m.dist}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  if (distChanged) console.log('WARNING: dist/server.mjs changed during the run (rebuilt by someone else)');
  console.log(
    table([
      ['target', 'per s', 'p50 ms', 'p99 ms'],
      ['bare node:http + 1 INSERT (202)', cell(S.bare.perSecond), cell(S.bare.p50Ms, 2), cell(S.bare.p99Ms, 2)],
      ['svc, signed POST accepted (202)', cell(S.accepted.perSecond), cell(S.accepted.p50Ms, 2), cell(S.accepted.p99Ms, 2)],
      ['svc, bad signature (401)', cell(S.rejected.perSecond), cell(S.rejected.p50Ms, 2), cell(S.rejected.p99Ms, 2)],
      ['floor: node:http, empty 401, no work', cell(S.floor.perSecond), cell(S.floor.p50Ms, 2), cell(S.floor.p99Ms, 2)],
      ['minimal: itty-router + @whatwg-node/server, empty 401', cell(S.minimal.perSecond), cell(S.minimal.p50Ms, 2), cell(S.minimal.p99Ms, 2)],
    ]),
  );
  console.log();
  console.log(
    table([
      ['ratio', 'median (range)'],
      ['accepted/s ÷ bare/s', cell(S.ratios.acceptedOverBare, 3)],
      ['accepted p50 ÷ bare p50', cell(S.ratios.acceptedP50OverBare, 2)],
      ['accepted p99 ÷ bare p99', cell(S.ratios.acceptedP99OverBare, 2)],
      ['rejected/s ÷ accepted/s', cell(S.ratios.rejectedOverAccepted, 2)],
      ['rejected/s ÷ floor/s', cell(S.ratios.rejectedOverFloor, 3)],
      ['floor/s ÷ bare/s', cell(S.ratios.floorOverBare, 2)],
      ['minimal/s ÷ accepted/s (the stack\'s ceiling for "rejected ÷ accepted")', cell(S.ratios.minimalOverAccepted, 2)],
      ['rejected/s ÷ minimal/s', cell(S.ratios.rejectedOverMinimal, 3)],
      ['minimal/s ÷ floor/s', cell(S.ratios.minimalOverFloor, 3)],
      ['accepted ÷ (window + drain) ÷ bare/s', cell(S.ratios.sustainedOverBare, 3)],
    ]),
  );
  console.log(`firer backlog at the end of each accepted window: ${cell(S.drain.backlog)} deliveries, drained in ${cell(S.drain.seconds, 2)} s`);
  console.log(`delivery outcomes: ${outcomes.map((o) => `${o.status}${o.reason ? `/${o.reason}` : ''} ${o.n}`).join(', ')}`);
  for (const [kind, p] of Object.entries(profiles)) {
    console.log(`\nprofile under ${kind} load (${p.perSecond}/s while profiled; ${fmt(p.samplesMs / 1000, 1)} s of samples incl. start-up; exit ${p.exit}):`);
    console.log(table([['self %', 'self ms', 'function', 'where'], ...p.top.map((t) => [fmt(t.percent, 1), fmt(t.selfMs, 0), t.fn, t.where])]));
  }
  console.log(`problems in the server logs: ${problems.length}`);
  for (const p of problems.slice(0, 20)) console.log(`  ${p}`);
  console.log(
    JSON.stringify({
      bench: 'triggers',
      command: ['node --import tsx bench/triggers.mjs', ...process.argv.slice(2)].join(' '),
      machine: m,
      distChangedDuringRun: distChanged,
      loadavg1End: loadEnd,
      postgres: { version: pgVersion, url: redactUrl(ADMIN_URL) },
      settings: { triggers: TRIGGERS, seconds: SECONDS, warmup: WARMUP, rounds: ROUNDS, connections: CONNECTIONS, pool: POOL, bodyBytes: Buffer.byteLength(BODY), triggerRatePerHour: Number(env.TRIGGER_RATE_PER_HOUR) },
      summary: S,
      rounds,
      drains,
      outcomes,
      profiles,
      problems: problems.slice(0, 20),
    }),
  );
}

await main();
