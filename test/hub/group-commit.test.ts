// Runner event frames of many runners at once, stored with group commit (functions/events/ingest-group.ts),
// across a kill -9 of the server: every event acked before the kill is stored, and once the runners have
// re-sent what was not acked (and one acked frame again), every event is stored exactly once, under its
// runner. The real server and database; protocol clients stand in for the runners.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { freePort } from '../helpers/ports.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';

const RUNNERS = 12;
const FRAMES = 10;
const PER_FRAME = 20;

let dbEnv: Awaited<ReturnType<typeof serverDbEnv>>;
let server: RunningServer;
let port: number;
test.before(async () => {
  dbEnv = await serverDbEnv();
  port = await freePort();
  server = await startServer({ admin: true, dbEnv: dbEnv.env, env: { PORT: String(port) } });
});
test.after(async () => {
  await server?.cleanup();
  await dbEnv?.cleanup();
});

const frameOf = (r: number, f: number) =>
  Array.from({ length: PER_FRAME }, (_, k) => ({ id: `g${r}-${f}-${k}`, source: 'test', kind: 'runner.test', ts: new Date().toISOString(), payload: { r, f, k } }));

test('frames of 12 runners at once, a kill -9 mid-way: what was acked is stored, and after the re-sends every event once', async () => {
  const paired: Awaited<ReturnType<typeof pairRunner>>[] = [];
  for (let r = 0; r < RUNNERS; r++) paired.push(await pairRunner(server.api, server.url, `g-${r}`));
  const acked = paired.map(() => 0); // frames acked, per runner
  let total = 0;
  let killed = false;
  /** Sends runner r's frames from `from`, one at a time, each after the ack of the one before, until the socket goes. */
  const run = async (r: number, from: number) => {
    const c = connect(server.url, paired[r].token);
    // A runner still connecting when the kill comes never gets its welcome: like an unacked frame, it
    // sends again after the restart (where a missing welcome leaves its frames unacked: asserted below).
    if (!(await c.next('welcome').catch(() => null))) return;
    for (let f = from; f < FRAMES; f++) {
      c.send({ type: 'events', events: frameOf(r, f) });
      const ack = await c.next('ack', 60_000).catch(() => null);
      if (!ack) return; // the server went away: this frame is not acked
      assert.is(ack.ids.length, PER_FRAME);
      acked[r] = Math.max(acked[r], f + 1);
      // The kill comes once about a third of all frames are acked, while the others are in flight.
      if (++total === Math.floor((RUNNERS * FRAMES) / 3) && !killed) {
        killed = true;
        server.proc.kill('SIGKILL');
      }
    }
    c.ws.close();
  };
  await Promise.all(paired.map((_, r) => run(r, 0)));
  assert.ok(killed, 'the server was killed mid-way');
  await server.exited;
  const before = [...acked];
  server = await startServer({ dbEnv: dbEnv.env, env: { PORT: String(port) } });
  // Each runner sends again from its last acked frame (that one a second time) to the end.
  await Promise.all(paired.map((_, r) => run(r, Math.max(0, before[r] - 1))));
  assert.equal(acked, paired.map(() => FRAMES), 'every frame acked in the end');

  const stopped = !dbEnv.env.DATABASE_URL;
  if (stopped) await server.stop('SIGTERM'); // PGlite is one process's
  const db = stopped ? await openPglite(dbEnv.env.PGLITE_DATA_DIR!) : await openPostgres(dbEnv.env.DATABASE_URL!, 1);
  try {
    const rows = await db.query<{ runner_id: string; event_id: string }>(sql`select runner_id, event_id from runner_events where event_id like 'g%'`);
    assert.is(rows.length, RUNNERS * FRAMES * PER_FRAME, 'every event stored once');
    const byId = new Map(rows.map((row) => [row.event_id, row.runner_id]));
    for (let r = 0; r < RUNNERS; r++)
      for (let f = 0; f < FRAMES; f++) for (const e of frameOf(r, f)) assert.is(byId.get(e.id), paired[r].runnerId, `${e.id} under its runner`);
  } finally {
    await db.close();
  }
});

test.run();
