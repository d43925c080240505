#!/usr/bin/env node
// An authenticated API read on PostgreSQL (issue #17, "authenticated GET /api/runners vs bare node + same
// query"), as ratios against baselines measured in the same run:
//   svc    GET /api/runners with `Authorization: Bearer <personal API token>` on the real dist/server.mjs
//          (a fresh database; --runners runners made through the API), answers 200 {runners: [...]}
//   bare   a node:http server in its own process (same Node) that runs the SAME list query through
//          postgres.js (pool = the server's DATABASE_POOL_MAX) and answers 200 with the rows as JSON
//   bare2  the same, with the token lookup svc runs first (a diagnosis: two round trips, no framework)
// Load: --connections keep-alive connections for --seconds per pass from a raw-socket generator in its own
// process (bench/lib.mjs rawHttpLoad), to 127.0.0.1 only; per round bare, bare2, svc, in an order that turns
// each round; medians of the rounds.
//
//   npm run bench:api -- [options]   (builds, then runs:)
//   node --import tsx bench/api.mjs [--seconds 8] [--warmup 2] [--rounds 3] [--connections 50] [--runners 20]
//                                   [--pool 10] [--database-url …]
// Every process, temp dir and database it makes is removed at the end, also on error or Ctrl-C.
// Output: progress on stderr, a table on stdout, then one JSON line.
import { createHash } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import {
  captureOutput,
  createDatabase,
  DEFAULT_DATABASE_URL,
  fmt,
  installGuards,
  machine,
  median,
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
  waitForPort,
  wholeOption,
} from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    seconds: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    runners: { type: 'string', default: '20' },
    pool: { type: 'string', default: '10' },
    'database-url': { type: 'string', default: DEFAULT_DATABASE_URL },
  },
  strict: true,
});
const whole = (name, min = 1, max = Infinity) => wholeOption(name, opts[name], min, max);
const SECONDS = whole('seconds', 1, 600);
const WARMUP = whole('warmup', 0, 60);
const ROUNDS = whole('rounds', 1, 20);
const CONNECTIONS = whole('connections', 1, 1000);
const RUNNERS = whole('runners', 0, 1000);
const POOL = whole('pool', 1, 100);
const ADMIN_URL = opts['database-url'];

// The query GET /api/runners runs (functions/runners/routes.ts selectRunners + presence.ts onlineSql), and
// the token lookup of functions/auth/auth.ts authenticate(), as postgres.js sends them.
const LIST = `select r.*, (r.connected_instance is not null and r.last_seen_at > now() - make_interval(secs => $1)) as online
  from runners r where r.removed_at is null order by lower(r.name), r.created_at`;
const ONLINE_WITHIN_SECONDS = 60; // functions/runners/presence.ts
const TOKEN = `select t.id as token_id, t.last_used_at, u.id, u.email, u.name, u.active, u.instance_admin
  from api_tokens t join users u on u.id = t.user_id
 where t.token_hash = $1 and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())`;

const log = (m) => process.stderr.write(`[bench:api] ${m}\n`);

// ---- child role: the baselines ------------------------------------------------------------------------

