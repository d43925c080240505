// Neon's serverless driver (PostgreSQL over a WebSocket). Selected with DATABASE_DRIVER=neon or a
// *.neon.tech DATABASE_URL. NEON_WS_PROXY points it at a self-hosted WebSocket proxy instead:
// `wss://proxy.example.com/v1` (or ws:// for a proxy on loopback); `?address=host:port` is appended.
// The packages are loaded when a database of this driver is opened (lib/db/index.ts), not at start-up.
import type { Db, Queryable, Sql } from './port.ts';
import { quoteIdent } from './port.ts';

type Client = { query: (text: string, params?: unknown[]) => Promise<{ rows: unknown[] }> };

function wrap(client: Client): Queryable {
  return {
    async query<T>(q: Sql) {
      const { text, params } = q.compile();
      return (await client.query(text, params)).rows as T[];
    },
    async exec(text: string) {
      await client.query(text);
    },
  };
}

export async function openNeon(url: string, max: number, wsProxy?: string): Promise<Db> {
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
  const pool = new Pool({ connectionString: url, max });
  pool.on('error', () => {}); // an idle client's socket dropped: the pool replaces it on next use
  await pool.query('select 1');
  return {
    driver: 'neon',
    ...wrap(pool as unknown as Client),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const out = await fn(wrap(client as unknown as Client));
        await client.query('commit');
        return out;
      } catch (err) {
        await client.query('rollback').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async listen(channel, onPayload) {
      const client = await pool.connect();
      client.on('notification', (msg) => {
        if (msg.channel === channel) onPayload(msg.payload ?? '');
      });
      await client.query(`listen ${quoteIdent(channel)}`);
      return async () => {
        await client.query(`unlisten ${quoteIdent(channel)}`).catch(() => {});
        client.release();
      };
    },
    async notify(channel, payload) {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    close: () => pool.end(),
  };
}
