#!/usr/bin/env node
// A test topology of svc on one machine (docs/operations.md "Several replicas"): 3 server processes on
// one PostgreSQL database behind HAProxy (round robin, WebSocket upgrade, health checks on /health), and
// a handful of real runner bundles paired and connected through the balancer. Used by hand and by the
// tests (test/ops/cluster.test.ts); scripts/cluster.sh is the entry point.
//
//   scripts/cluster.sh up [--runners N] [--balancer haproxy|nginx] [--env-file <file>] [--dist <dir>] [--runner-dist <dir>]
//                                          start everything; the last line printed is BALANCER=http://127.0.0.1:<port>
//   scripts/cluster.sh kill <n> [<n>…]    kill -9 of those replicas (1 to 3), all at once
//   scripts/cluster.sh stop <n> [<n>…]    SIGTERM of those replicas (they drain)
//   scripts/cluster.sh start <n> [<n>…]   start those replicas again, on their ports ([--dist <dir>|current]: on another build)
//   scripts/cluster.sh restart-balancer   kill -9 of the balancer, then start it again on its port
//   scripts/cluster.sh restart-runner <n> [--dist <dir>|current]   the runner again (on another build)
//   scripts/cluster.sh status             one line per process
//   scripts/cluster.sh down               stop everything `up` started
//
// Environment, read by `up` only: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/svc_cluster,
// created when missing), CLUSTER_RUNNERS (3), CLUSTER_PORT (the balancer's port; a free one by default),
// CLUSTER_BALANCER, CLUSTER_ENV_FILE (as --env-file: settings for every replica, one `NAME=value` a
// line, e.g. `TRIGGER_RATE_PER_HOUR=1000000` for a benchmark or `AUDIT_VERIFY_CRON=0 3 * * *`).
// `up` saves the database and the replicas' settings in the topology's state, and every later command
// uses those: a replica started from another shell joins the same database with the same settings.
// Every command reads CLUSTER_DIR (default .tmp/cluster: state, logs, runner homes). The state of a
// topology is in $CLUSTER_DIR/cluster.json (mode 600): ports, pids, the database URL and settings, the
// instance admin's e-mail, password and API token.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIR = resolve(process.env.CLUSTER_DIR ?? join(ROOT, '.tmp', 'cluster'));
const STATE = join(DIR, 'cluster.json');
const CERT = join(DIR, 'tls.crt');
const SERVER = join(ROOT, 'dist', 'server.mjs');
const RUNNER = join(ROOT, 'dist', 'svc-runner.mjs');
/** The bundles of a build: this checkout's, or another's (`--dist <its dist/>`, e.g. a previous release). */
const serverOf = (dist) => (dist ? join(resolve(dist), 'server.mjs') : SERVER);
const runnerOf = (dist) => (dist ? join(resolve(dist), 'svc-runner.mjs') : RUNNER);
const REPLICAS = 3;
/** The database `up` puts the topology on; later commands use the one saved in its state (`database`). */
const UP_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_cluster';

