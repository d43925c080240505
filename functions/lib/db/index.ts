// Open the database named by the configuration, retrying with backoff while it is unreachable, so a
// container that starts before its database waits with a clear log line instead of crash-looping.
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { redactUrl } from '../log.ts';
import type { PgliteTemplate } from './pglite.ts';
import type { Db } from './port.ts';

export type { Db, Queryable, Row, Sql } from './port.ts';
export { sql } from './port.ts';

export interface OpenOptions {
  /** A new embedded database starts from this build's template (lib/db/pglite.ts). */
  pgliteTemplate?: PgliteTemplate;
  log?: Logger;
}

/** Only the driver in use is loaded: each driver module imports its package when it opens. */
export async function openDb(config: Config, opts: OpenOptions = {}): Promise<Db> {
  switch (config.DATABASE_DRIVER) {
    case 'pglite':
      return (await import('./pglite.ts')).openPglite(config.PGLITE_DATA_DIR, opts.pgliteTemplate, opts.log, config.PGLITE_SHARED_BUFFERS);
    case 'postgres':
      return (await import('./postgres.ts')).openPostgres(config.DATABASE_URL!, config.DATABASE_POOL_MAX, opts.log, config.DATABASE_CONNECT_ATTEMPT_SECONDS);
    case 'neon':
      return (await import('./neon.ts')).openNeon(config.DATABASE_URL!, config.DATABASE_POOL_MAX, config.NEON_WS_PROXY, opts.log);
  }
}

/**
 * Answers that waiting cannot change: the database does not exist (3D000), the password or the role
 * is wrong (28P01, 28000). Start-up fails at once with PostgreSQL's own message.
 */
const PERMANENT = new Set(['3D000', '28P01', '28000']);
const isPermanent = (err: unknown) => PERMANENT.has(String((err as { code?: unknown })?.code ?? ''));

export async function connectWithRetry(
  config: Config,
  log: Logger,
  sleep = (ms: number) => new Promise((r) => setTimeout(r, ms)),
  pgliteTemplate?: PgliteTemplate,
): Promise<Db> {
  const target = config.DATABASE_URL ? redactUrl(config.DATABASE_URL) : config.PGLITE_DATA_DIR;
  const deadline = Date.now() + config.DATABASE_CONNECT_TIMEOUT_SECONDS * 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      const db = await openDb(config, { pgliteTemplate, log });
      log.info('database connected', { driver: config.DATABASE_DRIVER, target });
      return db;
    } catch (err) {
      const wait = Math.min(30_000, 1000 * 2 ** (attempt - 1));
      const reason = err instanceof Error ? err.message : String(err);
      if (config.DATABASE_DRIVER === 'pglite' || isPermanent(err) || Date.now() + wait > deadline) {
        throw new Error(`cannot open the database (${config.DATABASE_DRIVER} ${target}) after ${attempt} attempt(s): ${reason}`);
      }
      log.warn('database unreachable, retrying', { driver: config.DATABASE_DRIVER, target, attempt, retryInSeconds: wait / 1000, reason });
      await sleep(wait);
    }
  }
}
