// Shared helpers of the benchmarks in bench/: child-process bookkeeping (every child is killed when the
// benchmark ends, also on error or Ctrl-C), starting the real dist/server.mjs, statistics and output.
// A benchmark is not a test: it prints figures (a short table, then one JSON line) and judges nothing.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..');
export const SERVER = join(ROOT, 'dist', 'server.mjs');

// ---- children -------------------------------------------------------------------------------------

const children = new Set();
const tempDirs = new Set();

/** spawn() that remembers the child, so killAll() (run on exit, error and signals) can end it. */
export function spawnTracked(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  children.add(child);
  child.exited = new Promise((r) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      r(code ?? signal ?? -1);
    }),
  );
  // A child that cannot be spawned emits 'error' and never 'exit'.
  child.once('error', () => children.delete(child));
  return child;
}

export function alive(child) {
  return child.exitCode === null && child.signalCode === null;
}

/** SIGTERM, then SIGKILL after graceMs. Resolves with the exit code or signal name. */
export async function stopChild(child, graceMs = 15_000) {
  if (!alive(child)) return child.exitCode ?? child.signalCode;
  child.kill('SIGTERM');
  const timer = setTimeout(() => alive(child) && child.kill('SIGKILL'), graceMs);
  const result = await child.exited;
  clearTimeout(timer);
  return result;
}

/** Synchronous last resort: SIGKILL every child still running and remove temp dirs. */
export function killAll() {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {}
  }
  children.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

const hooks = new Set();
/** An async clean-up (e.g. dropping a database) also run when the benchmark is interrupted. */
export function onCleanup(fn) {
  hooks.add(fn);
  return () => hooks.delete(fn);
}

let exiting = false;
async function emergencyExit(code, message) {
  process.stderr.write(message);
  if (exiting) return; // the first call finishes the clean-up and exits
  exiting = true;
  killAll();
  const pending = Promise.allSettled([...hooks].map((fn) => fn()));
  await Promise.race([pending, new Promise((r) => setTimeout(r, 5_000))]);
  process.exit(code);
}

let guarded = false;
/** Kill every child on exit, on SIGINT/SIGTERM, on an uncaught error, and after a hard time limit. */
export function installGuards(hardLimitSeconds) {
  if (guarded) return;
  guarded = true;
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => void emergencyExit(130, `\n${sig}: stopping children\n`));
  }
  process.on('uncaughtException', (err) => void emergencyExit(1, `bench failed: ${err?.stack ?? err}\n`));
  process.on('unhandledRejection', (err) => void emergencyExit(1, `bench failed: ${err?.stack ?? err}\n`));
  if (hardLimitSeconds) {
    setTimeout(() => void emergencyExit(1, `bench exceeded its hard limit of ${hardLimitSeconds} s; stopping\n`), hardLimitSeconds * 1000).unref();
  }
}

