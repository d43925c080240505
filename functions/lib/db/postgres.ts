// A PostgreSQL server through postgres.js (production, and every multi-replica deployment).
// The package is loaded when a database of this driver is opened (lib/db/index.ts), not at start-up.
import type postgres from 'postgres';
import type { Db, Queryable, Sql } from './port.ts';

// int8 (counts, bigserial ids) as JS numbers, as PGlite returns them; our ids stay below 2^53.
const types = { bigint: { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) } };

/**
 * Our query texts are fixed (values are always parameters), so each is prepared as a named statement
 * on each connection the first time it runs there, then only bound and executed: one round trip and no
 * new plan, where an unprepared query with parameters takes two (postgres.js describes it first).
 * Bounded all the same: past MAX_PREPARED distinct texts in this process, new ones run unprepared,
 * so a text that varied by mistake cannot fill the server's memory with statements. postgres.js keeps
 * its `prepare` option as the master switch: `?prepare=false` in DATABASE_URL (a pooler in transaction
 * mode without prepared-statement support) turns it off.
 */
const MAX_PREPARED = 2000;
const preparedTexts = new Set<string>();
const PREPARE = { prepare: true } as const;
const UNPREPARED = { prepare: false } as const;

function options(text: string) {
  if (preparedTexts.has(text)) return PREPARE;
  if (preparedTexts.size >= MAX_PREPARED) return UNPREPARED;
  preparedTexts.add(text);
  return PREPARE;
}

function wrap(conn: postgres.Sql | postgres.TransactionSql): Queryable {
  return {
    async query<T>(q: Sql) {
      const { text, params } = q.compile();
      // A plain array: postgres.js decorates its result list with count/command/columns.
      return [...(await conn.unsafe(text, params as postgres.ParameterOrJSON<never>[], options(text)))] as T[];
    },
    async exec(text: string) {
      await conn.unsafe(text).simple();
    },
  };
}

export async function openPostgres(url: string, max: number): Promise<Db> {
  const { default: postgresJs } = await import('postgres');
  const conn = postgresJs(url, {
    max,
    types,
    onnotice: () => {},
    connection: { application_name: 'svc' },
    // A database that does not answer fails a request within seconds (503 database_unavailable) rather
    // than holding it for postgres.js's default 30 s.
    connect_timeout: 10,
  });
  await conn`select 1`; // fail fast (and let the caller retry) when the server is not reachable
  return {
    driver: 'postgres',
    ...wrap(conn),
    transaction: (fn) => conn.begin((tx) => fn(wrap(tx))) as Promise<never>,
    async listen(channel, onPayload, onListen) {
      // postgres.js re-makes a dropped LISTEN connection and calls this each time it listens.
      let first = true;
      const sub = await conn.listen(channel, onPayload, () => {
        if (!first) onListen?.();
        first = false;
      });
      return () => sub.unlisten();
    },
    async notify(channel, payload) {
      await conn.notify(channel, payload);
    },
    close: () => conn.end({ timeout: 5 }),
  };
}
