// The API process: config → database (with retry) → migrations → seed → scheduler → HTTP.
// Nothing listens until migrations and the seed succeeded, so /health is never ok on a broken schema.
// `node dist/server.mjs`                                   serve
// `node dist/server.mjs migrate`                           apply migrations and the seed, then exit
// `node dist/server.mjs admin create --email E [--name N]` create an instance admin, print a password link
// `node dist/server.mjs admin password-link --email E`     print a new one-time password link
//   (both take --url <base>; the link's base is --url, else PUBLIC_URL, else HOST:PORT; `admin --help`)
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServerAdapter } from '@whatwg-node/server';
import mri from 'mri';
import { VERSION } from '../protocol/version.ts';
import { createApp, createHookDoor } from './app.ts';
import { audited, useAuditKey } from './audit/audit.ts';
import { AuditAnchor } from './audit/checkpoint.ts';
import { auditJobs } from './audit/job.ts';
import { auditMacKey } from './audit/mac.ts';
import { sessionKey } from './auth/auth.ts';
import { createPasswordLink, createUser } from './auth/routes.ts';
import { retentionJobs } from './jobs/retention.ts';
import { Hub } from './runners/hub.ts';
import { TerminalRelay } from './runners/terminal.ts';
import { LiveHub } from './live/live.ts';
import { offlineJob } from './runners/presence.ts';
import { Scheduler } from './jobs/scheduler.ts';
import { ConfigError, loadConfig, publicUrl } from './lib/config.ts';
import type { Config } from './lib/config.ts';
import type { Keys } from './lib/context.ts';
import { connectWithRetry, sql } from './lib/db/index.ts';
import type { Db } from './lib/db/index.ts';
import { loadMigrations, migrate, seed } from './lib/db/migrate.ts';
import type { Migration } from './lib/db/migrate.ts';
import type { PgliteTemplate } from './lib/db/pglite.ts';
import { nodeHasBody } from './lib/http.ts';
import { resolveEncryptionKey } from './lib/keyfile.ts';
import { configuredBase, isLoopback, listeningBase } from './lib/urls.ts';
import { createLogger } from './lib/log.ts';
import type { Logger } from './lib/log.ts';
import { installSafetyNet } from './lib/safety-net.ts';
import { warnUndecryptable } from './settings/keycheck.ts';
import { serverClock, systemClock } from './lib/clock.ts';
import { ScheduleRunner } from './schedules/runner.ts';
import { TRIGGER_CHANGED_CHANNEL, TriggerCache } from './triggers/cache.ts';
import { TriggerFirer } from './triggers/fire.ts';
import { captureRunnerNotifications } from './notifications/capture.ts';
import { captureRunnerEvents } from './webhooks/capture.ts';
import { WebhookWorker } from './webhooks/worker.ts';

export function migrationsDir(config: Config): string {
  return resolve(config.MIGRATIONS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'sql'));
}

/** dist/pglite-template/ and its manifest, written by the build (scripts/pglite-template.ts). */
export function pgliteTemplate(migrations: Migration[]): PgliteTemplate {
  const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
  return { dir: join(dist, 'pglite-template'), manifest: join(dist, 'pglite-template.json'), migrations };
}

