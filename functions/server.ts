// The API process: config → database (with retry) → migrations → seed → scheduler → HTTP.
// Nothing listens until migrations and the seed succeeded, so /health is never ok on a broken schema.
// `node dist/server.mjs`                                   serve
// `node dist/server.mjs migrate`                           apply migrations and the seed, then exit
// `node dist/server.mjs admin create --email E [--name N]` create an instance admin, print a password link
// `node dist/server.mjs admin password-link --email E`     print a new one-time password link
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServerAdapter } from '@whatwg-node/server';
import mri from 'mri';
import { VERSION } from '../protocol/version.ts';
import { createApp } from './app.ts';
import { audited } from './audit/audit.ts';
import { auditJobs } from './audit/job.ts';
import { sessionKey } from './auth/auth.ts';
import { createPasswordLink, createUser } from './auth/routes.ts';
import { retentionJobs } from './jobs/retention.ts';
import { Hub } from './runners/hub.ts';
import { TerminalRelay } from './runners/terminal.ts';
import { offlineJob } from './runners/presence.ts';
import { Scheduler } from './jobs/scheduler.ts';
import { ConfigError, loadConfig } from './lib/config.ts';
import type { Config } from './lib/config.ts';
import type { Keys } from './lib/context.ts';
import { encryptionKeyFrom } from './lib/crypto.ts';
import { connectWithRetry, sql } from './lib/db/index.ts';
import type { Db } from './lib/db/index.ts';
import { loadMigrations, migrate, seed } from './lib/db/migrate.ts';
import { createLogger } from './lib/log.ts';
import type { Logger } from './lib/log.ts';
import { captureRunnerEvents } from './webhooks/capture.ts';
import { WebhookWorker } from './webhooks/worker.ts';

export function migrationsDir(config: Config): string {
  return resolve(config.MIGRATIONS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'sql'));
}

async function prepareDatabase(config: Config, log: Logger): Promise<Db> {
  const db = await connectWithRetry(config, log);
  try {
    const dir = migrationsDir(config);
    await migrate(db, loadMigrations(dir), log);
    await seed(db, readFileSync(join(dir, 'seed.sql'), 'utf8'), log);
    return db;
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

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

  const db = await prepareDatabase(config, log);
  const encryption = config.APP_ENCRYPTION_KEY ? encryptionKeyFrom(config.APP_ENCRYPTION_KEY) : null;
  if (!encryption) log.warn('APP_ENCRYPTION_KEY is not set: secrets cannot be stored (see README, Configuration)');
  const keys: Keys = { encryption, session: await sessionKey(db, encryption) };
  const scheduler = new Scheduler(db, log.child({ area: 'jobs' }), config.JOB_LEASE_SECONDS);
  for (const job of [...retentionJobs(config), ...auditJobs(config), offlineJob]) scheduler.register(job);
  const hub = new Hub(db, log.child({ area: 'runners' }));
  hub.beforeStore = (runnerId, events) => captureRunnerEvents(db, runnerId, events);
  await hub.start();
  const webhooks = new WebhookWorker({ db, log: log.child({ area: 'webhooks' }), keys, leaseMs: config.WEBHOOKS_LEASE_SECONDS * 1000 });
  if (config.WEBHOOKS_WORKER_ENABLED) await webhooks.start();
  else log.info('webhook dispatcher and worker disabled on this instance (WEBHOOKS_WORKER_ENABLED=false)');
  if (config.JOBS_ENABLED) scheduler.start();
  else log.info('scheduler disabled on this replica (JOBS_ENABLED=false)');

  const fetch = createApp({ config, db, log, scheduler, keys, hub });
  const clientAddress = (req: IncomingMessage) => {
    const forwarded = config.TRUST_PROXY ? req.headers['x-forwarded-for'] : undefined;
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    return first || req.socket.remoteAddress || '';
  };
  const server = createServer(createServerAdapter<{ req: IncomingMessage }>((request, { req }) => fetch(request, clientAddress(req))));
  // In-flight = requests Node has accepted and not finished answering, counted where Node sees them
  // (the adapter may not have called the handler yet while a body is still arriving).
  let inFlight = 0;
  let drained: (() => void) | undefined;
  server.on('request', (req, res) => {
    inFlight++;
    const started = performance.now();
    log.debug('request', { method: req.method, path: req.url?.split('?')[0] });
    res.once('close', () => {
      log.debug('response', { method: req.method, path: req.url?.split('?')[0], status: res.statusCode, ms: Math.round(performance.now() - started) });
      if (--inFlight === 0) drained?.();
    });
  });
  // The runner WebSocket (spec: Runner connection) and the admin terminal relay share the HTTP port;
  // other upgrades are refused.
  const terminals = new TerminalRelay({ config, db, log: log.child({ area: 'terminal' }), scheduler, keys, hub });
  server.on('upgrade', (req, socket, head) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/runner') return hub.handleUpgrade(req, socket, head);
    if (path === '/api/terminal') return terminals.handleUpgrade(req, socket, head);
    socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
  });
  server.keepAliveTimeout = 5_000;
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
    server.close(); // stop accepting; in-flight requests continue
    server.closeIdleConnections();
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    if (inFlight > 0) {
      await Promise.race([new Promise<void>((r) => (drained = r)), new Promise((r) => setTimeout(r, graceMs))]);
    }
    clearInterval(idle);
    server.closeAllConnections();
    await hub.stop();
    await Promise.all([scheduler.stop(graceMs), webhooks.stop(graceMs)]);
    await db.close().catch((err) => log.error('closing the database failed', { error: err }));
    log.info('stopped');
    process.exit(0);
  };
  const { port } = server.address() as AddressInfo;
  log.info('listening', { url: `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${port}`, version: VERSION, port });
}

const USAGE = `usage: server.mjs [serve | migrate | version]
       server.mjs admin create --email <e-mail> [--name <name>]
       server.mjs admin password-link --email <e-mail>
`;

/** Bootstrap and recovery from the command line: the first admin, or a lost password. */
async function adminCommand(config: Config, log: Logger, argv: string[]): Promise<number> {
  const args = mri(argv, { string: ['email', 'name'] });
  const sub = args._[0];
  const email = typeof args.email === 'string' ? args.email.trim().toLowerCase() : '';
  if ((sub !== 'create' && sub !== 'password-link') || !/^[^@\s]+@[^@\s]+$/.test(email)) {
    process.stderr.write(USAGE);
    return 2;
  }
  const db = await prepareDatabase(config, log);
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
        return { userId, ...(await createPasswordLink(tx, config.PUBLIC_URL, userId)) };
      },
    );
    process.stdout.write(`${sub === 'create' ? 'Created instance admin' : 'Password link for'} ${email}.\nSet the password within 24 hours at:\n${link.url}\n`);
    return 0;
  } finally {
    await db.close();
  }
}

async function main(argv: string[]): Promise<number> {
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
    log.error('start failed', { error: err instanceof Error ? err.message : String(err) });
    return 1;
  }
}

main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code);
});
