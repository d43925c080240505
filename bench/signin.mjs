#!/usr/bin/env node
// Sign-in (POST /api/session with the right password) on the real server and PostgreSQL: latency and
// sign-ins/s sequentially and with concurrent clients, against two baselines from the same run:
// GET /health on the same server with the same client code (the HTTP and framework floor), and a bare
// scrypt with the password parameters in this process (the work sign-in exists to do).
//
//   npm run bench:signin -- [options]   (builds, then runs:)
//   node --import tsx bench/signin.mjs [--requests 100] [--clients 4] [--rounds 3] [--database-url postgres://…]
//
// The server is node dist/server.mjs, started with test/helpers/server.ts startServer({ admin: true,
// dbEnv: { DATABASE_URL }, env: { TRUST_PROXY: 'true' } }) on a fresh database svc_bench_<hex> (dropped
// at the end, also on error or Ctrl-C); startServer creates the admin with the real CLI, sets its
// password through the one-time link and signs in once.
// Each pass sends --requests requests in total, from 1 client (sequential) or --clients clients that
// take requests from a shared counter; every client has its own keep-alive connection (http.Agent,
// maxSockets 1). Sign-in clients send X-Forwarded-For 10.0.0.<client>. Successful sign-ins are not rate
// limited; any answer other than 200 (with a session cookie for sign-in) counts as an error.
//   health   GET /health
//   signin   POST /api/session {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}
//   scrypt   crypto.scrypt(password, 16-byte salt, 32, { N: 2^15, r: 8, p: 1, maxmem: 128 MiB }) in-process
//            (the parameters are checked against a hash made by functions/auth/passwords.ts)
// Order per round: health, signin, scrypt with 1 client, then the same with --clients; after a
// warm-up. Figures are medians over the rounds; percentiles are nearest-rank over one pass.
// Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { randomBytes, scrypt as scryptCb } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { promisify } from 'node:util';
import { hashPassword } from '../functions/auth/passwords.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../test/helpers/server.ts';
import {
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
  round,
  table,
  wholeOption,
} from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    requests: { type: 'string', default: '100' },
    clients: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    'database-url': { type: 'string', default: DEFAULT_DATABASE_URL },
  },
  strict: true,
});

function whole(name) {
  return wholeOption(name, opts[name]);
}
const REQUESTS = whole('requests');
const CLIENTS = whole('clients');
const ROUNDS = whole('rounds');
const ADMIN_URL = opts['database-url'];
const WARMUP = Math.min(REQUESTS, 10);
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32, maxmem: 128 * 1024 * 1024 };
const TARGETS = ['health', 'signin', 'scrypt'];

const log = (m) => process.stderr.write(`[bench:signin] ${m}\n`);
const scrypt = promisify(scryptCb);