async function prepareDatabase(config: Config, log: Logger): Promise<Db> {
  const dir = migrationsDir(config);
  const migrations = loadMigrations(dir);
  const db = await connectWithRetry(config, log, undefined, pgliteTemplate(migrations));
  try {
    await migrate(db, migrations, log);
    await seed(db, readFileSync(join(dir, 'seed.sql'), 'utf8'), log);
    return db;
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

/** How long a refused body's connection stays half-open so the client can read the answer. */
const LINGER_MS = 2000;

/**
 * Does the answer say `Connection: close`? Set with setHeader, or passed whole to writeHead (as the
 * adapter does with our own answers, lib/respond.ts): then only the head Node wrote shows it.
 */
function closing(res: ServerResponse): boolean {
  if (/^close$/i.test(String(res.getHeader('connection') ?? ''))) return true;
  return /\r\nconnection: *close\r\n/i.test((res as unknown as { _header?: string | null })._header ?? '');
}

/**
 * An answer marked `Connection: close` while the request body is still arriving (413, or no route read
 * it) ends the connection without reading the rest: Node would either read and discard all of it, or
 * destroy the socket at once — and a reset with unread data can make the client lose the answer. So:
 * stop reading, send the answer and a FIN, and destroy the socket LINGER_MS later.
 */
function closeUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket; // req.socket is gone once a reader gave up on the body
  res.once('prefinish', () => {
    if (req.complete || socket.destroyed || !closing(res)) return;
    // A body nobody touched would be read and discarded whole once the answer is done: read(0) marks
    // it consumed, so Node stops the socket when the request's small buffer is full.
    req.read(0);
    // Node's answer-finished handler calls destroySoon() for a closing connection: linger instead.
    socket.destroySoon = () => {
      req.pause();
      socket.end();
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      socket.once('close', () => clearTimeout(timer));
    };
  });
}

/** LOG_LEVEL=debug: a line when a request arrives and one when its answer is done. */
function logExchange(log: Logger, req: IncomingMessage, res: ServerResponse): void {
  const started = performance.now();
  const path = req.url?.split('?')[0];
  log.debug('request', { method: req.method, path });
  res.once('close', () => log.debug('response', { method: req.method, path, status: res.statusCode, ms: Math.round(performance.now() - started) }));
}

/** On SIGTERM, the listener closes once no request has arrived for this long (a balancer has taken the replica out)… */
const DRAIN_QUIET_MS = 1_000;
/** …or after this long at most. */
const DRAIN_MAX_MS = 5_000;
/** The background loops start this long after the server listens (see serve()). */
const BACKGROUND_START_MS = 1_000;
/** …and after a failure to start them, tried again this long after. */
const BACKGROUND_RETRY_MS = 5_000;

async function serve(config: Config, log: Logger): Promise<void> {
  // Signals first: a SIGTERM while connecting or migrating exits at once (the migration's transaction
  // rolls back); once serving, it drains. Installed before "listening" is logged, so no window where
  // the default action kills the process.
  let shutdown: ((signal: string) => Promise<void>) | undefined;
  const onSignal = (signal: string) => {
    if (shutdown) return void shutdown(signal);
    log.info('stopped during start-up', { signal });
    process.exit(0);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  // Errors nobody caught: logged; those escaping from webhook work never end the process, any other
  // still does (exit 1) — lib/safety-net.ts says why.
  installSafetyNet(log);

  const db = await prepareDatabase(config, log);
  const { key: encryption, origin } = resolveEncryptionKey(config, log);
  await warnUndecryptable(db, encryption, origin.fingerprint, log);
  if (!encryption) log.warn('APP_ENCRYPTION_KEY is not set: audit records and checkpoints carry no MAC (see docs/security.md, The audit log)');
  const keys: Keys = { encryption, origin, session: await sessionKey(db, encryption) };
  const auditKey = auditMacKey(encryption);
  useAuditKey(auditKey);
  const auditAnchor = new AuditAnchor({ db, log: log.child({ area: 'audit' }), key: auditKey, anchorPath: resolve(config.AUDIT_ANCHOR_PATH) });
  const scheduler = new Scheduler(db, log.child({ area: 'jobs' }), config.JOB_LEASE_SECONDS);
  for (const job of [...retentionJobs(config), ...auditJobs(config, auditAnchor), offlineJob]) scheduler.register(job);
  const hub = new Hub(db, log.child({ area: 'runners' }));
  hub.beforeStore = async (runnerId, events) => {
    await captureRunnerEvents(db, runnerId, events);
    await captureRunnerNotifications(db, runnerId, events);
  };
  await hub.start();
  const webhooks = new WebhookWorker({ db, log: log.child({ area: 'webhooks' }), keys, leaseMs: config.WEBHOOKS_LEASE_SECONDS * 1000 });

  const clock = serverClock(config.TEST_CLOCK_OFFSET_SECONDS);
  if (clock !== systemClock) log.warn('TEST_CLOCK_OFFSET_SECONDS shifts this server\'s clock (NODE_ENV=test): for tests only', { seconds: config.TEST_CLOCK_OFFSET_SECONDS });
  // Inbound triggers fire on every process (functions/triggers/fire.ts); the work is shared through SQL.
  // The hook's cache of enabled triggers (functions/triggers/cache.ts): a change made by any process drops
  // its entry here on the notification; a lost one (the listening connection was re-made) drops them all.
  const triggers = new TriggerCache();
  const unlistenTriggers = await db.listen(TRIGGER_CHANGED_CHANNEL, (id) => triggers.invalidate(id || undefined), () => triggers.invalidate());
  const firer = new TriggerFirer({ db, log: log.child({ area: 'triggers' }), hub, clock, leaseMs: config.TRIGGER_LEASE_SECONDS * 1000, onTriggerChanged: (id) => triggers.invalidate(id) });
  // Project schedules run on replicas with JOBS_ENABLED, once across them (functions/schedules/runner.ts);
  // run-now works on every replica.
  const schedules = new ScheduleRunner({ db, log: log.child({ area: 'schedules' }), hub, scheduler, clock, maxFailures: config.SCHEDULE_MAX_FAILURES });
  // The background loops (webhook deliveries, jobs, trigger firing, schedules) start BACKGROUND_START_MS
  // after the server listens: their first claims and sweeps would otherwise queue before the first
  // requests (a balancer's health check, the page a user opens), on PGlite's single connection most of
  // all (docs/performance.md, Cold start). Requests work meanwhile: an accepted trigger or a run-now
  // starts its work itself, and nothing due is lost, only looked at a second later.
  if (!config.WEBHOOKS_WORKER_ENABLED) log.info('webhook dispatcher and worker disabled on this instance (WEBHOOKS_WORKER_ENABLED=false)');
  if (!config.JOBS_ENABLED) log.info('scheduler disabled on this replica (JOBS_ENABLED=false)');
  const startBackground = async () => {
    if (config.WEBHOOKS_WORKER_ENABLED) await webhooks.start();
    if (config.JOBS_ENABLED) scheduler.start();
    firer.start();
    if (config.JOBS_ENABLED) schedules.start();
  };
  let background: Promise<void> | null = null;
  let backgroundTimer: NodeJS.Timeout | undefined;

  const ctx = { config, db, log, scheduler, keys, hub, clock, firer, schedules, triggers };
  const fetch = createApp(ctx);
  // POST /hooks/… is served straight from Node's request (app.ts createHookDoor); everything else by the adapter and router.
  const hookDoor = createHookDoor(ctx);
  const clientAddress = (req: IncomingMessage) => {
    const forwarded = config.TRUST_PROXY ? req.headers['x-forwarded-for'] : undefined;
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    return first || req.socket.remoteAddress || '';
  };
  const adapter = createServerAdapter<{ req: IncomingMessage }>((request, { req }) => fetch(request, clientAddress(req)));
  // Draining (after SIGTERM, before the listener closes): see `shutdown` below.
  let draining = false;
  let lastRequestAt = 0;
  const server = createServer((req, res) => {
    if (draining) {
      res.shouldKeepAlive = false; // every answer closes its connection: none is left idle for a balancer to reuse
      if (req.url === '/health' || req.url?.startsWith('/health?')) {
        const body = JSON.stringify({ status: 'stopping', timestamp: new Date().toISOString() });
        res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', 'retry-after': '1' });
        res.end(body);
        return;
      }
    }
    if (!hookDoor(req, res)) void adapter(req, res);
  });
  // In-flight = requests Node has accepted and not finished answering, counted where Node sees them
  // (the adapter may not have called the handler yet while a body is still arriving). This listener runs
  // for every request: no closure per request, and the debug lines' fields only when they are written.
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const onResponseClose = () => {
    if (--inFlight === 0) drained?.();
  };
  const debug = config.LOG_LEVEL === 'debug';
  server.on('request', (req, res) => {
    // Only a request with a body can leave one unread (HTTP/1.1: no length and no chunking = no body).
    if (nodeHasBody(req)) closeUnreadBody(req, res);
    inFlight++;
    if (req.url !== '/health') lastRequestAt = performance.now(); // a balancer's checks keep coming while it drains
    res.on('close', onResponseClose); // emitted once per response
    if (debug) logExchange(log, req, res);
  });
  // The runner WebSocket (spec: Runner connection), the admin terminal relay and the live notices share the HTTP port;
  // other upgrades are refused.
  const terminals = new TerminalRelay({ config, db, log: log.child({ area: 'terminal' }), scheduler, keys, hub, clock });
  // Live change notices for the pages (functions/live/live.ts), fanned out through LISTEN/NOTIFY.
  const live = new LiveHub({ config, db, log: log.child({ area: 'live' }), scheduler, keys, hub, clock });
  await live.start();
  server.on('upgrade', (req, socket, head) => {
    // A draining replica takes no new WebSocket: the client's next try lands on another replica.
    if (draining) return void socket.end('HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/runner') return hub.handleUpgrade(req, socket, head);
    if (path === '/api/terminal') return terminals.handleUpgrade(req, socket, head);
    if (path === '/api/live') return live.handleUpgrade(req, socket, head);
    socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
  });
  // Idle keep-alive connections are kept longer than clients and proxies keep theirs (fetch: about 4 s;
  // load balancers: 60 s), so the server is never the side that closes a connection a client is about to
  // reuse (that race loses the request: "fetch failed"/502), also when a busy client reads answers late.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(config.PORT, config.HOST, () => ok());
  });
  let stopping = false;
  shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const graceMs = config.SHUTDOWN_TIMEOUT_SECONDS * 1000;
    log.info('shutting down', { signal, inFlight });
    // Drain first, so that a balancer stops sending here before any connection is closed: /health answers
    // 503, every answer closes its connection, new WebSockets are refused, and the listener stays open
    // until no request (but /health) has arrived for DRAIN_QUIET_MS (at most DRAIN_MAX_MS, and never
    // longer than SHUTDOWN_TIMEOUT_SECONDS); a server that was already quiet closes at once. Closing a
    // keep-alive connection that the balancer is about to reuse loses that request without an answer
    // (HAProxy then closes the client's connection for it to retry, which API clients do not).
    draining = true;
    const drainUntil = performance.now() + Math.min(graceMs, DRAIN_MAX_MS);
    while (performance.now() < drainUntil && (inFlight > 0 || performance.now() - lastRequestAt < DRAIN_QUIET_MS)) await new Promise((r) => setTimeout(r, 50));
    server.close(); // stop accepting; in-flight requests continue
    server.closeIdleConnections();
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    if (inFlight > 0) {
      await Promise.race([new Promise<void>((r) => (drained = r)), new Promise((r) => setTimeout(r, graceMs))]);
    }
    clearInterval(idle);
    server.closeAllConnections();
    clearTimeout(backgroundTimer);
    await background?.catch(() => {});
    await Promise.all([hub.stop(), live.stop()]);
    await Promise.all([schedules.stop().then(() => scheduler.stop(graceMs)), webhooks.stop(graceMs), firer.stop(graceMs), auditAnchor.stop()]);
    await unlistenTriggers().catch(() => {}); // Neon's pool ends only once its listening client is back
    await db.close().catch((err) => log.error('closing the database failed', { error: err }));
    log.info('stopped');
    process.exit(0);
  };
  // Every replica keeps its own anchor file current (functions/audit/checkpoint.ts), JOBS_ENABLED or not;
  // the check at start runs at once, so that what GET /api/audit/verification shows first is its result.
  auditAnchor.start(config.AUDIT_CHECKPOINT_CRON);
  // A failure (the webhook worker's LISTEN, when the database is away at that moment) does not end a
  // process that already serves requests: it is logged, and tried again until it works or the process stops.
  const launchBackground = () => {
    if (stopping) return;
    background = startBackground().catch((err) => {
      log.error('the background work could not start; trying again', { inSeconds: BACKGROUND_RETRY_MS / 1000, error: err instanceof Error ? err.message : String(err) });
      backgroundTimer = setTimeout(launchBackground, BACKGROUND_RETRY_MS);
    });
  };
  backgroundTimer = setTimeout(launchBackground, BACKGROUND_START_MS);
  const { port } = server.address() as AddressInfo;
  log.info('listening', { url: listeningBase(config.HOST, port), version: VERSION, port });
}

