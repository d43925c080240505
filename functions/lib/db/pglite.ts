// Embedded PostgreSQL (PGlite, WASM) — the default when DATABASE_URL is unset. One process, one
// connection: PGlite serializes queries itself, and transactions hold it exclusively.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable, Sql } from './port.ts';

type PgliteLike = Pick<PGlite, 'query' | 'exec'>;

function wrap(pg: PgliteLike): Queryable {
  return {
    async query<T>(q: Sql) {
      const { text, params } = q.compile();
      return (await pg.query<T>(text, params)).rows;
    },
    async exec(text: string) {
      await pg.exec(text);
    },
  };
}

/**
 * PGlite is one process's database: a second process opening the same directory would corrupt it.
 * `svc.lock` holds the owner's pid; a lock whose process is gone (kill -9, crash) is taken over.
 */
async function lock(dataDir: string): Promise<() => void> {
  const file = join(dataDir, 'svc.lock');
  const inUse = (pid: number) =>
    new Error(`the embedded database in ${dataDir} is in use by process ${pid}; stop that process first (or use PostgreSQL for several processes)`);
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      // Two processes that both found the same stale lock may both get here; only the one whose pid
      // is still in the file a moment later owns it.
      await new Promise((r) => setTimeout(r, 50));
      const owner = Number(readFileSync(file, 'utf8'));
      if (owner !== process.pid) throw inUse(owner);
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // including inUse above
      const pid = Number(readFileSync(file, 'utf8'));
      if (pid && pid !== process.pid && alive(pid)) throw inUse(pid);
      rmSync(file, { force: true }); // stale: its owner is gone
    }
  }
  throw new Error(`cannot lock the embedded database in ${dataDir}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function openPglite(dataDir: string): Promise<Db> {
  const memory = dataDir === 'memory://';
  if (!memory) mkdirSync(dataDir, { recursive: true });
  const unlock = memory ? () => {} : await lock(dataDir);
  let pg: PGlite;
  try {
    pg = await PGlite.create(memory ? undefined : dataDir);
  } catch (err) {
    unlock();
    throw err;
  }
  const base = wrap(pg);
  return {
    driver: 'pglite',
    ...base,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    async listen(channel, onPayload) {
      const unlisten = await pg.listen(channel, onPayload);
      return () => unlisten();
    },
    async notify(channel, payload) {
      await pg.query('select pg_notify($1, $2)', [channel, payload]);
    },
    close: async () => {
      await pg.close();
      unlock();
    },
  };
}