export function tempDir(prefix = 'svc-bench-') {
  const dir = mkdtempSync(join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

// ---- the server -----------------------------------------------------------------------------------

export function requireBuild() {
  if (!existsSync(SERVER)) {
    process.stderr.write(`${SERVER} is missing: run \`npm run build\` first\n`);
    process.exit(2);
  }
}

/** The environment dist/server.mjs runs with in the benchmarks: loopback only, nothing inherited. */
export function serverEnv(extra) {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    TZ: 'UTC',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    DATABASE_CONNECT_TIMEOUT_SECONDS: '5',
    // The audit anchor file of this server alone (beside its PGlite dir, else in a temp dir): the default,
    // ./data/audit-anchor.json, is the developer's own instance's, and servers of different databases
    // sharing one file report a broken chain.
    AUDIT_ANCHOR_PATH: extra.PGLITE_DATA_DIR ? join(dirname(resolve(extra.PGLITE_DATA_DIR)), 'audit-anchor.json') : join(tempDir('svc-bench-anchor-'), 'audit-anchor.json'),
    ...extra,
  };
}

/** Capture a child's stdout+stderr into child.log (a string). */
export function captureOutput(child) {
  child.log = '';
  const onData = (chunk) => (child.log += chunk.toString());
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return child;
}

/** Resolve with the port once the child printed `listening … port=<n>` (svc's log line). */
export function waitForPort(child, timeoutMs = 60_000, pattern = /listening .*port=(\d+)/) {
  return new Promise((ok, fail) => {
    const check = () => {
      const m = pattern.exec(child.log);
      if (m) {
        cleanup();
        ok(Number(m[1]));
      }
    };
    const onExit = (code) => (cleanup(), fail(new Error(`child exited (${code}) before listening:\n${child.log}`)));
    const timer = setTimeout(() => (cleanup(), fail(new Error(`child did not listen within ${timeoutMs} ms:\n${child.log}`))), timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

/** A port that was free a moment ago on 127.0.0.1 (bind 0, read, close). */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = net.createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** One GET without keep-alive: { status, headers, body } or throws (e.g. ECONNREFUSED). */
export function get(url, timeoutMs = 2_000) {
  return new Promise((ok, fail) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => ok({ status: res.statusCode, headers: res.headers, body }));
      res.on('error', fail);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
  });
}

/** Log lines of svc at WARN or ERROR level (its format: `<iso time> LEVEL msg key=value…`). */
export function problemLines(log) {
  return log.split('\n').filter((l) => /^\S+ (WARN|ERROR) /.test(l) || /\b(Error|Exception|uncaught|unhandled)\b/i.test(l));
}

// ---- runner events ---------------------------------------------------------------------------------

/**
 * A maker of runner events as protocol/frames.ts `runnerEvent` has them, each with a payload of about
 * `bytes` bytes of base64 (bench/hub.mjs and bench/fleet.mjs send them): `(id, ts?) => event`.
 */
export function benchEvents(bytes = 900, source = 'bench') {
  const blob = createHash('sha512').update(String(bytes)).digest('base64').repeat(Math.ceil(bytes / 88)).slice(0, bytes);
  return (id, ts = new Date().toISOString()) => ({ id, source, kind: 'bench.event', ts, payload: { id, blob } });
}

// ---- statistics -----------------------------------------------------------------------------------

/**
 * CPU time (user + system, ms) a process has used so far, from /proc (Linux; null elsewhere). Per request
 * or per event it hardly depends on how busy the machine is, unlike rates.
 */
export function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
const CLOCK_TICKS = 100; // USER_HZ: 100 on every Linux this runs on

/**
 * A child role: the design card's HTTP stack and nothing else — itty-router behind @whatwg-node/server's
 * adapter on node:http — with the routes `addRoutes(router, Response)` adds (answers built with the
 * adapter's own Response and a whole header record, the fastest way through the stack). It is the ceiling
 * those dependencies put on any app built on them (issue #17: "where a dependency itself is the limit,
 * show it with a minimal app measured in the same run"). Prints `listening port=N`; ends on SIGTERM.
 */
export async function minimalStackServer(addRoutes) {
  const { createServerAdapter, Response } = await import('@whatwg-node/server');
  const { Router } = await import('itty-router');
  const router = Router();
  addRoutes(router, Response);
  router.all('*', () => new Response(null, { status: 404 }));
  const server = http.createServer(createServerAdapter((request) => router.fetch(request)));
  server.keepAliveTimeout = 5_000; // as svc
  server.listen(0, '127.0.0.1', () => console.log(`listening port=${server.address().port}`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** Nearest-rank percentile of an ascending-sorted numeric array (p in 0..100). */
export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function round(x, digits = 2) {
  if (!Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

// ---- output ---------------------------------------------------------------------------------------

export function machine() {
  return {
    date: new Date().toISOString(),
    nproc: typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    commit: gitCommit(),
    dist: distHash(),
    loadavg1: round(os.loadavg()[0], 2), // other work on the machine at the start of the run
  };
}

/** Short sha256 of dist/server.mjs: the benchmarks compare it at start and end, as others may rebuild it. */
export function distHash() {
  try {
    // dist/server.mjs and its chunks (dist/server-*.mjs, esbuild.config.mjs): one build, one hash.
    const hash = createHash('sha256').update(readFileSync(SERVER));
    for (const f of readdirSync(dirname(SERVER)).filter((n) => /^server-.+\.mjs$/.test(n)).sort()) hash.update(f).update(readFileSync(join(dirname(SERVER), f)));
    return hash.digest('hex').slice(0, 12);
  } catch {
    return 'missing';
  }
}

/** HEAD's short hash, with `+dirty` when the server's sources differ from it (dist/ is built from them). */
function gitCommit() {
  const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const dirty = git('status', '--porcelain', '--', 'functions', 'protocol', 'sql', 'package.json', 'package-lock.json', 'esbuild.config.mjs');
    return git('rev-parse', '--short', 'HEAD') + (dirty ? '+dirty' : '');
  } catch {
    return 'unknown';
  }
}

/** A plain-text table: rows are arrays of cells, the first row is the header. */
export function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? '').length)));
  const line = (r) => r.map((c, i) => (i === 0 ? String(c ?? '').padEnd(widths[i]) : String(c ?? '').padStart(widths[i]))).join('  ');
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function fmt(x, digits = 2) {
  return Number.isFinite(x) ? x.toFixed(digits) : '—';
}

// ---- PostgreSQL -----------------------------------------------------------------------------------

export const DEFAULT_DATABASE_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** A connection string with its password masked, for output. */
export function redactUrl(url) {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

/**
 * A new, empty database `<prefix><hex>` on adminUrl's server. drop() removes it (once, whoever calls
 * first); it is also registered with onCleanup, so an interrupted benchmark drops it too.
 */
export async function createDatabase(adminUrl, prefix = 'svc_bench_') {
  const { default: postgres } = await import('postgres');
  const name = `${prefix}${createHash('sha256').update(String(Math.random()) + process.hrtime.bigint()).digest('hex').slice(0, 12)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropping;
  const drop = () =>
    (dropping ??= (async () => {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await a.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await a.end();
      }
    })());
  const forget = onCleanup(drop);
  return { name, url: url.toString(), drop: async () => (await drop(), forget()) };
}

/** The server's version (`show server_version`), or null when it does not answer. */
export async function postgresVersion(url) {
  const { default: postgres } = await import('postgres');
  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    const [row] = await sql`show server_version`;
    return row.server_version;
  } catch {
    return null;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** A command-line option that must be a whole number from min to max; exits 2 naming it otherwise. */
export function wholeOption(name, text, min = 1, max = Infinity) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    const range = max === Infinity ? `≥ ${min}` : `from ${min} to ${max}`;
    process.stderr.write(`--${name} must be a whole number ${range} (got ${text})\n`);
    process.exit(2);
  }
  return n;
}

// ---- the real server with an admin (benchmarks run with `node --import tsx`) ------------------------

/**
 * test/helpers/server.ts startServer (real dist/server.mjs, free port, optional admin made with the real
 * CLI and an API token), with the process killed when the benchmark exits, errs or is interrupted.
 */
export async function startSvc(options) {
  const { startServer } = await import('../test/helpers/server.ts');
  let server = null;
  const starting = startServer(options);
  const kill = () => {
    try {
      if (server && server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill('SIGKILL');
    } catch {}
  };
  process.on('exit', kill);
  const forget = onCleanup(async () => (await starting.catch(() => null))?.cleanup());
  server = await starting;
  const cleanup = server.cleanup;
  server.cleanup = async () => {
    await cleanup();
    forget();
    process.off('exit', kill);
  };
  return server;
}

// ---- a closed-loop HTTP/1.1 load generator on raw sockets -------------------------------------------

/**
 * Complete HTTP/1.1 responses from a byte stream: status and whether the server closes the connection.
 * Handles Content-Length, chunked bodies and bodies ended by the close. Feed chunks with push(); each
 * complete response is passed to onResponse.
 */
function responseReader(onResponse) {
  let buf = Buffer.alloc(0);
  let head = null; // { status, close, length | -1 chunked | -2 until close }
  // Only what framing needs (status, content-length, chunked, close), found in the lower-cased head: the
  // generator shares the machine with the server, so its cost per answer must not grow with the number
  // of headers a server sends.
  const parseHead = () => {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return false;
    const text = buf.toString('latin1', 0, end + 2).toLowerCase();
    const status = Number(text.slice(9, 12));
    const chunked = /\r\ntransfer-encoding:[^\r]*chunked/.test(text);
    const declared = /\r\ncontent-length:[ \t]*(\d+)/.exec(text);
    const noBody = status === 204 || status === 304 || (status >= 100 && status < 200);
    const length = noBody ? 0 : chunked ? -1 : declared ? Number(declared[1]) : -2;
    head = { status, close: /\r\nconnection:[^\r]*close/.test(text) || length === -2, length };
    buf = buf.subarray(end + 4);
    return true;
  };
  /** Bytes of a complete chunked body at the start of buf, or -1. */
  const chunkedEnd = () => {
    let at = 0;
    for (;;) {
      const eol = buf.indexOf('\r\n', at);
      if (eol < 0) return -1;
      const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
      if (size === 0) {
        const trailerEnd = buf.indexOf('\r\n\r\n', eol);
        if (buf.subarray(eol, eol + 4).toString('latin1') === '\r\n\r\n') return eol + 4;
        return trailerEnd < 0 ? -1 : trailerEnd + 4;
      }
      at = eol + 2 + size + 2;
      if (at > buf.length) return -1;
    }
  };
  return {
    push(chunk) {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      for (;;) {
        if (!head && !parseHead()) return;
        let used;
        if (head.length >= 0) used = buf.length >= head.length ? head.length : -1;
        else if (head.length === -1) used = chunkedEnd();
        else return; // until close
        if (used < 0) return;
        buf = buf.subarray(used);
        const done = head;
        head = null;
        onResponse(done);
      }
    },
    /** The connection closed: a body that runs until the close is complete now. */
    end() {
      if (head?.length === -2) onResponse(head);
      head = null;
      buf = Buffer.alloc(0);
    },
  };
}

/**
 * Drive `connections` keep-alive connections to 127.0.0.1:port for `seconds` (and at most `maxRequests`
 * in all), each sending the next request as soon as the previous answer is complete. `request(n)` gives
 * the full bytes of request n (e.g. from httpRequestBytes). Much cheaper per request than http.request,
 * so on a 2-core machine the generator takes less CPU from the server it measures.
 * Resolves with { requests, seconds, perSecond, statuses: {code: count}, errors, reconnects, latencies }
 * (latencies in ms, sorted, one per complete answer).
 */
export function rawHttpLoad({ port, connections, seconds, request, maxRequests = Infinity, timeoutMs = 10_000 }) {
  const latencies = [];
  const statuses = {};
  let errors = 0;
  let reconnects = 0;
  let sent = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  const more = () => process.hrtime.bigint() < deadline && sent < maxRequests;

  const connection = () =>
    new Promise((finish) => {
      let socket;
      let t0 = 0n;
      let waiting = false;
      const next = () => {
        if (!more()) return (socket.destroy(), finish());
        const n = sent++;
        waiting = true;
        t0 = process.hrtime.bigint();
        socket.write(request(n));
      };
      const open = () => {
        const reader = responseReader((res) => {
          if (!waiting) return;
          waiting = false;
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          if (res.close) {
            socket.removeAllListeners('close');
            socket.destroy();
            reconnects++;
            if (more()) open();
            else finish();
          } else next();
        });
        socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
        socket.setTimeout(timeoutMs, () => socket.destroy(new Error('timeout')));
        socket.on('connect', next);
        socket.on('data', (d) => reader.push(d));
        socket.on('error', () => {});
        socket.on('close', () => {
          reader.end();
          if (waiting) {
            waiting = false;
            errors++;
          }
          if (errors > 1000 || !more()) return finish();
          reconnects++;
          setTimeout(open, 10);
        });
      };
      open();
    });

  return Promise.all(Array.from({ length: connections }, connection)).then(() => {
    const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    latencies.sort((a, b) => a - b);
    return { requests: latencies.length, seconds: elapsed, perSecond: latencies.length / elapsed, statuses, errors, reconnects, latencies };
  });
}

/** The bytes of one HTTP/1.1 request with a body (keep-alive; Host 127.0.0.1). */
export function httpRequestBytes(method, path, port, headers, body) {
  const bytes = Buffer.from(body);
  const lines = [`${method} ${path} HTTP/1.1`, `host: 127.0.0.1:${port}`, `content-length: ${bytes.length}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), bytes]);
}

// ---- a child's wall time and peak RSS ------------------------------------------------------------------

/**
 * Runs a command to its end and measures it: wall time from spawn to exit, and the peak RSS of the
 * process (of the largest process, when it starts others and waits for them): `/usr/bin/time -f %M`
 * when it exists (Debian package `time`), else the VmHWM of /proc/<pid>/status sampled every 5 ms
 * (its last reading before the exit; `peakFrom` says which). With `time`, also the CPU seconds (user +
 * system, all threads and waited-for children; NaN without it). The child is tracked (killed on Ctrl-C).
 * Resolves with { seconds, cpuSeconds, maxRssKiB, peakFrom, code, stdout, stderr }.
 */
export async function runMeasured(command, args, options = {}, timeoutMs = 600_000) {
  const useTime = existsSync('/usr/bin/time');
  const dir = useTime ? tempDir('svc-bench-time-') : null;
  const out = dir ? join(dir, 'time.txt') : null;
  const [cmd, argv] = useTime ? ['/usr/bin/time', ['-f', '%M %U %S', '-o', out, command, ...args]] : [command, args];
  const started = process.hrtime.bigint();
  const child = spawnTracked(cmd, argv, options);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  let hwm = 0;
  const poll = useTime
    ? null
    : setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
          if (m) hwm = Math.max(hwm, Number(m[1]));
        } catch {}
      }, 5);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await child.exited;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  clearTimeout(timer);
  if (poll) clearInterval(poll);
  let maxRssKiB = hwm || NaN;
  let cpuSeconds = NaN;
  if (out) {
    // `time` prints the child's "Command exited with non-zero status" line before the figures.
    const lines = (existsSync(out) ? readFileSync(out, 'utf8') : '').trim().split('\n');
    const [rss, user, sys] = (lines.at(-1) ?? '').split(' ').map(Number);
    maxRssKiB = rss;
    cpuSeconds = user + sys;
    removeTempDir(dir);
  }
  return { seconds, cpuSeconds, maxRssKiB, peakFrom: useTime ? '/usr/bin/time' : '/proc VmHWM', code, stdout, stderr };
}

