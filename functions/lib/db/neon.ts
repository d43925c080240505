// Neon's serverless driver (PostgreSQL over a WebSocket). Selected with DATABASE_DRIVER=neon or a
// *.neon.tech DATABASE_URL. NEON_WS_PROXY points it at a self-hosted WebSocket proxy instead:
// `wss://proxy.example.com/v1` (or ws:// for a proxy on loopback); `?address=host:port` is appended.
// The packages are loaded when a database of this driver is opened (lib/db/index.ts), not at start-up.
//
// When the database (or the proxy) goes away it behaves as the postgres.js driver does
// (docs/operations.md, "When PostgreSQL goes away"): the first failed query opens the circuit
// (circuit.ts) and every query then fails at once with 503 database_unavailable until a probe answers;
// a LISTEN whose connection dropped is made again, every 250 ms, and `onListen` tells its owner to
// re-read what it may have missed. A dropped connection never escapes as an unhandled 'error' event
// (which would end the process).
import { Circuit, PROBE_EVERY_MS } from './circuit.ts';
import type { Db, Queryable, Sql } from './port.ts';
import { quoteIdent, withCommitHooks } from './port.ts';
import { UNREACHABLE_CODE } from './unavailable.ts';
import type { Logger } from '../log.ts';
import type { PoolClient } from '@neondatabase/serverless';

type Client = { query: (text: string, params?: unknown[]) => Promise<{ rows: unknown[] }> };

/**
 * The driver (node-postgres over a WebSocket) reports a lost connection without a code: "Connection
 * terminated unexpectedly", "Connection terminated", a WebSocket error event. Such an error gets the
 * code the circuit and the 503 answer know (lib/db/unavailable.ts); PostgreSQL's own errors keep theirs.
 */
function classified(err: unknown): unknown {
  const e = err as { code?: unknown; message?: unknown; type?: unknown } | null;
  if (e && typeof e === 'object' && typeof e.code !== 'string') {
    const message = typeof e.message === 'string' ? e.message : '';
    if (/connection terminated|connection error|websocket|socket|closed|timeout exceeded when trying to connect/i.test(message) || e.type === 'error') {
      return Object.assign(err instanceof Error ? err : new Error(message || 'the database connection was lost'), { code: UNREACHABLE_CODE });
    }
  }
  return err;
}

const classifying = async <T>(p: Promise<T>): Promise<T> => {
  try {
    return await p;
  } catch (err) {
    throw classified(err);
  }
};

function wrap(client: Client): Queryable {
  return {
    async query<T>(q: Sql) {
      const { text, params } = q.compile();
      return (await classifying(client.query(text, params))).rows as T[];
    },
    async exec(text: string) {
      await classifying(client.query(text));
    },
  };
}

export async function openNeon(url: string, max: number, wsProxy?: string, log?: Logger): Promise<Db> {
  const [{ Pool, neonConfig, types: pgTypes }, { default: WebSocket }] = await Promise.all([import('@neondatabase/serverless'), import('ws')]);
  neonConfig.webSocketConstructor = WebSocket as never;
  if (wsProxy) {
    const secure = !wsProxy.startsWith('ws://');
    neonConfig.useSecureWebSocket = secure;
    neonConfig.wsProxy = wsProxy.replace(/^wss?:\/\//, '');
    neonConfig.pipelineConnect = false;
    if (!secure) neonConfig.pipelineTLS = false;
  }
  pgTypes.setTypeParser(20, (v: string) => Number(v)); // int8 as number, as on the other drivers
  const pool = new Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000 });
  pool.on('error', () => {}); // an idle client's socket dropped: the pool replaces it on next use
  await pool.query('select 1');
  const circuit = new Circuit({
    probe: () => pool.query('select 1'),
    onChange: (open, openMs) =>
      open
        ? log?.warn('the database cannot be reached: queries fail at once (503) until it answers again')
        : log?.info('the database answers again', { unreachableMs: openMs }),
  });
  let closed = false;
  const listeners = new Set<() => Promise<void>>();
  const poolQueries = wrap(pool as unknown as Client);
  return {
    driver: 'neon',
    query: (q) => circuit.run(() => poolQueries.query(q)),
    exec: (text) => circuit.run(() => poolQueries.exec(text)),
    transaction: (fn) =>
      circuit.run(async () => {
        const client = await classifying(pool.connect());
        let broken: unknown = null;
        const onError = (err: unknown) => (broken = err); // a drop mid-transaction: the next query fails with it
        client.on('error', onError);
        try {
          await classifying(client.query('begin'));
          const out = await withCommitHooks(wrap(client as unknown as Client), fn);
          await classifying(client.query('commit'));
          return out;
        } catch (err) {
          await client.query('rollback').catch(() => {});
          throw classified(err);
        } finally {
          client.off('error', onError);
          client.release(broken ? (broken as Error) : undefined); // a broken client is discarded, not pooled
        }
      }),
    async listen(channel, onPayload, onListen) {
      // A dedicated connection; when it drops, a new one listens again (every PROBE_EVERY_MS until the
      // database answers) and onListen says so, since notifications sent meanwhile are lost.
      let stopped = false;
      let current: PoolClient | null = null;
      const subscribe = async () => {
        const client: PoolClient = await pool.connect();
        client.on('notification', (msg) => {
          if (msg.channel === channel) onPayload(msg.payload ?? '');
        });
        client.on('error', () => lost(client));
        try {
          await client.query(`listen ${quoteIdent(channel)}`);
        } catch (err) {
          client.release(err as Error);
          throw err;
        }
        current = client;
      };
      const lost = (client: PoolClient) => {
        if (current !== client) return; // already replaced
        current = null;
        client.release(new Error('the LISTEN connection dropped'));
        void again();
      };
      const again = async () => {
        while (!stopped && !closed) {
          await new Promise((r) => setTimeout(r, PROBE_EVERY_MS).unref());
          if (stopped || closed) return;
          try {
            await subscribe();
            log?.info('listening again after the database connection dropped', { channel });
            onListen?.();
            return;
          } catch {
            // not back yet
          }
        }
      };
      await subscribe();
      const stop = async () => {
        stopped = true;
        listeners.delete(stop);
        const client: PoolClient | null = current;
        current = null;
        if (!client) return;
        await client.query(`unlisten ${quoteIdent(channel)}`).catch(() => {});
        client.release();
      };
      listeners.add(stop);
      return stop;
    },
    async notify(channel, payload) {
      await circuit.run(() => classifying(pool.query('select pg_notify($1, $2)', [channel, payload])));
    },
    async close() {
      closed = true;
      circuit.stop();
      await Promise.all([...listeners].map((stop) => stop()));
      await pool.end();
    },
  };
}
