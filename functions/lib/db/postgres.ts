// A PostgreSQL server through postgres.js (production, and every multi-replica deployment).
// The package is loaded when a database of this driver is opened (lib/db/index.ts), not at start-up.
import type postgres from 'postgres';
import type { Logger } from '../log.ts';
import { Circuit } from './circuit.ts';
import { isDatabaseUnavailable } from './unavailable.ts';
import type { Db, Queryable, Sql } from './port.ts';
import { withCommitHooks } from './port.ts';

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

/**
 * A transaction on a reserved connection, not postgres.js's begin(): when the connection dies under a
 * transaction (PostgreSQL stopped), begin() still sends ROLLBACK on it, and postgres.js then writes to
 * a socket it has already dropped — a TypeError in a timer that took the whole process down. Here, once
 * a query failed because the connection is gone, nothing more is sent on it and it is not released
 * (the pool has taken it back already); otherwise BEGIN … COMMIT, or ROLLBACK when `fn` throws.
 */
async function transaction<T>(conn: postgres.Sql, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const reserved = await conn.reserve();
  const inner = wrap(reserved);
  let lost: unknown = null;
  const guard = async <R>(run: () => Promise<R>): Promise<R> => {
    if (lost) throw lost;
    try {
      return await run();
    } catch (err) {
      if (isDatabaseUnavailable(err)) lost = err;
      throw err;
    }
  };
  const tx: Queryable = { query: (q) => guard(() => inner.query(q)), exec: (text) => guard(() => inner.exec(text)) };
  try {
    await tx.exec('begin');
    const result = await withCommitHooks(tx, fn);
    await tx.exec('commit');
    return result;
  } catch (err) {
    if (!lost) await tx.exec('rollback').catch(() => {});
    throw err;
  } finally {
    if (!lost) reserved.release();
  }
}

/**
 * Seconds before a closed connection (of the pool, or the LISTEN one) tries again. postgres.js's own
 * grows with each failed connect up to 20 s and is shared by the pool, so after a few seconds of
 * outage the first connection after PostgreSQL's return waited up to that long; this one stays under
 * half a second (jittered, so replicas do not knock in step). What failing requests cost meanwhile is
 * the circuit's business (circuit.ts), not the backoff's.
 */
export const reconnectBackoff = (retries: number) => (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 0.5);

export async function openPostgres(url: string, max: number, log?: Logger, connectAttemptSeconds = 2): Promise<Db> {
  const { default: postgresJs } = await import('postgres');
  const conn = postgresJs(url, {
    max,
    types,
    onnotice: () => {},
    connection: { application_name: 'svc' },
    // A database that does not answer fails a request within seconds (503 database_unavailable) rather
    // than holding it for postgres.js's default 30 s. The circuit (circuit.ts) refuses new queries at once
    // while the database is away, but a query already waiting behind a connection attempt waits for that
    // attempt: at 10 s, a request made while PostgreSQL was shutting down (`-m fast`) once took 10.0 s
    // to get its 503 (test/ops/pg-outage.test.ts). DATABASE_CONNECT_ATTEMPT_SECONDS (default 2) bounds it.
    connect_timeout: connectAttemptSeconds,
    backoff: reconnectBackoff,
  });
  await conn`select 1`; // fail fast (and let the caller retry) when the server is not reachable
  const circuit = new Circuit({
    probe: () => conn`select 1`,
    onChange: (open, openMs) =>
      open
        ? log?.warn('the database cannot be reached: queries fail at once (503) until it answers again')
        : log?.info('the database answers again', { unreachableMs: openMs }),
  });
  const pool = wrap(conn);
  return {
    driver: 'postgres',
    query: (q) => circuit.run(() => pool.query(q)),
    exec: (text) => circuit.run(() => pool.exec(text)),
    transaction: (fn) => circuit.run(() => transaction(conn, fn)),
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
      await circuit.run(() => conn.notify(channel, payload));
    },
    close: () => (circuit.stop(), conn.end({ timeout: 5 })),
  };
}
