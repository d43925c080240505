#!/usr/bin/env node
// GET /health throughput and latency of the real server, as ratios against a bare node:http server
// measured in the same run (the machine is noisy; only same-run ratios are comparable).
//
//   npm run bench:health                       build, then this with the defaults
//   node bench/health.mjs [--seconds 10] [--warmup 2] [--rounds 2] [--connections 50] [--generator auto|wrk|node]
//
// Targets, each in its own child process on 127.0.0.1:
//   svc   node dist/server.mjs, PORT=0 HOST=127.0.0.1, a fresh PGlite data dir in a temp directory
//   bare  node:http answering the same JSON ({"status":"ok","timestamp":"<iso>","version":…,"build":…},
//         application/json): svc is started first and its own version and build are passed on, so the
//         bodies have the same keys and length (checked before the load starts)
//   minimal  the design card's HTTP stack and nothing else (bench/lib.mjs minimalStackServer), one
//         route answering the same JSON: the ceiling those dependencies put on any app built on them
// Load: wrk -t1 -cN -dSs --latency when wrk is on PATH, else a Node load generator in a child process
// (http.Agent keepAlive, N sockets, per-request hrtime latencies). The targets are loaded alternately
// (bare, minimal, svc, bare, …), each after a short warm-up; the figures are medians over the rounds.
// Traffic goes only to 127.0.0.1; every run is bounded in time; every child is killed at the end.
// Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { accessSync, constants } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { delimiter, join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  alive,
  captureOutput,
  distHash,
  fmt,
  get,
  installGuards,
  killAll,
  machine,
  median,
  minimalStackServer,
  percentile,
  problemLines,
  removeTempDir,
  requireBuild,
  round,
  SERVER,
  serverEnv,
  spawnTracked,
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
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    generator: { type: 'string', default: 'auto' },
    url: { type: 'string' },
    version: { type: 'string', default: '0.0.0' },
    build: { type: 'string', default: 'unknown' },
  },
  strict: true,
});

const SECONDS = positive('seconds');
const WARMUP = wholeOption('warmup', opts.warmup, 0);
const ROUNDS = positive('rounds');
const CONNECTIONS = positive('connections');
const TARGETS = ['bare', 'minimal', 'svc'];

function positive(name) {
  return wholeOption(name, opts[name]);
}

// The body svc's GET /health answers (functions/health/routes.ts), with svc's version and build (given
// to the child roles as --version/--build): the baselines serialize as much as svc does.
const healthBody = () => JSON.stringify({ status: 'ok', timestamp: new Date().toISOString(), version: opts.version, build: opts.build });

// ---- child role: the baseline server ----------------------------------------------------------------

function bareServer() {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      const body = healthBody();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    } else {
      res.writeHead(404).end();
    }
  });
  server.keepAliveTimeout = 5_000; // as svc
  server.listen(0, '127.0.0.1', () => console.log(`listening port=${server.address().port}`));
  process.on('SIGTERM', () => process.exit(0));
}

// ---- child role: the minimal app on the design card's stack -----------------------------------------

const minimalServer = () =>
  minimalStackServer((router, Response) =>
    router.get('/health', () => {
      const body = healthBody();
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } });
    }),
  );

// ---- child role: the fallback load generator --------------------------------------------------------

async function nodeLoad(url, connections, seconds) {
  const target = new URL(url);
  if (target.hostname !== '127.0.0.1') throw new Error('load goes to 127.0.0.1 only');
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  const latencies = [];
  let errors = 0;
  let non2xx = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  const once = () =>
    new Promise((done) => {
      const t0 = process.hrtime.bigint();
      const req = http.request(target, { agent, method: 'GET' }, (res) => {
        res.on('data', () => {});
        res.on('end', () => {
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (res.statusCode < 200 || res.statusCode > 399) non2xx++;
          done();
        });
        res.on('error', () => (errors++, done()));
      });
      req.setTimeout(5_000, () => req.destroy(new Error('timeout')));
      req.on('error', () => (errors++, done()));
      req.end();
    });
  const worker = async () => {
    while (process.hrtime.bigint() < deadline) await once();
  };
  await Promise.all(Array.from({ length: connections }, worker));
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const result = {
    requests: latencies.length,
    seconds: elapsed,
    rps: latencies.length / elapsed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors,
    non2xx,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
}

// ---- the benchmark ----------------------------------------------------------------------------------

function onPath(cmd) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return join(dir, cmd);
    } catch {}
  }
  return null;
}

