// The serving process once its database is ready: keys, the hub, jobs, the HTTP server and its drain.
// functions/server.ts imports this module while the migrations run (it is most of the bundle: the API's
// routes and schemas, the hub, the workers), so compiling it overlaps PostgreSQL's DDL on a new database.
import { costBlockJob } from './codehost/cost-block.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { createServerAdapter } from '@whatwg-node/server';
import { VERSION } from '../protocol/version.ts';
import { serveAdminSocket } from './admin-socket.ts';
import { createApp, createHookDoor } from './app.ts';
import { useAuditKey } from './audit/audit.ts';
import { useActionLinks } from './act/tokens.ts';
import { AuditAnchor } from './audit/checkpoint.ts';
import { auditJobs } from './audit/job.ts';
import { auditMacKey } from './audit/mac.ts';
import { sessionKey } from './auth/auth.ts';
import { announceSetup } from './auth/setup.ts';
import { retentionJobs } from './jobs/retention.ts';
import { Scheduler } from './jobs/scheduler.ts';
import { serverClock, systemClock } from './lib/clock.ts';
import type { Config } from './lib/config.ts';
import type { Keys } from './lib/context.ts';
import type { Db } from './lib/db/index.ts';
import { nodeHasBody } from './lib/http.ts';
import { resolveEncryptionKey } from './lib/keyfile.ts';
import type { Logger } from './lib/log.ts';
import { configuredBase, listeningBase } from './lib/urls.ts';
import { LiveHub } from './live/live.ts';
import { useMetricsSources } from './metrics/collectors.ts';
import { notify } from './notifications/notify.ts';
import { recheckRoots } from './projects/root-check.ts';
import { enforceCaps } from './cost/caps.ts';
import { Hub } from './runners/hub.ts';
import { offlineJob } from './runners/presence.ts';
import { TerminalRelay } from './runners/terminal.ts';
import { PoolDispatcher, kickPool, poolLeaseMs } from './runs/pool.ts';
import { ScheduleRunner } from './schedules/runner.ts';
import { warnUndecryptable } from './settings/keycheck.ts';
import { TRIGGER_CHANGED_CHANNEL, TriggerCache } from './triggers/cache.ts';
import { AUTH_CHANGED_CHANNEL, PrincipalCache } from './auth/principal-cache.ts';
import { TriggerFirer } from './triggers/fire.ts';
import { WebhookWorker } from './webhooks/worker.ts';

// Node loads its fetch implementation (undici, 11–16 ms here) the first time a fetch global (Request,
// Response, Headers) is read; the adapter in startServing reads one. Read here instead, as this module
// loads, which server.ts overlaps with a new database's migrations rather than paying it after them.
void globalThis.Response;

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
/** The background loops start this long after the server listens (see startServing). */
const BACKGROUND_START_MS = 1_000;
/** …and after a failure to start them, tried again this long after. */
const BACKGROUND_RETRY_MS = 5_000;

/**
 * Serve on a migrated and seeded database until a signal: `onShutdown` receives the drain-and-exit
 * function before "listening" is logged (server.ts's signal handlers call it from then on).
 */
