// The live hub's bound on a socket's send buffer, with a real WebSocket over loopback: a client that
// stops reading while notices keep coming is closed with 4408 (after the kernel's buffers fill, the
// server-side queue passes the bound), and a client that reads keeps getting every notice. The hub runs
// in this process on a migrated database (PGlite or PostgreSQL), with a small bound so the test is quick.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createApiToken } from '../../functions/auth/auth.ts';
import { LiveHub } from '../../functions/live/live.ts';
import { publish } from '../../functions/live/publish.ts';
import { loadConfig } from '../../functions/lib/config.ts';
import type { AppContext } from '../../functions/lib/context.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { migratedTestDb } from '../helpers/db.ts';
import { openLive } from '../helpers/live.ts';

let db: Db;
let cleanup: () => Promise<void>;
let hub: LiveHub;
let url = '';
let token = '';
let close: () => Promise<void>;
const warnings: string[] = [];

test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  await db.query(sql`insert into users (id, email, name, instance_admin) values ('u-admin', 'a@example.test', 'A', true)`);
  token = (await createApiToken(db, 'u-admin', 'live')).token;
  const log = createLogger('warn', {}, (line) => warnings.push(line));
  const ctx = { config: loadConfig({}), db, log, keys: { session: randomBytes(32), encryption: null } } as unknown as AppContext;
  hub = new LiveHub(ctx, { maxBufferBytes: 64 * 1024 });
  await hub.start();
  const server = createServer((_req, res) => res.end());
  server.on('upgrade', (req, socket, head) => hub.handleUpgrade(req, socket, head));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = async () => {
    await hub.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
});
test.after(async () => {
  await close?.();
  await cleanup?.();
});

test('a client that stops reading is closed with 4408; one that reads gets every notice', async () => {
  const slow = openLive(url, { token, origin: null });
  const fast = openLive(url, { token, origin: null });
  await Promise.all([slow.next((n) => n.type === 'ready'), fast.next((n) => n.type === 'ready')]);
  // Stop reading: the socket's kernel buffers fill, then the server's queue grows.
  (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  const filler = 'x'.repeat(4000);
  let sent = 0;
  // At most 64 MiB of notices: far more than loopback's kernel buffers hold.
  while (hub.stats.droppedSlow === 0 && sent < 16_000) {
    await db.transaction(async (tx) => {
      for (let i = 0; i < 50; i++) await publish(tx, { type: 'fleet', projectId: 'p', kind: `k${sent++}.${filler}` }, { admins: true });
    });
    // Let the hub's queue catch up now and then, so the bound is met while the fast client keeps pace.
    if (sent % 1000 === 0) await fast.next((n) => n.type === 'fleet' && n.kind.startsWith(`k${sent - 1}.`), 60_000);
  }
  assert.is(hub.stats.droppedSlow, 1, `the slow client was dropped after ${sent} notices`);
  (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
  const { code } = await slow.closed;
  assert.is(code, 4408);
  await fast.next((n) => n.type === 'fleet' && n.kind.startsWith(`k${sent - 1}.`), 60_000);
  assert.is(fast.notices.filter((n) => n.type === 'fleet').length, sent, 'the reading client got every notice');
  assert.ok(warnings.some((w) => /live socket too slow/.test(w)), 'the drop is logged');
  assert.is(hub.connections, 1);
  fast.close();
});

test.run();