const USAGE = `usage: server.mjs [serve | migrate | version | help]
       server.mjs admin create --email <e-mail> [--name <name>] [--url <base URL>]
       server.mjs admin password-link --email <e-mail> [--url <base URL>]

The admin commands print a one-time link to set the password (valid 24 hours). The link starts with
--url, else PUBLIC_URL, else the address the server listens on (HOST, PORT). With the embedded
database stop the server first.
`;

/** A CLI mistake: the message and exit code 2, no stack and no "start failed". */
class UsageError extends Error {}

/** Where the printed link points (see lib/urls.ts), and a warning when only this machine can open it. */
function cliLinkBase(config: Config, url: unknown): { base: string; warning: string | null } {
  let base: string;
  if (url !== undefined) {
    const parsed = publicUrl.safeParse(typeof url === 'string' ? url : '');
    if (!parsed.success) throw new UsageError(`--url ${parsed.error.issues[0].message}`);
    base = parsed.data;
  } else {
    base = configuredBase(config);
  }
  const { hostname, port } = new URL(base);
  const fix = 'pass --url <base URL> or set PUBLIC_URL to the address people open';
  if (url === undefined && !config.PUBLIC_URL && config.PORT === 0) return { base, warning: `PORT=0 lets the server pick a free port at start, so this link has no usable port: ${fix}` };
  if (isLoopback(hostname)) return { base, warning: `this link uses ${hostname}${port ? `:${port}` : ''}, a loopback address: it opens only on this machine; ${fix}` };
  return { base, warning: null };
}