async function bareServer(withToken) {
  const { default: postgres } = await import('postgres');
  const sql = postgres(process.env.BENCH_DATABASE_URL, { max: Number(process.env.BENCH_POOL), onnotice: () => {} });
  const server = http.createServer(async (req, res) => {
    try {
      if (withToken) {
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
        const [user] = await sql.unsafe(TOKEN, [createHash('sha256').update(bearer?.[1] ?? '').digest('hex')], { prepare: true });
        if (!user?.active) return void res.writeHead(401, { 'content-length': 0 }).end();
      }
      const rows = await sql.unsafe(LIST, [ONLINE_WITHIN_SECONDS], { prepare: true });
      const body = JSON.stringify({ runners: rows });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    } catch (err) {
      process.stderr.write(`bare: ${err.message}\n`);
      res.writeHead(500, { 'content-length': 0 }).end();
    }
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => console.log(`listening port=${server.address().port}`));
  process.on('SIGTERM', () => server.close(() => sql.end({ timeout: 2 }).then(() => process.exit(0))));
}

// ---- child role: the load generator -------------------------------------------------------------------

async function loadRole() {
  const job = JSON.parse(process.env.BENCH_LOAD);
  const bytes = Buffer.from(`GET /api/runners HTTP/1.1\r\nhost: 127.0.0.1:${job.port}\r\nauthorization: Bearer ${job.token}\r\naccept: application/json\r\n\r\n`, 'latin1');
  const r = await rawHttpLoad({ port: job.port, connections: job.connections, seconds: job.seconds, request: () => bytes });
  process.stdout.write(JSON.stringify({ requests: r.requests, seconds: r.seconds, statuses: r.statuses, errors: r.errors, p50Ms: percentile(r.latencies, 50), p99Ms: percentile(r.latencies, 99) }) + '\n');
  process.exit(0);
}

async function load(name, port, token, seconds) {
  const child = captureOutput(
    spawnTracked(process.execPath, [import.meta.filename, '--role', 'load'], {
      env: { PATH: process.env.PATH, BENCH_LOAD: JSON.stringify({ port, token, connections: CONNECTIONS, seconds }) },
    }),
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 60) * 1000);
  const code = await child.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`load generator (${name}) ended with ${code}:\n${child.log}`);
  const r = JSON.parse(out.trim().split('\n').pop());
  const ok = r.statuses[200] ?? 0;
  return { ...r, ok, other: r.requests - ok, perSecond: ok / r.seconds, p50Ms: round(r.p50Ms, 2), p99Ms: round(r.p99Ms, 2) };
}