/** Run a child to completion, bounded by limitMs; resolve with its stdout. */
async function runBounded(command, args, limitMs) {
  const child = captureOutput(spawnTracked(command, args));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const timer = setTimeout(() => alive(child) && child.kill('SIGKILL'), limitMs);
  const code = await child.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} ended with ${code}:\n${child.log}`);
  return out;
}

const UNIT_MS = { us: 1e-3, ms: 1, s: 1e3, m: 60e3 };
function wrkDuration(text) {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) throw new Error(`cannot read wrk duration ${text}`);
  return Number(m[1]) * UNIT_MS[m[2]];
}

function parseWrk(out) {
  const num = (re) => {
    const m = re.exec(out);
    return m ? m[1] : undefined;
  };
  const rps = Number(num(/^Requests\/sec:\s+([\d.]+)/m));
  const p50 = num(/^\s+50%\s+(\S+)/m);
  const p99 = num(/^\s+99%\s+(\S+)/m);
  const requests = Number(num(/^\s+(\d+) requests in/m));
  if (!Number.isFinite(rps) || !p50 || !p99) throw new Error(`cannot parse wrk output:\n${out}`);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests,
    seconds: Number(num(/requests in ([\d.]+)s/)),
    rps,
    p50Ms: wrkDuration(p50),
    p99Ms: wrkDuration(p99),
    errors: socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    non2xx: Number(num(/Non-2xx or 3xx responses: (\d+)/) ?? 0),
  };
}

async function load(generator, url, seconds) {
  const limitMs = (seconds + 30) * 1000;
  if (generator === 'wrk') {
    return parseWrk(await runBounded('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', url], limitMs));
  }
  const out = await runBounded(
    process.execPath,
    [import.meta.filename, '--role', 'load', '--url', url, '--connections', String(CONNECTIONS), '--seconds', String(seconds)],
    limitMs,
  );
  return JSON.parse(out.trim().split('\n').pop());
}

/** The parsed /health body of a target, after checking it is a 200 JSON `ok`. */
async function checkHealth(name, url) {
  const res = await get(url);
  let body;
  try {
    body = JSON.parse(res.body);
  } catch {}
  if (res.status !== 200 || body?.status !== 'ok' || !String(res.headers['content-type']).startsWith('application/json')) {
    throw new Error(`${name} ${url} answered ${res.status} ${res.headers['content-type']} ${res.body}`);
  }
  return { body, bytes: Buffer.byteLength(res.body) };
}

/** A baseline whose body differs from svc's in keys or length would not be the same work: refuse. */
function sameShape(name, got, svc) {
  const keys = (x) => Object.keys(x.body).join(',');
  if (keys(got) !== keys(svc) || got.bytes !== svc.bytes) {
    throw new Error(`${name} answers /health with {${keys(got)}} in ${got.bytes} B, svc with {${keys(svc)}} in ${svc.bytes} B: the baseline must answer the same shape`);
  }
}

async function main() {
  requireBuild();
  const m = machine(); // at the start: the commit and build the figures belong to
  let generator = opts.generator;
  if (generator === 'auto') generator = onPath('wrk') ? 'wrk' : 'node';
  if (!['wrk', 'node'].includes(generator)) throw new Error(`--generator must be auto, wrk or node`);
  if (generator === 'wrk' && !onPath('wrk')) throw new Error('--generator wrk: wrk is not on PATH');
  const startupSeconds = 120;
  installGuards(startupSeconds + ROUNDS * TARGETS.length * (SECONDS + WARMUP + 60));
  const log = (msg) => process.stderr.write(`[bench:health] ${msg}\n`);
  const why = opts.generator === 'auto' ? 'wrk not found on PATH' : '--generator node';
  log(`generator: ${generator === 'wrk' ? 'wrk (-t1)' : `node fallback (${why}; figures are bound by the generator)`}; ${CONNECTIONS} connections, ${SECONDS} s per run after ${WARMUP} s warm-up, ${ROUNDS} rounds`);

  const dataDir = tempDir('svc-bench-health-');
  let svc;
  let bare;
  let minimal;
  let svcExit;
  const runs = { bare: [], minimal: [], svc: [] };
  try {
    // svc first: the baselines answer with its version and build (the same body length).
    const t0 = performance.now();
    svc = captureOutput(spawnTracked(process.execPath, [SERVER], { env: serverEnv({ PGLITE_DATA_DIR: join(dataDir, 'pglite') }) }));
    const svcPort = await waitForPort(svc, startupSeconds * 1000);
    log(`svc on 127.0.0.1:${svcPort} (listening after ${Math.round(performance.now() - t0)} ms, fresh PGlite)`);
    const svcHealth = await checkHealth('svc', `http://127.0.0.1:${svcPort}/health`);
    const stamp = ['--version', String(svcHealth.body.version), '--build', String(svcHealth.body.build)];

    bare = captureOutput(spawnTracked(process.execPath, [import.meta.filename, '--role', 'bare', ...stamp]));
    const barePort = await waitForPort(bare, 10_000, /listening port=(\d+)/);
    log(`bare node:http on 127.0.0.1:${barePort}`);
    minimal = captureOutput(spawnTracked(process.execPath, [import.meta.filename, '--role', 'minimal', ...stamp]));
    const minimalPort = await waitForPort(minimal, 10_000, /listening port=(\d+)/);
    log(`minimal itty-router + @whatwg-node/server app on 127.0.0.1:${minimalPort}`);

    const urls = {
      bare: `http://127.0.0.1:${barePort}/health`,
      minimal: `http://127.0.0.1:${minimalPort}/health`,
      svc: `http://127.0.0.1:${svcPort}/health`,
    };
    sameShape('bare', await checkHealth('bare', urls.bare), svcHealth);
    sameShape('minimal', await checkHealth('minimal', urls.minimal), svcHealth);
    log(`/health bodies: ${svcHealth.bytes} B each (${Object.keys(svcHealth.body).join(', ')})`);

    for (let round = 1; round <= ROUNDS; round++) {
      for (const name of TARGETS) {
        if (WARMUP > 0) await load(generator, urls[name], WARMUP);
        const r = await load(generator, urls[name], SECONDS);
        runs[name].push(r);
        log(`round ${round} ${name.padEnd(7)} ${fmt(r.rps, 0)} req/s  p50 ${fmt(r.p50Ms, 3)} ms  p99 ${fmt(r.p99Ms, 3)} ms  errors ${r.errors}  non-2xx ${r.non2xx}`);
      }
    }
    if (!alive(svc)) throw new Error(`svc exited during the benchmark:\n${svc.log}`);
  } finally {
    if (svc) svcExit = await stopChild(svc);
    if (bare) await stopChild(bare, 2_000);
    if (minimal) await stopChild(minimal, 2_000);
    removeTempDir(dataDir);
    killAll();
  }

  const summary = {};
  for (const name of TARGETS) {
    const rs = runs[name];
    summary[name] = {
      rps: round(median(rs.map((r) => r.rps)), 1),
      p50Ms: round(median(rs.map((r) => r.p50Ms)), 3),
      p99Ms: round(median(rs.map((r) => r.p99Ms)), 3),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
      runs: rs.map((r) => ({ ...r, rps: round(r.rps, 1), p50Ms: round(r.p50Ms, 3), p99Ms: round(r.p99Ms, 3), seconds: round(r.seconds, 2) })),
    };
  }
  const ratios = {
    rps: round(summary.svc.rps / summary.bare.rps, 3),
    p50: round(summary.svc.p50Ms / summary.bare.p50Ms, 3),
    p99: round(summary.svc.p99Ms / summary.bare.p99Ms, 3),
    // The stack's own ceiling, and how close svc comes to it.
    minimalRps: round(summary.minimal.rps / summary.bare.rps, 3),
    svcOverMinimalRps: round(summary.svc.rps / summary.minimal.rps, 3),
    minimalP99: round(summary.minimal.p99Ms / summary.bare.p99Ms, 3),
  };
  const problems = problemLines(svc?.log ?? '');

  const rows = [
    ['target', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'],
    ...TARGETS.map((n) => [n, fmt(summary[n].rps, 0), fmt(summary[n].p50Ms, 3), fmt(summary[n].p99Ms, 3), summary[n].errors, summary[n].non2xx]),
    ['svc/bare', fmt(ratios.rps, 3), fmt(ratios.p50, 3), fmt(ratios.p99, 3), '', ''],
    ['minimal/bare', fmt(ratios.minimalRps, 3), fmt(summary.minimal.p50Ms / summary.bare.p50Ms, 3), fmt(ratios.minimalP99, 3), '', ''],
    ['svc/minimal', fmt(ratios.svcOverMinimalRps, 3), fmt(summary.svc.p50Ms / summary.minimal.p50Ms, 3), fmt(summary.svc.p99Ms / summary.minimal.p99Ms, 3), '', ''],
  ];
  const distChanged = distHash() !== m.dist;
  const loadEnd = round(os.loadavg()[0], 2);
  console.log(`GET /health, ${CONNECTIONS} keep-alive connections, ${SECONDS} s x ${ROUNDS} rounds per target (medians), generator: ${generator}`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}, dist/server.mjs ${m.dist}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  if (distChanged) console.log('WARNING: dist/server.mjs changed during the run (rebuilt by someone else); the figures mix two builds');
  console.log(table(rows));
  console.log(`svc log: ${problems.length} WARN/ERROR line(s); exit on SIGTERM: ${svcExit}`);
  for (const line of problems.slice(0, 20)) console.log(`  ${line}`);
  console.log(
    JSON.stringify({
      bench: 'health',
      command: ['node', 'bench/health.mjs', ...process.argv.slice(2)].join(' '),
      generator,
      machine: m,
      distChangedDuringRun: distChanged,
      loadavg1End: loadEnd,
      settings: { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP, rounds: ROUNDS, order: 'bare,minimal,svc per round' },
      bare: summary.bare,
      minimal: summary.minimal,
      svc: summary.svc,
      ratios,
      svcLog: { problems, exitOnSigterm: svcExit },
    }),
  );
}

// Dispatch last, so every module-level constant above is initialised.
if (opts.role === 'bare') bareServer();
else if (opts.role === 'minimal') await minimalServer();
else if (opts.role === 'load') await nodeLoad(opts.url, CONNECTIONS, SECONDS);
else if (opts.role === 'main') await main();
else {
  process.stderr.write(`unknown --role ${opts.role}\n`);
  process.exit(2);
}