/** Bootstrap and recovery from the command line: the first admin, or a lost password. */
async function adminCommand(config: Config, log: Logger, argv: string[]): Promise<number> {
  const args = mri(argv, { string: ['email', 'name', 'url'] });
  const sub = args._[0];
  const email = typeof args.email === 'string' ? args.email.trim().toLowerCase() : '';
  if ((sub !== 'create' && sub !== 'password-link') || !/^[^@\s]+@[^@\s]+$/.test(email)) {
    process.stderr.write(USAGE);
    return 2;
  }
  const { base, warning } = cliLinkBase(config, args.url);
  const db = await prepareDatabase(config, log);
  // The same key the server uses (the environment's, or the embedded database's key file once the server
  // made it), so records the CLI appends carry the audit MAC like the server's. Its warnings are the server's to give.
  const quietLog = createLogger('error');
  useAuditKey(auditMacKey(resolveEncryptionKey(config, quietLog, { create: false }).key));
  try {
    const link = await audited(
      db,
      (r: { userId: string }) => ({ actor: { label: 'cli' }, action: sub === 'create' ? 'user.create' : 'user.password_link', target: { type: 'user', id: r.userId }, diff: sub === 'create' ? { after: { email, instanceAdmin: true } } : null }),
      async (tx) => {
        let userId: string;
        if (sub === 'create') {
          const name = (typeof args.name === 'string' ? args.name.trim() : '') || email.split('@')[0];
          userId = (await createUser(tx, { email, name, instanceAdmin: true })).id;
        } else {
          const [u] = await tx.query<{ id: string }>(sql`select id from users where lower(email) = ${email}`);
          if (!u) throw new Error(`no user with e-mail ${email}`);
          userId = u.id;
        }
        return { userId, ...(await createPasswordLink(tx, base, userId)) };
      },
    );
    process.stdout.write(`${sub === 'create' ? 'Created instance admin' : 'Password link for'} ${email}.\nSet the password within 24 hours at:\n${link.url}\n`);
    if (warning) process.stderr.write(`admin: warning: ${warning}\n`);
    return 0;
  } finally {
    await db.close();
  }
}

