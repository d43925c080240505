// A PostgreSQL server through postgres.js (production, and every multi-replica deployment).
import postgres from 'postgres';
import type { Db, Queryable, Sql } from './port.ts';

// int8 (counts, bigserial ids) as JS numbers, as PGlite returns them; our ids stay below 2^53.
const types = { bigint: { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) } };

function wrap(conn: postgres.Sql | postgres.TransactionSql): Queryable {
  return {
    async query<T>(q: Sql) {
      const { text, params } = q.compile();
      // A plain array: postgres.js decorates its result list with count/command/columns.
      return [...(await conn.unsafe(text, params as postgres.ParameterOrJSON<never>[]))] as T[];
    },
    async exec(text: string) {
      await conn.unsafe(text).simple();
    },
  };
}

export async function openPostgres(url: string, max: number): Promise<Db> {
  const conn = postgres(url, {
    max,
    types,
    onnotice: () => {},
    connection: { application_name: 'svc' },
  });
  await conn`select 1`; // fail fast (and let the caller retry) when the server is not reachable
  return {
    driver: 'postgres',
    ...wrap(conn),
    transaction: (fn) => conn.begin((tx) => fn(wrap(tx))) as Promise<never>,
    async listen(channel, onPayload) {
      const sub = await conn.listen(channel, onPayload);
      return () => sub.unlisten();
    },
    async notify(channel, payload) {
      await conn.notify(channel, payload);
    },
    close: () => conn.end({ timeout: 5 }),
  };
}