export async function startServing(config: Config, log: Logger, db: Db, onShutdown: (shutdown: (signal: string) => Promise<void>) => void): Promise<void> {
  const { key: encryption, origin } = resolveEncryptionKey(config, log);
  await warnUndecryptable(db, encryption, origin.fingerprint, log);
  if (!encryption) log.warn('APP_ENCRYPTION_KEY is not set: audit records and checkpoints carry no MAC (see docs/security.md, The audit log)');
  const keys: Keys = { encryption, origin, session: await sessionKey(db, encryption) };
  const auditKey = auditMacKey(encryption);
  useAuditKey(auditKey);
  const auditAnchor = new AuditAnchor({ db, log: log.child({ area: 'audit' }), key: auditKey, anchorPath: resolve(config.AUDIT_ANCHOR_PATH), notify });
  const scheduler = new Scheduler(db, log.child({ area: 'jobs' }), config.JOB_LEASE_SECONDS);
  for (const job of [...retentionJobs(config), ...auditJobs(config, auditAnchor), offlineJob]) scheduler.register(job);

  const clock = serverClock(config.TEST_CLOCK_OFFSET_SECONDS);
  if (clock !== systemClock) log.warn('TEST_CLOCK_OFFSET_SECONDS shifts this server\'s clock (NODE_ENV=test): for tests only', { seconds: config.TEST_CLOCK_OFFSET_SECONDS });
  // App mode: code-host commands and watch lists carry the App's installation tokens (docs/github-app.md).
  const hub = new Hub(db, log.child({ area: 'runners' }), { key: encryption, clock });
  // The cost block in open pull requests' descriptions (docs/cost.md), through pr.describe.
  scheduler.register(costBlockJob({ db, hub, log: log.child({ area: 'codehost' }) }));
  // A runner back online checks the project roots it could not check while offline (issue #34).
  // …and a pool runner back (or reporting its capacity) may take a queued pool run (functions/runs/pool.ts).
  hub.onHello = (runnerId) => {
    kickPool();
    return recheckRoots(db, hub, log.child({ area: 'projects' }), runnerId);
  };
  hub.onCapacity = () => kickPool();
  // A unit of work may have reached its cost cap with the usage just stored (functions/cost/caps.ts).
  const capsLog = log.child({ area: 'caps' });
  hub.onIngested = (runnerId, events) => enforceCaps({ db, hub, log: capsLog }, runnerId, events);
  await hub.start();
  const webhooks = new WebhookWorker({ db, log: log.child({ area: 'webhooks' }), keys, leaseMs: config.WEBHOOKS_LEASE_SECONDS * 1000 });

  // Inbound triggers fire on every process (functions/triggers/fire.ts); the work is shared through SQL.
  // The hook's cache of enabled triggers (functions/triggers/cache.ts): a change made by any process drops
  // its entry here on the notification; a lost one (the listening connection was re-made) drops them all.
  const triggers = new TriggerCache();
  const unlistenTriggers = await db.listen(TRIGGER_CHANGED_CHANNEL, (id) => triggers.invalidate(id || undefined), () => triggers.invalidate());
  // Who tokens and sessions are, for reads (functions/auth/principal-cache.ts): emptied on any credential
  // change by any process (sql/0042), and when the listening connection was re-made.
  const principals = new PrincipalCache();
  const unlistenAuth = await db.listen(AUTH_CHANGED_CHANNEL, () => principals.invalidate(), () => principals.invalidate());
  const firer = new TriggerFirer({ db, log: log.child({ area: 'triggers' }), hub, clock, leaseMs: config.TRIGGER_LEASE_SECONDS * 1000, onTriggerChanged: (id) => triggers.invalidate(id) });
  // Project schedules run on replicas with JOBS_ENABLED, once across them (functions/schedules/runner.ts);
  // run-now works on every replica.
  // Pool runs (functions/runs/pool.ts) are dispatched from every process, once across them (SKIP LOCKED).
  const pool = new PoolDispatcher({ db, log: log.child({ area: 'pool' }), hub, clock, leaseMs: poolLeaseMs(config.TRIGGER_LEASE_SECONDS), lossGraceSeconds: config.POOL_LOSS_GRACE_SECONDS });
  const schedules = new ScheduleRunner({ db, log: log.child({ area: 'schedules' }), hub, scheduler, clock, maxFailures: config.SCHEDULE_MAX_FAILURES });
  // The background loops (webhook deliveries, jobs, trigger firing, pool dispatch, schedules) start BACKGROUND_START_MS
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
    pool.start();
    if (config.JOBS_ENABLED) schedules.start();
  };
  let background: Promise<void> | null = null;
  let backgroundTimer: NodeJS.Timeout | undefined;

  const ctx = { config, db, log, scheduler, keys, hub, clock, firer, schedules, triggers, principals };
  useMetricsSources({ db, connectedRunners: () => hub.heldRunners().length });
  const fetch = createApp(ctx);
  // POST /hooks/… is served straight from Node's request (app.ts createHookDoor); everything else by the adapter and router.
  const hookDoor = createHookDoor(ctx);
  const clientAddress = (req: IncomingMessage) => {
    const forwarded = config.TRUST_PROXY ? req.headers['x-forwarded-for'] : undefined;
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    return first || req.socket.remoteAddress || '';
  };
  const adapter = createServerAdapter<{ req: IncomingMessage }>((request, { req }) => fetch(request, clientAddress(req), req.socket.remoteAddress ?? ''));
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
  // Links made without a request (the setup link, the CLI's over the admin socket) use the port bound.
  const linkBase = configuredBase({ ...config, PORT: (server.address() as AddressInfo).port });
  // …and so do the action links of chat pushes (functions/act/tokens.ts).
  useActionLinks(encryption, linkBase);
  const closeAdminSocket = await serveAdminSocket({ config, db, log, base: linkBase });
  let stopSetup = () => {};
  let stopping = false;
  onShutdown(async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // One deadline for the whole shutdown, set now: the drain, in-flight requests and running jobs each get
    // what is left of SHUTDOWN_TIMEOUT_SECONDS, so a container engine's stop timeout (docker stop: 10 s,
    // compose's stop_grace_period) longer than it is never reached. Closing the sockets and the database
    // follows (usually well under a second; PGlite must not be killed while it writes).
    const deadline = performance.now() + config.SHUTDOWN_TIMEOUT_SECONDS * 1000;
    const left = () => Math.max(0, deadline - performance.now());
    log.info('shutting down', { signal, inFlight });
    // Drain first, so that a balancer stops sending here before any connection is closed: /health answers
    // 503, every answer closes its connection, new WebSockets are refused, and the listener stays open
    // until no request (but /health) has arrived for DRAIN_QUIET_MS (at most DRAIN_MAX_MS, and never
    // longer than SHUTDOWN_TIMEOUT_SECONDS); a server that was already quiet closes at once. Closing a
    // keep-alive connection that the balancer is about to reuse loses that request without an answer
    // (HAProxy then closes the client's connection for it to retry, which API clients do not).
    draining = true;
    const drainUntil = performance.now() + Math.min(left(), DRAIN_MAX_MS);
    while (performance.now() < drainUntil && (inFlight > 0 || performance.now() - lastRequestAt < DRAIN_QUIET_MS)) await new Promise((r) => setTimeout(r, 50));
    server.close(); // stop accepting; in-flight requests continue
    server.closeIdleConnections();
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    if (inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((r) => (drained = r)), new Promise((r) => (timer = setTimeout(r, left())))]);
      clearTimeout(timer);
    }
    clearInterval(idle);
    server.closeAllConnections();
    clearTimeout(backgroundTimer);
    stopSetup();
    await closeAdminSocket();
    await background?.catch(() => {});
    await Promise.all([hub.stop(), live.stop()]);
    await Promise.all([schedules.stop().then(() => scheduler.stop(left())), webhooks.stop(left()), firer.stop(left()), pool.stop(left()), auditAnchor.stop()]);
    await unlistenTriggers().catch(() => {}); // Neon's pool ends only once its listening client is back
    await unlistenAuth().catch(() => {});
    await db.close().catch((err) => log.error('closing the database failed', { error: err }));
    log.info('stopped');
    process.exit(0);
  });
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
  // The address bound (0.0.0.0 is every interface, not 127.0.0.1) and the URL people should open.
  const everywhere = config.HOST === '0.0.0.0' || config.HOST === '::';
  log.info('listening', {
    bind: `${isIP(config.HOST) === 6 ? `[${config.HOST}]` : config.HOST}:${port}${everywhere ? ' (all interfaces)' : ''}`,
    url: config.PUBLIC_URL ?? listeningBase(config.HOST, port),
    ...(everywhere && !config.PUBLIC_URL ? { hint: 'from other machines use this host\'s name or address, and set PUBLIC_URL to it' } : {}),
    version: VERSION,
    port,
  });
  // While no user exists: the one-time setup link for the first admin (functions/auth/setup.ts).
  if (!stopping) stopSetup = announceSetup({ db, log, base: linkBase });
}