/** `help`, `--help`, `-h`, also after `admin`: the usage on stdout, whatever the configuration. */
const HELP = new Set(['help', '--help', '-h']);
const wantsHelp = (argv: string[]) => HELP.has(argv[0] ?? '') || (argv[0] === 'admin' && (HELP.has(argv[1] ?? '') || argv.includes('--help') || argv.includes('-h')));

async function main(argv: string[]): Promise<number> {
  if (wantsHelp(argv)) {
    process.stdout.write(USAGE);
    return 0;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`svc: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const log = createLogger(config.LOG_LEVEL);
  const command = argv[0] ?? 'serve';
  try {
    if (command === 'serve') {
      await serve(config, log);
      return -1; // keep running
    }
    if (command === 'migrate') {
      const db = await prepareDatabase(config, log);
      await db.close();
      return 0;
    }
    if (command === 'admin') {
      return await adminCommand(config, log, argv.slice(1));
    }
    if (command === 'version' || command === '--version') {
      process.stdout.write(`${VERSION}\n`);
      return 0;
    }
    process.stderr.write(`${USAGE}unknown command: ${command}\n`);
    return 2;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (command !== 'admin') log.error('start failed', { error: message });
    else process.stderr.write(`${err instanceof UsageError ? USAGE : ''}admin: ${message}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
}

main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code);
});