async function main() {
  if (opts.role === 'bare') return bareServer(false);
  if (opts.role === 'bare2') return bareServer(true);
  if (opts.role === 'load') return loadRole();
  requireBuild();
  const m = machine();
  const pgVersion = await postgresVersion(ADMIN_URL);
  if (!pgVersion) throw new Error(`PostgreSQL at ${redactUrl(ADMIN_URL)} does not answer`);
  installGuards(120 + (ROUNDS + 1) * 3 * (SECONDS + WARMUP + 20));
  const db = await createDatabase(ADMIN_URL);
  let server = null;
  const baselines = [];
  const rounds = [];
  let output = '';
  try {
    log(`database ${db.name}; starting the server`);
    server = await startSvc({ admin: true, dbEnv: { DATABASE_URL: db.url }, env: { DATABASE_POOL_MAX: String(POOL) } });
    for (let i = 0; i < RUNNERS; i++) {
      const made = await server.api('/api/runners', { method: 'POST', json: { name: `bench-runner-${String(i).padStart(3, '0')}` } });
      if (made.status !== 201) throw new Error(`POST /api/runners answered ${made.status}: ${await made.text()}`);
    }
    const token = server.admin.token;
    const ports = { svc: server.port };
    for (const role of ['bare', 'bare2']) {
      const child = captureOutput(
        spawnTracked(process.execPath, [import.meta.filename, '--role', role], { env: { PATH: process.env.PATH, BENCH_DATABASE_URL: db.url, BENCH_POOL: String(POOL) } }),
      );
      baselines.push(child);
      ports[role] = await waitForPort(child, 10_000, /listening port=(\d+)/);
    }
    // Each answers the same list once before measuring.
    const lists = {};
    for (const [name, port] of Object.entries(ports)) {
      const res = await fetch(`http://127.0.0.1:${port}/api/runners`, { headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 200) throw new Error(`${name}: GET /api/runners answered ${res.status}`);
      lists[name] = (await res.json()).runners.length;
    }
    if (new Set(Object.values(lists)).size !== 1 || lists.svc !== RUNNERS) throw new Error(`the lists differ: ${JSON.stringify(lists)}`);
    if (WARMUP) for (const [name, port] of Object.entries(ports)) await load(`warm-${name}`, port, token, WARMUP);
    for (let r = 1; r <= ROUNDS; r++) {
      const round_ = { round: r };
      const order = ['bare', 'bare2', 'svc'];
      for (const name of [...order.slice((r - 1) % 3), ...order.slice(0, (r - 1) % 3)]) { // drift shared out: the order turns each round
        round_[name] = await load(`${name}${r}`, ports[name], token, SECONDS);
        log(`round ${r} ${name.padEnd(5)} ${fmt(round_[name].perSecond, 0)} 200/s  p50 ${fmt(round_[name].p50Ms)} ms  p99 ${fmt(round_[name].p99Ms)} ms  (other ${round_[name].other}, errors ${round_[name].errors})`);
      }
      round_.ratios = {
        svcOverBare: round(round_.svc.perSecond / round_.bare.perSecond, 3),
        svcOverBare2: round(round_.svc.perSecond / round_.bare2.perSecond, 3),
        svcP99OverBare: round(round_.svc.p99Ms / round_.bare.p99Ms, 2),
      };
      rounds.push(round_);
    }
  } finally {
    for (const child of baselines) await stopChild(child, 5_000);
    if (server) {
      await server.stop('SIGTERM').catch(() => {});
      output = server.output();
      await server.cleanup();
    }
    await db.drop().catch((err) => log(`could not drop ${db.name}: ${err.message}`));
  }

  const stat = (f) => {
    const v = rounds.map(f);
    return { median: median(v), min: Math.min(...v), max: Math.max(...v) };
  };
  const cell = (s, d = 0) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;
  const S = Object.fromEntries(['bare', 'bare2', 'svc'].map((k) => [k, { perSecond: stat((r) => r[k].perSecond), p50Ms: stat((r) => r[k].p50Ms), p99Ms: stat((r) => r[k].p99Ms) }]));
  const ratios = Object.fromEntries(Object.keys(rounds[0].ratios).map((k) => [k, stat((r) => r.ratios[k])]));
  const problems = problemLines(output).filter((l) => !/APP_ENCRYPTION_KEY is not set/.test(l));
  const loadEnd = round(os.loadavg()[0], 2);
  console.log(`api: GET /api/runners (${RUNNERS} runners), ${CONNECTIONS} connections, ${SECONDS} s per pass, ${ROUNDS} round(s): median (range); PostgreSQL ${pgVersion}; pool ${POOL}`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}, dist/server.mjs ${m.dist}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  console.log(
    table([
      ['target', '200/s', 'p50 ms', 'p99 ms'],
      ['bare node:http + the list query', cell(S.bare.perSecond), cell(S.bare.p50Ms, 2), cell(S.bare.p99Ms, 2)],
      ['bare + token lookup + list query', cell(S.bare2.perSecond), cell(S.bare2.p50Ms, 2), cell(S.bare2.p99Ms, 2)],
      ['svc, authenticated GET /api/runners', cell(S.svc.perSecond), cell(S.svc.p50Ms, 2), cell(S.svc.p99Ms, 2)],
    ]),
  );
  console.log();
  console.log(
    table([
      ['ratio', 'median (range)'],
      ['svc/s ÷ bare/s (goal ≥ 0.45)', cell(ratios.svcOverBare, 3)],
      ['svc/s ÷ bare-with-token/s', cell(ratios.svcOverBare2, 3)],
      ['svc p99 ÷ bare p99', cell(ratios.svcP99OverBare, 2)],
    ]),
  );
  console.log(`problems in the server log: ${problems.length}`);
  for (const p of problems.slice(0, 20)) console.log(`  ${p}`);
  console.log(
    JSON.stringify({
      bench: 'api',
      command: ['node --import tsx bench/api.mjs', ...process.argv.slice(2)].join(' '),
      machine: m,
      loadavg1End: loadEnd,
      postgres: { version: pgVersion, url: redactUrl(ADMIN_URL) },
      settings: { seconds: SECONDS, warmup: WARMUP, rounds: ROUNDS, connections: CONNECTIONS, runners: RUNNERS, pool: POOL },
      summary: { ...S, ratios },
      rounds,
      problems: problems.slice(0, 20),
    }),
  );
}

main().then(
  () => opts.role === 'main' && process.exit(0), // a baseline server's role keeps running until SIGTERM
  (err) => {
    process.stderr.write(`bench:api failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