const say = (line) => process.stdout.write(`${line}\n`);
const fail = (message) => {
  process.stderr.write(`cluster: ${message}\n`);
  process.exit(1);
};
const load = () => (existsSync(STATE) ? JSON.parse(readFileSync(STATE, 'utf8')) : null);
const save = (s) => writeFileSync(STATE, `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
const alive = (pid) => {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** Whether any process of the group `pgid` (a daemon() and its children) is left. */
const groupAlive = (pgid) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((ok, ko) => {
    const s = createServer().once('error', ko).listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

async function waitFor(what, check, ms = 60_000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > end) fail(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** A process that outlives this script: its own session, output to a log file. */
function daemon(argv, env, log, cwd = ROOT) {
  const fd = openSync(log, 'a');
  const p = spawn(argv[0], argv.slice(1), { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
  p.unref();
  return p.pid;
}

function serverEnv(s, i) {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    TZ: 'UTC',
    DATABASE_URL: s.database,
    HOST: '127.0.0.1',
    PORT: String(s.replicas[i - 1].port),
    PUBLIC_URL: s.balancer,
    TRUST_PROXY: 'true',
    APP_ENCRYPTION_KEY: s.encryptionKey,
    AUDIT_ANCHOR_PATH: join(DIR, `replica-${i}`, 'audit-anchor.json'),
    LOG_LEVEL: 'info',
    SHUTDOWN_TIMEOUT_SECONDS: '5',
    ...(s.serverEnv ?? {}),
  };
}

/**
 * The replicas' extra settings from an env file (--env-file, CLUSTER_ENV_FILE): one `NAME=value` a line,
 * the value as written up to the end of the line (spaces kept: `AUDIT_VERIFY_CRON=0 3 * * *`), or quoted
 * with '…' or "…"; blank lines and lines starting with # are skipped.
 */
function parseEnvFile(text, file = 'the env file') {
  const out = {};
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim() || line.trimStart().startsWith('#')) return;
    const m = /^\s*([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new Error(`${file}, line ${i + 1}: not NAME=value`);
    const q = /^(["'])(.*)\1$/.exec(m[2]);
    out[m[1]] = q ? q[2] : m[2];
  });
  return out;
}

function extraServerEnv(args) {
  // The old space-separated variable could not carry a value with spaces (a *_CRON): refused, not ignored.
  if (process.env.CLUSTER_SERVER_ENV) fail('CLUSTER_SERVER_ENV is no longer read: put the settings in a file, one NAME=value a line, and pass --env-file <file>');
  const file = args['env-file'] ?? process.env.CLUSTER_ENV_FILE;
  if (!file) return {};
  if (!existsSync(file)) fail(`--env-file: ${file} does not exist`);
  try {
    return parseEnvFile(readFileSync(file, 'utf8'), file);
  } catch (e) {
    fail(e.message);
  }
}

async function startReplica(s, i, dist) {
  const r = s.replicas[i - 1];
  if (dist !== undefined) r.dist = dist;
  if (alive(r.pid)) fail(`replica ${i} is running (pid ${r.pid})`);
  mkdirSync(join(DIR, `replica-${i}`), { recursive: true });
  r.pid = daemon([process.execPath, '--enable-source-maps', serverOf(r.dist)], serverEnv(s, i), join(DIR, `replica-${i}.log`));
  save(s);
  await waitFor(`replica ${i} on port ${r.port}`, async () => (await fetch(`http://127.0.0.1:${r.port}/health`)).ok);
}

/** docs/examples/haproxy.cfg with its `bind` and `server` lines (in each backend) replaced by this topology's loopback ports. */
function haproxyConfig(s) {
  const example = readFileSync(join(ROOT, 'docs', 'examples', 'haproxy.cfg'), 'utf8');
  const servers = s.replicas.map((r, i) => `  server api${i + 1} 127.0.0.1:${r.port}`).join('\n');
  let out = example.replace(/^  bind .*$/m, `  bind 127.0.0.1:${s.balancerPort}`);
  out = out.replace(/(^  server .*\n)+/gm, `${servers}\n`);
  if (!out.includes(`127.0.0.1:${s.balancerPort}`) || !out.includes(servers)) fail('docs/examples/haproxy.cfg no longer has the bind and server lines this script replaces');
  return out;
}

/**
 * docs/examples/nginx.conf made runnable here: its upstream servers, its listen port (TLS kept, with the
 * certificate the topology made), paths under the topology's directory.
 */