// ---- CPU profiles -----------------------------------------------------------------------------------

/**
 * The functions with the most self time in a `node --cpu-prof` profile, each placed in the original
 * sources through the bundle's source map when there is one (`<file>.map` beside the profiled file).
 * Returns { samplesMs, top: [{ fn, where, selfMs, percent }] }; idle time is reported as `(idle)`.
 */
export async function cpuProfileTop(profilePath, count = 15) {
  const { SourceMap } = await import('node:module');
  const { fileURLToPath } = await import('node:url');
  const profile = JSON.parse(readFileSync(profilePath, 'utf8'));
  const maps = new Map();
  const mapFor = (url) => {
    if (!maps.has(url)) {
      let map = null;
      try {
        const file = url.startsWith('file:') ? fileURLToPath(url) : url;
        map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
      } catch {}
      maps.set(url, map);
    }
    return maps.get(url);
  };
  const where = ({ url, lineNumber, columnNumber }) => {
    if (!url) return '';
    const entry = mapFor(url)?.findEntry(lineNumber, columnNumber);
    if (entry?.originalSource) return `${entry.originalSource.replace(/^.*?\/(functions|node_modules|protocol|runner)\//, '$1/')}:${entry.originalLine + 1}`;
    return `${url.replace(/^.*\/(node_modules\/|dist\/)/, '$1').replace(/^node:/, 'node:')}:${lineNumber + 1}`;
  };
  // Self time per node: its samples × the time between samples.
  const selfUs = new Map();
  const deltas = profile.timeDeltas ?? [];
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0)));
  const byFn = new Map();
  let total = 0;
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (!us) continue;
    total += us;
    const fn = node.callFrame.functionName || '(anonymous)';
    const key = `${fn}\t${where(node.callFrame)}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
  }
  const top = [...byFn.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, us]) => {
      const [fn, at] = key.split('\t');
      return { fn, where: at, selfMs: round(us / 1000, 1), percent: round((100 * us) / total, 1) };
    });
  return { samplesMs: round(total / 1000, 0), top };
}

/**
 * A V8 heap snapshot's sizes: total, self size per node type (KiB, largest first) and the largest scripts'
 * sources and compiled code by script name (`code` nodes named after their script, KiB).
 */
export function heapSnapshotTop(path, count = 8) {
  const snap = JSON.parse(readFileSync(path, 'utf8'));
  const meta = snap.snapshot.meta;
  const f = meta.node_fields;
  const types = meta.node_types[0];
  const [T, N, S] = ['type', 'name', 'self_size'].map((k) => f.indexOf(k));
  const byType = new Map();
  const byName = new Map();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += f.length) {
    const type = types[snap.nodes[i + T]];
    const size = snap.nodes[i + S];
    total += size;
    byType.set(type, (byType.get(type) ?? 0) + size);
    if (type === 'code' || type === 'string' || type === 'closure' || type === 'object') {
      const key = `${type} ${String(snap.strings[snap.nodes[i + N]]).slice(0, 60)}`;
      byName.set(key, (byName.get(key) ?? 0) + size);
    }
  }
  const top = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, count).map(([k, v]) => [k, round(v / 1024, 0)]);
  return { totalKiB: round(total / 1024, 0), byType: top(byType), scripts: top(byName) };
}
