// The Neon serverless driver, for real, against the local PostgreSQL through a loopback WebSocket
// proxy that speaks what Neon's wsproxy speaks (the Postgres wire protocol in binary WS messages).
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { isDatabaseUnavailable } from '../../functions/lib/db/unavailable.ts';
import { loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { openNeon } from '../../functions/lib/db/neon.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { ROOT, TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

/** A loopback stand-in for Neon's wsproxy; `down()` drops every connection and refuses new ones until `up()`. */
async function wsProxy() {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
  let isDown = false;
  const open = new Set<WebSocket>();
  wss.on('connection', (ws, req) => {
    if (isDown) return ws.terminate();
    open.add(ws);
    const address = new URL(req.url!, 'http://x').searchParams.get('address')!;
    const [host, port] = address.split(':');
    const tcp = net.connect(Number(port), host);
    tcp.on('data', (d) => ws.send(d));
    ws.on('message', (d) => tcp.write(d as Buffer));
    tcp.on('close', () => ws.close());
    ws.on('close', () => (tcp.destroy(), open.delete(ws)));
    tcp.on('error', () => ws.close());
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1`,
    close: () => wss.close(),
    down: () => {
      isDown = true;
      for (const ws of open) ws.terminate();
    },
    up: () => (isDown = false),
  };
}

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !(await check()); await new Promise((r) => setTimeout(r, 20))) if (Date.now() > end) throw new Error('timed out');
}

onlyOn('postgres', test, 3, () => {
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

  test('neon driver: the database goes away — queries fail at once as unavailable, LISTEN is made again and says so, notifications arrive again, nothing crashes', async () => {
    const pg = await freshPostgres();
    const proxy = await wsProxy();
    const db = await openNeon(pg.url + '?sslmode=disable', 3, proxy.url);
    try {
      const got: string[] = [];
      let relistened = 0;
      const stop = await db.listen('neon_gone', (p) => got.push(p), () => relistened++);
      proxy.down();
      const first = await db.query(sql`select 1`).then(() => null, (e: unknown) => e);
      assert.ok(isDatabaseUnavailable(first), `a lost connection is "unavailable": ${String(first)}`);
      const t = Date.now();
      const second = await db.query(sql`select 1`).then(() => null, (e: unknown) => e);
      assert.ok(isDatabaseUnavailable(second), 'the circuit refuses while it is open');
      assert.ok(Date.now() - t < 100, 'and at once');
      const inTx = await db.transaction((tx) => tx.query(sql`select 1`)).then(() => null, (e: unknown) => e);
      assert.ok(isDatabaseUnavailable(inTx), 'a transaction too');
      proxy.up();
      await until(() => db.query(sql`select 1`).then(() => true, () => false));
      await until(() => relistened > 0);
      assert.is(relistened, 1);
      await db.notify('neon_gone', 'after');
      await until(() => got.includes('after'));
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