/** One request on the client's agent; resolves with status, headers, body and ms. */
function request(agent, url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((ok, fail) => {
    const target = new URL(url);
    if (target.hostname !== '127.0.0.1') return fail(new Error('traffic goes to 127.0.0.1 only'));
    const h = body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const t0 = process.hrtime.bigint();
    const req = http.request(target, { agent, method, headers: h, timeout: 30_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => ok({ status: res.statusCode, headers: res.headers, body: text, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
      res.on('error', fail);
    });
    req.on('timeout', () => req.destroy(new Error('timeout after 30 s')));
    req.on('error', fail);
    req.end(body);
  });
}

/** The operation of a target for client k: resolves with its ms, throws when the answer is wrong. */
function operation(target, baseUrl, agent, k) {
  if (target === 'health') {
    return async () => {
      const res = await request(agent, `${baseUrl}/health`);
      if (res.status !== 200) throw new Error(`GET /health answered ${res.status}: ${res.body.slice(0, 200)}`);
      return res.ms;
    };
  }
  if (target === 'signin') {
    const body = JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    const headers = { 'x-forwarded-for': `10.0.0.${k + 1}` };
    return async () => {
      const res = await request(agent, `${baseUrl}/api/session`, { method: 'POST', headers, body });
      if (res.status !== 200 || !String(res.headers['set-cookie'] ?? '').includes('svc_session=')) {
        throw new Error(`POST /api/session answered ${res.status}: ${res.body.slice(0, 200)}`);
      }
      return res.ms;
    };
  }
  const salt = randomBytes(16);
  return async () => {
    const t0 = process.hrtime.bigint();
    await scrypt(ADMIN_PASSWORD, salt, SCRYPT.keyLength, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, maxmem: SCRYPT.maxmem });
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
}

/** `total` operations from `clients` clients sharing a counter. */
async function pass(target, baseUrl, clients, total) {
  let next = 0;
  let errors = 0;
  let firstError = null;
  const latencies = [];
  const agents = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, k) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      agents.push(agent);
      const op = operation(target, baseUrl, agent, k);
      while (next < total) {
        next++;
        try {
          latencies.push(await op());
        } catch (err) {
          errors++;
          firstError ??= err.message;
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  for (const a of agents) a.destroy();
  latencies.sort((a, b) => a - b);
  return { requests: total, ok: latencies.length, errors, firstError, seconds, perSecond: latencies.length / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

/** The stored hash of passwords.ts must use the parameters this benchmark measures. */
async function checkParameters() {
  const [scheme, n, r, p, , hash] = (await hashPassword('bench-parameter-check')).split('$');
  const found = { scheme, N: Number(n), r: Number(r), p: Number(p), keyLength: Buffer.from(hash, 'base64url').length };
  const same = scheme === 'scrypt' && found.N === SCRYPT.N && found.r === SCRYPT.r && found.p === SCRYPT.p && found.keyLength === SCRYPT.keyLength;
  if (!same) throw new Error(`passwords.ts hashes with ${JSON.stringify(found)}, the benchmark measures ${JSON.stringify(SCRYPT)}: update SCRYPT`);
  return found;
}

async function main() {
  requireBuild();
  const m = machine();
  const pgVersion = await postgresVersion(ADMIN_URL);
  if (!pgVersion) throw new Error(`PostgreSQL at ${redactUrl(ADMIN_URL)} does not answer`);
  installGuards(240 + Math.ceil(ROUNDS * 2 * REQUESTS * 1.5));
  const params = await checkParameters();
  log(`PostgreSQL ${pgVersion}; ${REQUESTS} requests per pass, 1 and ${CLIENTS} clients, ${ROUNDS} round(s); scrypt N=${params.N} r=${params.r} p=${params.p} keylen=${params.keyLength}`);
  log(`UV_THREADPOOL_SIZE ${process.env.UV_THREADPOOL_SIZE ?? 'unset (4)'} here; the server inherits none`);

  const db = await createDatabase(ADMIN_URL);
  let server = null;
  let starting = null;
  let exitOnSigterm = null;
  const killServer = () => {
    try {
      if (server && server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
    } catch {}
  };
  process.on('exit', killServer);
  const forget = onCleanup(async () => {
    const s = server ?? (await starting?.catch(() => null));
    await s?.cleanup();
  });
  const runs = Object.fromEntries([1, CLIENTS].flatMap((c) => TARGETS.map((t) => [`${t}x${c}`, []])));
  let output = '';
  try {
    log(`database ${db.name}; starting the server`);
    const t0 = performance.now();
    starting = startServer({ admin: true, dbEnv: { DATABASE_URL: db.url }, env: { TRUST_PROXY: 'true' } });
    server = await starting;
    log(`server on ${server.url}, admin signed in (${Math.round(performance.now() - t0)} ms)`);

    for (const t of TARGETS) await pass(t, server.url, CLIENTS, WARMUP);
    for (let r = 1; r <= ROUNDS; r++) {
      for (const c of [1, CLIENTS]) {
        for (const t of TARGETS) {
          const res = await pass(t, server.url, c, REQUESTS);
          runs[`${t}x${c}`].push(res);
          log(`round ${r} ${t.padEnd(6)} clients=${c}  ${fmt(res.perSecond, 1)}/s  p50 ${fmt(res.p50Ms, 2)} ms  p99 ${fmt(res.p99Ms, 2)} ms  errors ${res.errors}${res.firstError ? ` (${res.firstError})` : ''}`);
        }
      }
    }
    if (server.proc.exitCode !== null || server.proc.signalCode !== null) throw new Error(`the server exited during the benchmark:\n${server.output()}`);
  } finally {
    if (server) {
      exitOnSigterm = await Promise.race([server.stop('SIGTERM'), new Promise((r) => setTimeout(() => r('no exit within 15 s'), 15_000))]);
      output = server.output();
      await server.cleanup();
    }
    await db.drop().catch((err) => log(`could not drop ${db.name}: ${err.message}`));
    forget();
  }

  const summary = {};
  for (const [key, rs] of Object.entries(runs)) {
    summary[key] = {
      perSecond: round(median(rs.map((x) => x.perSecond)), 2),
      p50Ms: round(median(rs.map((x) => x.p50Ms)), 2),
      p99Ms: round(median(rs.map((x) => x.p99Ms)), 2),
      errors: rs.reduce((a, x) => a + x.errors, 0),
      runs: rs.map((x) => ({ ...x, seconds: round(x.seconds, 3), perSecond: round(x.perSecond, 2), p50Ms: round(x.p50Ms, 2), p99Ms: round(x.p99Ms, 2) })),
    };
  }
  const s = (t, c) => summary[`${t}x${c}`];
  const ratios = {
    sequential: {
      signinOverHealthP50: round(s('signin', 1).p50Ms / s('health', 1).p50Ms, 1),
      scryptShareOfSigninP50: round(s('scrypt', 1).p50Ms / s('signin', 1).p50Ms, 3),
      signinMinusScryptP50Ms: round(s('signin', 1).p50Ms - s('scrypt', 1).p50Ms, 2),
      signinOverScryptPerSecond: round(s('signin', 1).perSecond / s('scrypt', 1).perSecond, 3),
    },
    concurrent: {
      clients: CLIENTS,
      signinOverHealthPerSecond: round(s('signin', CLIENTS).perSecond / s('health', CLIENTS).perSecond, 4),
      signinOverScryptPerSecond: round(s('signin', CLIENTS).perSecond / s('scrypt', CLIENTS).perSecond, 3),
      signinOverScryptP50: round(s('signin', CLIENTS).p50Ms / s('scrypt', CLIENTS).p50Ms, 3),
    },
  };
  const problems = problemLines(output);
  const distChanged = distHash() !== m.dist;
  const loadEnd = round(os.loadavg()[0], 2);
  const label = { health: 'GET /health', signin: 'POST /api/session', scrypt: 'scrypt in-process' };

  console.log(`sign-in: ${REQUESTS} requests per pass, 1 and ${CLIENTS} clients, ${ROUNDS} round(s) (medians); PostgreSQL ${pgVersion} at ${redactUrl(ADMIN_URL)}`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}, dist/server.mjs ${m.dist}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  if (distChanged) console.log('WARNING: dist/server.mjs changed during the run (rebuilt by someone else); the figures mix two builds');
  console.log(
    table([
      ['target', 'clients', 'per s', 'p50 ms', 'p99 ms', 'errors'],
      ...[1, CLIENTS].flatMap((c) => TARGETS.map((t) => [label[t], c, fmt(s(t, c).perSecond, 1), fmt(s(t, c).p50Ms, 2), fmt(s(t, c).p99Ms, 2), s(t, c).errors])),
    ]),
  );
  console.log(
    `sequential: sign-in p50 = ${ratios.sequential.signinOverHealthP50} x /health; scrypt is ${fmt(ratios.sequential.scryptShareOfSigninP50 * 100, 1)} % of sign-in p50 (the rest: ${ratios.sequential.signinMinusScryptP50Ms} ms)`,
  );
  console.log(`${CLIENTS} clients: sign-ins/s = ${ratios.concurrent.signinOverScryptPerSecond} x bare scrypt/s; ${ratios.concurrent.signinOverHealthPerSecond} x /health req/s`);
  console.log(`svc log: ${problems.length} WARN/ERROR line(s); exit on SIGTERM: ${exitOnSigterm}`);
  for (const line of problems.slice(0, 20)) console.log(`  ${line}`);
  console.log(
    JSON.stringify({
      bench: 'signin',
      command: ['node --import tsx bench/signin.mjs', ...process.argv.slice(2)].join(' '),
      machine: m,
      distChangedDuringRun: distChanged,
      loadavg1End: loadEnd,
      postgres: { version: pgVersion, url: redactUrl(ADMIN_URL) },
      settings: { requests: REQUESTS, clients: CLIENTS, rounds: ROUNDS, warmup: WARMUP, scrypt: { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, keyLength: SCRYPT.keyLength }, trustProxy: true },
      summary,
      ratios,
      svcLog: { problems, exitOnSigterm },
    }),
  );
}

await main();