function nginxConfig(s) {
  const example = readFileSync(join(ROOT, 'docs', 'examples', 'nginx.conf'), 'utf8');
  const servers = s.replicas.map((r) => `    server 127.0.0.1:${r.port};`).join('\n');
  let out = example.replace(/(^    server [^;]*:8080;\n)+/gm, `${servers}\n`);
  out = out.replace(/^(\s*)listen 443 ssl;$/m, `$1listen 127.0.0.1:${s.balancerPort} ssl;`);
  // The redirect from port 80 goes: without its `listen` line nginx would still take *:80 (as root).
  out = out.replace(/^  server \{\n\s*listen 80;\n[^}]*\}\n\n/m, '');
  out = out.replace(/^(\s*)server_name .*;$/gm, '$1server_name localhost;');
  out = out.replace(/ssl_certificate\s+\S+;/, `ssl_certificate ${join(DIR, 'tls.crt')};`).replace(/ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${join(DIR, 'tls.key')};`);
  // Run as this user in the foreground, with every file under the topology's directory.
  const head = `daemon off;\npid ${join(DIR, 'nginx.pid')};\nerror_log stderr warn;\n`;
  out = out.replace(/^user .*;\n/m, '').replace(/^pid .*;\n/m, '').replace(/^error_log .*;\n/m, '');
  out = out.replace(/^http \{$/m, `http {\n  access_log off;\n  client_body_temp_path ${join(DIR, 'nginx-tmp')};\n  proxy_temp_path ${join(DIR, 'nginx-tmp')};`);
  if (!out.includes(servers) || !out.includes(`${s.balancerPort} ssl`) || /listen 80;/.test(out)) fail('docs/examples/nginx.conf no longer has the upstream servers, the listen lines and the redirect block this script replaces');
  return head + out;
}

async function startBalancer(s) {
  if (s.balancerKind === 'nginx') return startNginx(s);
  return startHaproxy(s);
}

/** A self-signed certificate for 127.0.0.1, trusted by the topology's node processes through NODE_EXTRA_CA_CERTS. */
function makeCertificate() {
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(DIR, 'tls.key'), '-out', CERT, '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { encoding: 'utf8' });
  if (made.status !== 0) fail(`openssl could not make the test certificate: ${made.stderr}`);
}

async function startNginx(s) {
  mkdirSync(join(DIR, 'nginx-tmp'), { recursive: true });
  writeFileSync(join(DIR, 'nginx.conf'), nginxConfig(s));
  const check = spawnSync('nginx', ['-t', '-q', '-p', DIR, '-c', join(DIR, 'nginx.conf')], { encoding: 'utf8' });
  if (check.error) fail('nginx is not installed (Debian: apt-get install nginx)');
  if (check.status !== 0) fail(`nginx refused the configuration:\n${check.stderr}`);
  s.balancerPid = daemon(['nginx', '-p', DIR, '-c', join(DIR, 'nginx.conf')], { PATH: process.env.PATH ?? '' }, join(DIR, 'nginx.log'));
  save(s);
  await waitFor('the balancer', async () => (await fetch(`${s.balancer}/health`)).ok);
}

async function startHaproxy(s) {
  writeFileSync(join(DIR, 'haproxy.cfg'), haproxyConfig(s));
  const check = spawnSync('haproxy', ['-c', '-q', '-f', join(DIR, 'haproxy.cfg')], { encoding: 'utf8' });
  if (check.error) fail('haproxy is not installed (Debian: apt-get install haproxy)');
  if (check.status !== 0) fail(`haproxy refused the configuration:\n${check.stderr}`);
  s.balancerPid = daemon(['haproxy', '-db', '-f', join(DIR, 'haproxy.cfg')], { PATH: process.env.PATH ?? '' }, join(DIR, 'haproxy.log'));
  save(s);
  await waitFor('the balancer', async () => (await fetch(`${s.balancer}/health`)).ok);
}

async function ensureDatabase() {
  const url = new URL(UP_DATABASE_URL);
  const name = url.pathname.slice(1);
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) fail(`DATABASE_URL names the database "${name}": use lower-case letters, digits and _`);
  const admin = new URL(UP_DATABASE_URL);
  admin.pathname = '/postgres';
  const { default: postgres } = await import('postgres');
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql`select 1 from pg_database where datname = ${name}`;
    if (!row) await sql.unsafe(`create database ${name}`);
  } finally {
    await sql.end();
  }
}

async function api(s, path, init = {}) {
  const headers = { authorization: `Bearer ${s.admin.token}`, 'content-type': 'application/json', ...(init.headers ?? {}) };
  const r = await fetch(`${s.balancer}${path}`, { ...init, headers });
  if (!r.ok) fail(`${init.method ?? 'GET'} ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** The instance admin: made with the server's CLI, its password set through the balancer, an API token. */
async function bootstrapAdmin(s) {
  const email = 'cluster-admin@example.test';
  const password = randomBytes(18).toString('base64url');
  const env = serverEnv(s, 1);
  let out = spawnSync(process.execPath, [serverOf(s.dist), 'admin', 'create', '--email', email, '--name', 'Cluster admin'], { env, encoding: 'utf8' });
  if (out.status !== 0) out = spawnSync(process.execPath, [serverOf(s.dist), 'admin', 'password-link', '--email', email], { env, encoding: 'utf8' });
  const token = /set-password\?token=([\w-]+)/.exec(out.stdout)?.[1];
  if (!token) fail(`admin create failed:\n${out.stdout}${out.stderr}`);
  const set = await fetch(`${s.balancer}/api/password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, password }) });
  if (!set.ok) fail(`setting the admin password: ${set.status} ${await set.text()}`);
  const signIn = await fetch(`${s.balancer}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (!signIn.ok) fail(`sign-in: ${signIn.status} ${await signIn.text()}`);
  const { csrfToken } = await signIn.json();
  const cookie = signIn.headers.get('set-cookie').split(';')[0];
  const made = await fetch(`${s.balancer}/api/tokens`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken }, body: JSON.stringify({ name: 'cluster' }) });
  if (made.status !== 201) fail(`creating the admin token: ${made.status} ${await made.text()}`);
  s.admin = { email, password, token: (await made.json()).token };
  save(s);
}

function runnerEnv(home) {
  return { ...(existsSync(CERT) ? { NODE_EXTRA_CA_CERTS: CERT } : {}), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_STATE_HOME: join(home, '.local', 'state'), TZ: 'UTC', SVC_TMUX_SOCKET: `svc-cluster-${createHash('sha256').update(home).digest('hex').slice(0, 12)}` };
}

async function startRunner(s, r) {
  r.pid = daemon([process.execPath, runnerOf(s.runnerDist), 'run'], runnerEnv(r.home), join(r.home, 'runner.log'), r.home);
  save(s);
}

async function pairRunners(s, n) {
  for (let i = 1; i <= n; i++) {
    const home = join(DIR, `runner-${i}`);
    mkdirSync(home, { recursive: true });
    const made = await api(s, '/api/runners', { method: 'POST', body: JSON.stringify({ name: `cluster-runner-${i}` }) });
    const paired = spawnSync(process.execPath, [runnerOf(s.runnerDist), 'pair', '--server', s.balancer, '--code', made.code, '--no-detect'], { env: runnerEnv(home), cwd: home, encoding: 'utf8' });
    if (paired.status !== 0) fail(`pairing runner ${i}: ${paired.stdout}${paired.stderr}`);
    // Each runner's OTLP receiver on a port of its own (they share one machine here).
    const configPath = join(home, '.config', 'svc', 'runner.json');
    const config = JSON.parse(readFileSync(configPath, 'utf8'));
    writeFileSync(configPath, `${JSON.stringify({ ...config, otlp: { ...(config.otlp ?? {}), http: await freePort() } }, null, 2)}\n`, { mode: 0o600 });
    const r = { id: made.runner.id, name: `cluster-runner-${i}`, home, pid: 0 };
    s.runners.push(r);
    await startRunner(s, r);
  }
  await waitFor(`${n} runners online`, async () => {
    const { runners } = await api(s, '/api/runners');
    return s.runners.every((r) => runners.find((x) => x.id === r.id)?.status === 'online');
  }, 90_000);
}

async function up(args) {
  if (!existsSync(SERVER) || !existsSync(RUNNER)) {
    const b = spawnSync(process.execPath, [join(ROOT, 'esbuild.config.mjs')], { stdio: 'inherit', cwd: ROOT });
    if (b.status !== 0) fail('the build failed');
  }
  const balancerKind = args.balancer ?? process.env.CLUSTER_BALANCER ?? 'haproxy';
  if (!['haproxy', 'nginx'].includes(balancerKind)) fail('--balancer: haproxy or nginx');
  const extraEnv = extraServerEnv(args); // read before the state directory (where the file may be) is emptied
  if (!args.continue) {
    const old = load();
    if (old && [old.balancerPid, ...old.replicas.map((r) => r.pid), ...old.runners.map((r) => r.pid)].some(alive)) fail(`a topology is running in ${DIR}: scripts/cluster.sh down first`);
    rmSync(DIR, { recursive: true, force: true });
    mkdirSync(DIR, { recursive: true });
    if (balancerKind === 'nginx') {
      // Node reads NODE_EXTRA_CA_CERTS when it starts: make the certificate, then go on in a process that trusts it.
      makeCertificate();
      const again = spawnSync(process.execPath, [fileURLToPath(import.meta.url), 'up', ...process.argv.slice(3), '--continue', '1'], { stdio: 'inherit', env: { ...process.env, NODE_EXTRA_CA_CERTS: CERT } });
      process.exit(again.status ?? 1);
    }
  }
  await ensureDatabase();
  const balancerPort = Number(process.env.CLUSTER_PORT) || (await freePort());
  const s = {
    // The topology's settings, fixed here: later commands (start, …) use these, never their shell's.
    database: UP_DATABASE_URL,
    balancerKind,
    balancerPort,
    // nginx is the TLS example: the topology speaks https through it with a certificate it made.
    balancer: `${balancerKind === 'nginx' ? 'https' : 'http'}://127.0.0.1:${balancerPort}`,
    balancerPid: 0,
    encryptionKey: randomBytes(32).toString('base64'),
    serverEnv: extraEnv,
    replicas: [],
    runners: [],
    admin: null,
    // `--dist <dir>`: the replicas and runners run that build's bundles (a previous release for an upgrade test).
    dist: args.dist ? resolve(args.dist) : null,
    runnerDist: args['runner-dist'] ? resolve(args['runner-dist']) : args.dist ? resolve(args.dist) : null,
  };
  for (let i = 0; i < REPLICAS; i++) s.replicas.push({ port: await freePort(), pid: 0, dist: s.dist });
  save(s);
  // Migrate once before three processes start (each would wait for the others' lock otherwise).
  const m = spawnSync(process.execPath, [serverOf(s.dist), 'migrate'], { env: serverEnv(s, 1), encoding: 'utf8' });
  if (m.status !== 0) fail(`migrate failed:\n${m.stdout}${m.stderr}`);
  await Promise.all(s.replicas.map((_, i) => startReplica(s, i + 1)));
  await startBalancer(s);
  await bootstrapAdmin(s);
  await pairRunners(s, Number(args.runners ?? process.env.CLUSTER_RUNNERS ?? 3));
  say(`STATE=${STATE}`);
  say(`BALANCER=${s.balancer}`);
}

/** The replicas a command names (`kill 1 2`): each once, 1 to 3. */
function replicaArgs(s, args) {
  if (args.length === 0) fail(`name a replica: 1 to ${s.replicas.length}`);
  const out = [];
  for (const arg of args) {
    const i = Number(arg);
    if (!Number.isInteger(i) || i < 1 || i > s.replicas.length) fail(`name a replica: 1 to ${s.replicas.length}`);
    if (!out.includes(i)) out.push(i);
  }
  return out;
}

async function down() {
  const s = load();
  if (!s) return say('nothing is running');
  const pids = [...s.runners.map((r) => r.pid), s.balancerPid, ...s.replicas.map((r) => r.pid)].filter(alive);
  for (const pid of pids) process.kill(pid, 'SIGTERM');
  const end = Date.now() + 15_000;
  while (pids.some(alive) && Date.now() < end) await sleep(100);
  for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
  for (const r of s.runners) spawnSync('tmux', ['-L', runnerEnv(r.home).SVC_TMUX_SOCKET, 'kill-server'], { stdio: 'ignore' });
  say(`stopped ${pids.length} processes`);
}

async function main() {
  const [cmd, ...rest] = process.argv.slice(2);
  const args = {};
  for (let i = 0; i < rest.length; i++) if (rest[i].startsWith('--')) args[rest[i].slice(2)] = rest[++i];
  const positional = rest.filter((a, i) => !a.startsWith('--') && !rest[i - 1]?.startsWith('--'));
  if (cmd === 'up') return up(args);
  if (cmd === 'down') return down();
  const s = load();
  if (!s) fail(`no topology in ${DIR}: scripts/cluster.sh up first`);
  if (s.balancerKind === 'nginx' && process.env.NODE_EXTRA_CA_CERTS !== CERT) {
    // The balancer speaks https with the topology's own certificate, which Node trusts only from its start.
    const again = spawnSync(process.execPath, process.argv.slice(1), { stdio: 'inherit', env: { ...process.env, NODE_EXTRA_CA_CERTS: CERT } });
    process.exit(again.status ?? 1);
  }
  if (!s.database) fail(`the topology in ${DIR} was made by an older scripts/cluster.sh (no saved database): down, then up again`);
  // The topology's own database and settings are used; a different DATABASE_URL in this shell is not.
  if (process.env.DATABASE_URL && process.env.DATABASE_URL !== s.database && cmd !== 'status') process.stderr.write('cluster: this shell\'s DATABASE_URL is not used: the topology keeps the database it was made on (up)\n');
  if (cmd === 'kill' || cmd === 'stop') {
    // Several replicas are signalled together (`kill 1 2`: two of three gone at the same moment).
    const named = replicaArgs(s, positional);
    for (const i of named) if (!alive(s.replicas[i - 1].pid)) fail(`replica ${i} is not running`);
    for (const i of named) process.kill(s.replicas[i - 1].pid, cmd === 'kill' ? 'SIGKILL' : 'SIGTERM');
    await waitFor(`replica ${named.join(', ')} to end`, async () => !named.some((i) => alive(s.replicas[i - 1].pid)), 30_000);
    return say(`replica ${named.join(', ')} ${cmd === 'kill' ? 'killed' : 'stopped'}`);
  }
  if (cmd === 'start') {
    // `--dist <dir>` starts it on another build (a rolling upgrade); `--dist current` on this checkout's.
    const named = replicaArgs(s, positional);
    const dist = args.dist === 'current' ? null : args.dist ? resolve(args.dist) : undefined;
    await Promise.all(named.map((i) => startReplica(s, i, dist)));
    return say(named.map((i) => `replica ${i} started on port ${s.replicas[i - 1].port}`).join('\n'));
  }
  if (cmd === 'restart-runner') {
    // SIGTERM of runner <n>, then the runner again: on this checkout's bundle with `--dist current`, or another build's.
    const n = Number(positional[0]);
    const r = s.runners[n - 1];
    if (!r) fail(`name a runner: 1 to ${s.runners.length}`);
    if (alive(r.pid)) process.kill(r.pid, 'SIGTERM');
    await waitFor(`runner ${n} to end`, async () => !alive(r.pid), 30_000);
    if (args.dist) r.dist = args.dist === 'current' ? null : resolve(args.dist);
    r.pid = daemon([process.execPath, runnerOf(r.dist === undefined ? s.runnerDist : r.dist), 'run'], runnerEnv(r.home), join(r.home, 'runner.log'), r.home);
    save(s);
    return say(`runner ${n} restarted`);
  }
  if (cmd === 'restart-balancer') {
    // kill -9 of the balancer, then the same balancer again: every socket through it is cut. The whole
    // process group: nginx's workers outlive a killed master and would keep its port.
    if (alive(s.balancerPid)) process.kill(-s.balancerPid, 'SIGKILL');
    await waitFor('the balancer to end', async () => !alive(s.balancerPid) && !groupAlive(s.balancerPid), 30_000);
    await startBalancer(s);
    return say('balancer restarted');
  }
  if (cmd === 'status') {
    say(`balancer ${s.balancer} pid ${s.balancerPid} ${alive(s.balancerPid) ? 'up' : 'down'}`);
    s.replicas.forEach((r, i) => say(`replica ${i + 1} port ${r.port} pid ${r.pid} build ${r.dist ?? 'current'} ${alive(r.pid) ? 'up' : 'down'}`));
    s.runners.forEach((r) => say(`runner ${r.name} pid ${r.pid} ${alive(r.pid) ? 'up' : 'down'}`));
    return;
  }
  fail('usage: scripts/cluster.sh up [--runners N] [--balancer haproxy|nginx] [--env-file <file>] [--dist <dir>] | kill <n>… | stop <n>… | start <n>… [--dist <dir>|current] | restart-balancer | restart-runner <n> [--dist <dir>|current] | status | down');
}

main().catch((e) => fail(e instanceof Error ? e.message : String(e)));
