// Embedded PostgreSQL (PGlite, WASM) — the default when DATABASE_URL is unset. One process, one
// connection: PGlite serializes queries itself, and transactions hold it exclusively.
import { mkdirSync } from 'node:fs';
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

export async function openPglite(dataDir: string): Promise<Db> {
  if (dataDir !== 'memory://') mkdirSync(dataDir, { recursive: true });
  const pg = await PGlite.create(dataDir === 'memory://' ? undefined : dataDir);
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
    close: () => pg.close(),
  };
}
