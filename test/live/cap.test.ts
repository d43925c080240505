// GET /api/live holds at most LIVE_MAX_SOCKETS_PER_USER (default 20) sockets per user on one process
// (#33): the 21st of one user is told why and closed with 4429, the sockets it already holds stay open,
// another user is unaffected, and a socket that closes frees its place.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LIVE_CLOSE } from '../../protocol/live.ts';
import { openLive } from '../helpers/live.ts';
import type { LiveClient } from '../helpers/live.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { makeUser } from '../helpers/users.ts';
import { waitUntil } from '../runner/_harness.ts';

let server: RunningServer;
const open: LiveClient[] = [];
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => {
  for (const c of open) c.close();
  await server?.cleanup();
});

/** A live socket as the holder of `token`, and whether it became ready or was closed first (with what). */
async function attempt(token: string): Promise<{ client: LiveClient; ready: boolean; code?: number }> {
  const client = openLive(server.url, { token });
  open.push(client);
  // Not client.next(): its timer would outlive a refused socket and hold the process open.
  const ready = new Promise<{ ready: boolean }>((resolve) => client.ws.on('message', () => client.notices.some((n) => n.type === 'ready') && resolve({ ready: true })));
  const outcome = await Promise.race([ready, client.closed.then(({ code }) => ({ ready: false, code }))]);
  return { client, ...outcome };
}

test('the 21st socket of one user is closed with 4429 (too_many_sockets); another user is unaffected; a closed socket frees its place', async () => {
  const mine: LiveClient[] = [];
  for (let i = 0; i < 20; i++) {
    const a = await attempt(server.admin.token);
    assert.ok(a.ready, `socket ${i + 1} of 20 is accepted`);
    mine.push(a.client);
  }
  const over = await attempt(server.admin.token);
  assert.is(over.ready, false);
  assert.is(over.code, 4429);
  assert.is(LIVE_CLOSE.tooMany, 4429);
  assert.is(over.client.notices[0]?.type, 'error');
  assert.is(over.client.notices[0]?.code, 'too_many_sockets');
  assert.ok(mine.every((c) => c.ws.readyState === c.ws.OPEN), 'the 20 sockets already held stay open');

  const other = await makeUser(server, 'cap-other');
  const theirs = await attempt(other.token);
  assert.ok(theirs.ready, "another user's socket is accepted");

  mine[0].close();
  await mine[0].closed;
  // The server forgets the socket when its side of the close completes: try until the place is free.
  let again: Awaited<ReturnType<typeof attempt>> | undefined;
  await waitUntil(async () => {
    again = await attempt(server.admin.token);
    return again.ready;
  }, 15_000, 'a 20th socket accepted after one closed');
  assert.ok(again!.ready);
  const still = await attempt(server.admin.token);
  assert.is(still.code, 4429, 'and the cap holds again at 20');
});

test.run();
