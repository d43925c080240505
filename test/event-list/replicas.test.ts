// The event list with two real server processes on one PostgreSQL (issue #39: "5,000 events written by
// two replicas concurrently, read by a cursor loop running the whole time: each exactly once, in order").
// Four runners, two on each process, send catalogue events in batches at the same time; a reader follows
// the cursor through GET /api/events the whole time, alternating between the processes (a cursor is valid
// on any replica). Each event is read exactly once, in the order stored (seq, functions/event-list/store.ts),
// and each runner's events in the order it sent them: a transaction that committed late was never skipped.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import { makeProject } from '../triggers/_harness.ts';

const RUNNERS = 4;
const BATCHES = 50;
const PER_BATCH = 25; // 4 × 50 × 25 = 5,000 events

onlyOn('postgres', test, 1, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let a: RunningServer;
  let b: RunningServer;
  let db: postgres.Sql;
  test.before(async () => {
    pg = await freshPostgres();
    a = await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ dbEnv: { DATABASE_URL: pg.url } });
    db = postgres(pg.url, { max: 1, onnotice: () => {} });
  });
  test.after(async () => {
    await db?.end();
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    await pg?.drop();
  });

  test(`${RUNNERS * BATCHES * PER_BATCH} events from two processes at once, read by a cursor loop meanwhile: each exactly once, in order`, async () => {
    const token = a.admin.token;
    const writers = await Promise.all(
      Array.from({ length: RUNNERS }, async (_, i) => {
        const via = i % 2 === 0 ? a : b;
        const r = await pairRunner(a.api, a.url, `writer-${i}`);
        const project = await makeProject(a, r.runnerId);
        const ws = connect(via.url, r.token);
        await ws.next('welcome');
        return { i, ws, project };
      }),
    );
    let writing = true;
    const write = Promise.all(
      writers.map(async ({ i, ws, project }) => {
        for (let n = 0; n < BATCHES; n++) {
          const events = Array.from({ length: PER_BATCH }, (_, k) => ({
            id: `w${i}-${n * PER_BATCH + k}`,
            source: `project:${project}`,
            kind: 'slot.checkpoint',
            ts: new Date().toISOString(),
            payload: { project, slot: `w${i}`, issue: n * PER_BATCH + k + 1, checkpoint: 'plan' },
          }));
          ws.send({ type: 'events', events });
          await ws.next('ack', 60_000);
        }
      }),
    ).finally(() => (writing = false));

    const read: { id: string; slot: string; issue: number }[] = [];
    let after: string | null = null;
    let calls = 0;
    let emptyAfterWriting = false;
    while (!emptyAfterWriting) {
      const wasWriting = writing;
      const via = calls++ % 2 === 0 ? a : b;
      const res = await callAs(via, `/api/events?limit=100${after ? `&after=${after}` : ''}`, { token });
      assert.is(res.status, 200, JSON.stringify(res.body));
      read.push(...res.body.events);
      if (res.body.next) after = res.body.next;
      else if (!wasWriting) emptyAfterWriting = true; // nothing more after every write was acknowledged
    }
    await write;
    for (const { ws } of writers) ws.ws.close();

    const total = RUNNERS * BATCHES * PER_BATCH;
    const ids = read.map((e) => e.id);
    assert.is(new Set(ids).size, ids.length, 'no event read twice');
    assert.is(ids.length, total, `every event read (${calls} calls)`);
    const stored = (await db`select id from catalogue_events order by seq`).map((r) => r.id as string);
    assert.equal(ids, stored, 'read in the order stored');
    for (let i = 0; i < RUNNERS; i++) {
      const issues = read.filter((e) => e.slot === `w${i}`).map((e) => e.issue);
      assert.equal(issues, Array.from({ length: BATCHES * PER_BATCH }, (_, k) => k + 1), `runner ${i}'s events in the order sent`);
    }
    assert.ok(calls > 10, `the reader ran while the writers wrote (${calls} calls)`);
  });
});

test.run();
