// The Neon serverless driver, for real, against the local PostgreSQL through a loopback WebSocket
// proxy that speaks what Neon's wsproxy speaks (the Postgres wire protocol in binary WS messages).
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WebSocketServer } from 'ws';
import { loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { openNeon } from '../../functions/lib/db/neon.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { ROOT, TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

async function wsProxy() {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws, req) => {
    const address = new URL(req.url!, 'http://x').searchParams.get('address')!;
    const [host, port] = address.split(':');
    const tcp = net.connect(Number(port), host);
    tcp.on('data', (d) => ws.send(d));
    ws.on('message', (d) => tcp.write(d as Buffer));
    tcp.on('close', () => ws.close());
    ws.on('close', () => tcp.destroy());
    tcp.on('error', () => ws.close());
  });
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1`, close: () => wss.close() };
}

onlyOn('postgres', test, 2, () => {
  test('neon driver: migrations, queries, transactions and listen/notify through the WebSocket proxy', async () => {
    const pg = await freshPostgres();
    const proxy = await wsProxy();
    const db = await openNeon(pg.url + '?sslmode=disable', 3, proxy.url);
    try {
      assert.is(db.driver, 'neon');
      await migrate(db, loadMigrations(`${ROOT}/sql`), createLogger('error'));
      const [row] = await db.query<{ n: number; j: unknown }>(sql`select ${41}::int8 + 1 as n, ${sql.json({ a: 1 })} as j`);
      assert.is(row.n, 42);
      assert.equal(row.j, { a: 1 });
      await db
        .transaction(async (tx) => {
          await tx.query(sql`insert into settings (key, value) values ('rolled.back', '1')`);
          throw new Error('undo');
        })
        .catch(() => {});
      assert.is((await db.query(sql`select 1 from settings where key = 'rolled.back'`)).length, 0);
      const got: string[] = [];
      const stop = await db.listen('neon_chan', (p) => got.push(p));
      await db.notify('neon_chan', 'ping');
      for (let i = 0; i < 50 && !got.length; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(got, ['ping']);
      await stop();
    } finally {
      await db.close();
      proxy.close();
      await pg.drop();
    }
  });

  test('the server starts and serves on DATABASE_DRIVER=neon', async () => {
    const pg = await freshPostgres();
    const proxy = await wsProxy();
    const s = await startServer({ dbEnv: { DATABASE_URL: pg.url + '?sslmode=disable', DATABASE_DRIVER: 'neon', NEON_WS_PROXY: proxy.url } });
    try {
      assert.match(s.output(), /database connected driver=neon/);
      const openapi = await (await fetch(`${s.url}/api/openapi.json`)).json();
      assert.is(openapi.openapi, '3.1.0');
      assert.is(await s.stop(), 0);
    } finally {
      await s.cleanup();
      proxy.close();
      await pg.drop();
    }
  });
});

test.run();
