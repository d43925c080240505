// A quick reconnect to the same server process: the old socket's close clears the runner's row
// (connected_instance = null where it names this process) while the new socket's accept sets it again.
// Both writes name this process, so their order decides: a clear that lands after the new socket's update
// would leave the runner offline in the database while it is connected here, and the new socket's own
// close would then find nothing to clear and send no offline notice (functions/runners/socket.ts, rowUpdate).
// The database here holds the old socket's clear until the new socket has been taken in, and lets the
// new socket's update through at once when it comes: what two pooled connections may do.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import { sha256Hex } from '../../functions/lib/crypto.ts';
import { sql } from '../../functions/lib/db/index.ts';
import type { Db, Sql } from '../../functions/lib/db/index.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { RunnerSockets } from '../../functions/runners/socket.ts';
import { PROTOCOL_VERSION } from '../../protocol/version.ts';
import { migratedTestDb } from '../helpers/db.ts';
import { waitUntil } from '../runner/_harness.ts';

const CLEAR = /set connected_instance = null, last_seen_at = now\(\) where id/;
const TAKE = /update runners set connected_instance = .* version = /s;

test('the old socket\'s clear and the new socket\'s update land in the order they happened: the row names this process, and the last close clears it', async () => {
  const { db: real, cleanup } = await migratedTestDb();
  const token = 'svc_rt_reconnect_row_test_token_0123456789abc';
  await real.query(sql`insert into runners (id, name, paired_at, token_hash) values ('r-quick', 'quick', now(), ${sha256Hex(token)})`);

  let holding = false;
  let heldClear: (() => void) | null = null;
  let take: Promise<unknown> | null = null;
  const db = new Proxy(real, {
    get(target, key, receiver) {
      if (key !== 'query') return Reflect.get(target, key, receiver);
      return (q: Sql) => {
        const text = q.compile().text;
        if (holding && CLEAR.test(text)) return new Promise((resolve, reject) => (heldClear = () => target.query(q).then(resolve, reject)));
        if (holding && TAKE.test(text)) return (take = target.query(q));
        return target.query(q);
      };
    },
  }) as Db;

  const sockets = new RunnerSockets(db, createLogger('error'), 'instance-a', {
    connected: async () => {},
    hello: async () => {},
    result: async () => {},
    terminal: () => {},
    closed: () => {},
  });
  const server = http.createServer();
  server.on('upgrade', (req, socket, head) => sockets.handleUpgrade(req, socket, head));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/runner`;
  const clients: WebSocket[] = [];
  const dial = () => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}`, 'x-svc-protocol': String(PROTOCOL_VERSION) } });
    clients.push(ws);
    const welcome = new Promise<void>((resolve) => ws.on('message', (d) => JSON.parse(d.toString()).type === 'welcome' && resolve()));
    return { ws, welcome };
  };
  const row = async () => (await real.query<{ connected_instance: string | null }>(sql`select connected_instance from runners where id = 'r-quick'`))[0].connected_instance;

  try {
    const first = dial();
    await first.welcome;
    assert.is(await row(), 'instance-a');
    const old = sockets.get('r-quick');

    holding = true;
    first.ws.close();
    await waitUntil(() => heldClear !== null, 10_000, "the old socket's clear");
    const second = dial();
    await waitUntil(() => sockets.get('r-quick') !== undefined && sockets.get('r-quick') !== old, 10_000, 'the new socket taken in');
    // Its update, where it went to the database at once, has landed; then the held clear goes.
    if (take) await take;
    heldClear!();
    await second.welcome;
    holding = false;
    assert.is(await row(), 'instance-a', 'the runner is connected here: the row says so');

    second.ws.close();
    await waitUntil(async () => (await row()) === null, 10_000, 'the last close to clear the row');
  } finally {
    holding = false;
    (heldClear as (() => void) | null)?.();
    for (const ws of clients) ws.terminate();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await cleanup();
  }
});

test.run();
