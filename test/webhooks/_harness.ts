// Shared pieces of the webhook tests: a migrated test database (PGlite or PostgreSQL), webhooks made
// straight in SQL, a fake clock, receivers that are real HTTP servers on loopback, and a database
// prepared for a real server process.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import { loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { enqueue } from '../../functions/webhooks/capture.ts';
import { buildEnvelope, eventId } from '../../functions/webhooks/envelope.ts';
import { encryptWebhookSecret, newSecret } from '../../functions/webhooks/webhooks.ts';
import { WebhookWorker } from '../../functions/webhooks/worker.ts';
import type { WorkerOptions } from '../../functions/webhooks/worker.ts';
import { ADMIN_URL, ROOT, TEST_DB, anchorPathFor, freshPostgres, migratedTestDb, pgliteDataDir, removePglite } from '../helpers/db.ts';

export const quiet = createLogger('error');
export const KEY = randomBytes(32);

export const migratedDb = migratedTestDb;

export function fakeClock(start = Date.now()) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms), set: (ms: number) => (t = ms) };
}

export async function addWebhook(db: Db, opts: { url: string; events: string[]; projects?: string[] }): Promise<{ id: string; secret: string }> {
  const id = randomUUID();
  const secret = newSecret();
  await db.query(sql`
    insert into webhooks (id, url, events, projects, secret_ciphertext)
    values (${id}, ${opts.url}, ${sql.json(opts.events)}, ${sql.json(opts.projects ?? [])}, ${encryptWebhookSecret(KEY, id, secret)})`);
  return { id, secret };
}

export const setAllowlist = (db: Db, entries: string[]) => db.query(sql`update webhook_allowlist set entries = ${sql.json(entries)} where id = 1`);

export async function addProject(db: Db, opts: { id?: string; repo?: string; runnerId?: string | null } = {}): Promise<string> {
  const id = opts.id ?? randomUUID();
  await db.query(sql`insert into projects (id, name, repo, runner_id) values (${id}, ${'p-' + id}, ${opts.repo ?? 'acme/widgets'}, ${opts.runnerId ?? null})`);
  return id;
}

/** Put one catalogue event in the outbox, as the capture code would. */
export async function emit(db: Db, type: string, projectId: string, origin: string = randomUUID(), raw: Record<string, unknown> = {}) {
  const envelope = buildEnvelope({ id: eventId('test', origin), type: type as never, ts: new Date(), project: { id: projectId, repo: 'acme/widgets' }, raw });
  await enqueue(db, [envelope]);
  return envelope;
}

export function worker(db: Db, opts: Partial<WorkerOptions> = {}) {
  return new WebhookWorker({ db, log: quiet, keys: { encryption: KEY }, timeoutMs: 2000, leaseMs: 5000, random: () => 0.5, ...opts });
}

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  url: string;
  port: number;
  requests: Received[];
  /** Replace how the receiver answers (default: 200 "ok"). */
  handle: (fn: (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void) => void;
  close: () => Promise<void>;
}

export async function receiver(host = '127.0.0.1'): Promise<Receiver> {
  const requests: Received[] = [];
  let handler: (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void = (_req, res) => res.end('ok');
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const received = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(received);
      handler(req, res, received);
    });
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise<void>((r) => server.listen(0, host, r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    requests,
    handle: (fn) => (handler = fn),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function deliveries(db: Db, webhookId: string) {
  return db.query<{ id: string; event_id: string; status: string; attempts: number; next_attempt_at: Date | null; response_code: number | null; response_body: string | null; last_error: string | null; body: string }>(
    sql`select * from outbound_deliveries where webhook_id = ${webhookId} order by created_at, id`,
  );
}

export async function attempts(db: Db, deliveryId: string) {
  return db.query<{ attempt: number; owner: string; outcome: string | null; error: string | null; detail: string | null; response_code: number | null; response_body: string | null; address: string | null; trial: boolean }>(
    sql`select * from outbound_attempts where delivery_id = ${deliveryId} order by attempt`,
  );
}

/**
 * A migrated database for a server process the test prepares rows for before it starts and reads after
 * it stopped (PGlite allows one process at a time), and the server's environment for it. PostgreSQL
 * is named through its Unix socket so a server in a network namespace reaches it too; null when it
 * has none.
 */
export async function serverDatabase(): Promise<{ env: Record<string, string>; open: () => Promise<Db>; drop: () => Promise<void> } | null> {
  if (TEST_DB === 'pglite') {
    const dir = await pgliteDataDir();
    const db = await openPglite(dir);
    await migrate(db, loadMigrations(`${ROOT}/sql`), quiet);
    await db.close();
    return { env: { PGLITE_DATA_DIR: dir, AUDIT_ANCHOR_PATH: anchorPathFor({ PGLITE_DATA_DIR: dir }) }, open: () => openPglite(dir), drop: async () => removePglite(dir) };
  }
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  const [{ dirs }] = await admin<{ dirs: string }[]>`select current_setting('unix_socket_directories') as dirs`;
  await admin.end();
  const socketDir = dirs.split(',')[0]?.trim();
  if (!socketDir) return null;
  const pg = await freshPostgres();
  const u = new URL(ADMIN_URL);
  const db = await openPostgres(pg.url, 1);
  await migrate(db, loadMigrations(`${ROOT}/sql`), quiet);
  await db.close();
  const env = { DATABASE_URL: `postgres:///${pg.name}`, PGHOST: socketDir, PGPORT: u.port || '5432', PGUSER: decodeURIComponent(u.username), AUDIT_ANCHOR_PATH: anchorPathFor({ DATABASE_URL: pg.url }) };
  return { env, open: () => openPostgres(pg.url, 2), drop: async () => (await pg.drop(), rmSync(env.AUDIT_ANCHOR_PATH, { force: true })) };
}
