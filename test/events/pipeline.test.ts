// The ingest pipeline's rule (functions/events/ingest.ts, docs/architecture.md "A runner event"), with
// sinks of the test's own on PGlite and PostgreSQL: what a 'transaction' sink writes commits with the
// rows or not at all; 'after-commit' sinks run only once the rows are committed; each sink gets only its
// kinds, in the order received; a re-sent batch is stored once and every sink sees it again.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ingestEvents } from '../../functions/events/ingest.ts';
import type { Batch, Sink } from '../../functions/events/sink.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { migratedTestDb } from '../helpers/db.ts';

let db: Db;
let cleanup: () => Promise<void>;
const runner = `r-${Date.now()}`;
let n = 0;
const event = (kind: string) => ({ id: `e-${String(++n).padStart(4, '0')}`, source: 'test', kind, ts: new Date().toISOString(), payload: { n } });
const stored = async () => (await db.query<{ event_id: string }>(sql`select event_id from runner_events where runner_id = ${runner} order by event_id`)).map((r) => r.event_id);
const marks = async () => (await db.query<{ name: string }>(sql`select name from test_marks order by name`)).map((r) => r.name);

test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  await db.query(sql`insert into runners (id, name, paired_at, last_seen_at) values (${runner}, 'box', now(), now())`);
  await db.exec('create table test_marks (name text primary key)');
});
test.after(async () => cleanup?.());
test.before.each(async () => {
  await db.query(sql`delete from runner_events`);
  await db.query(sql`delete from test_marks`);
});

/** A transaction sink that marks each event it sees (idempotently), and fails when told to. */
const marking = (fail = false): Sink => ({
  name: 'marks',
  kinds: ['slot.*'],
  phase: 'transaction',
  async handle(tx, { events }) {
    for (const e of events) await tx.query(sql`insert into test_marks (name) values (${e.id}) on conflict do nothing`);
    if (fail) throw new Error('sink failed');
  },
});

test('a failing transaction sink: no row stored, nothing it wrote kept, no after-commit sink called', async () => {
  const seen: Batch[] = [];
  const after: Sink = { name: 'after', kinds: ['slot.*', 'llm.request'], phase: 'after-commit', handle: async (_db, b) => void seen.push(b) };
  const events = [event('slot.started'), event('llm.request')];
  let failed = false;
  await ingestEvents(db, runner, events, JSON.stringify({ type: 'events', events }), [marking(true), after]).catch(() => (failed = true));
  assert.ok(failed, 'the batch fails (the runner gets no ack and sends it again)');
  assert.equal(await stored(), []);
  assert.equal(await marks(), []);
  assert.is(seen.length, 0);
});

test('each sink gets only its kinds, in order; after-commit sinks see the committed rows; a re-sent batch is stored once and seen again', async () => {
  const seen: { ids: string[]; rowsThen: string[] }[] = [];
  const after: Sink = {
    name: 'after',
    kinds: ['llm.request', 'pane.quota_hit'],
    phase: 'after-commit',
    handle: async (_db, b) => void seen.push({ ids: b.events.map((e) => e.id), rowsThen: await stored() }),
  };
  const events = [event('llm.request'), event('slot.started'), event('session.meta'), event('pane.quota_hit'), event('slot.stopped')];
  const ids = events.map((e) => e.id);
  for (let i = 0; i < 2; i++) await ingestEvents(db, runner, events, JSON.stringify({ type: 'events', events }), [marking(), after]);
  assert.equal(await stored(), [...ids].sort(), 'every event stored once');
  assert.equal(await marks(), [ids[1], ids[4]].sort(), 'the transaction sink saw its kinds (slot.*)');
  assert.equal(seen.map((s) => s.ids), [[ids[0], ids[3]], [ids[0], ids[3]]], 'the after-commit sink saw its kinds, in order, at each send');
  assert.equal(seen[0].rowsThen, [...ids].sort(), 'after commit: the rows are there');
});

test('a batch no transaction sink wants is stored by its insert alone, and after-commit sinks still run', async () => {
  let called = 0;
  const after: Sink = { name: 'after', kinds: ['llm.request'], phase: 'after-commit', handle: async () => void called++ };
  const events = [event('llm.request')];
  await ingestEvents(db, runner, events, undefined, [marking(true), after]);
  assert.equal(await stored(), [events[0].id]);
  assert.is(called, 1);
});

/** `db`, counting the statements that insert into runner_events. */
function counting(): { db: Db; inserts: () => number } {
  let n = 0;
  const proxy = new Proxy(db, {
    get(target, key) {
      if (key === 'query') return (q: { strings: readonly string[] }) => ((n += q.strings.join('?').includes('insert into runner_events') ? 1 : 0), target.query(q as never));
      const v = Reflect.get(target, key);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { db: proxy, inserts: () => n };
}

test('frames of many runners at once are stored together (group commit): every row once, under its runner, each frame settled after its rows', async () => {
  const others = ['ra', 'rb', 'rc'].map((r) => `${runner}-${r}`);
  for (const id of others) await db.query(sql`insert into runners (id, name, paired_at, last_seen_at) values (${id}, ${id}, now(), now()) on conflict do nothing`);
  const c = counting();
  const frames = Array.from({ length: 30 }, (_, i) => ({ runnerId: others[i % 3], events: [event('bench.event'), event('bench.event')] }));
  frames.push(frames[4]); // a re-send of a frame still waiting: stored once
  let settledEarly = false;
  await Promise.all(
    frames.map(async (f) => {
      await ingestEvents(c.db, f.runnerId, f.events, JSON.stringify({ type: 'events', events: f.events }), []);
      const [row] = await db.query<{ n: number }>(sql`select count(*)::int as n from runner_events where runner_id = ${f.runnerId} and event_id in (${f.events[0].id}, ${f.events[1].id})`);
      if (row.n !== 2) settledEarly = true;
    }),
  );
  assert.not.ok(settledEarly, 'a frame settled only once its rows were stored');
  const rows = await db.query<{ runner_id: string; event_id: string }>(sql`select runner_id, event_id from runner_events where runner_id like ${runner + '-%'} order by event_id`);
  assert.is(rows.length, 60, 'every event of the 30 frames, once');
  for (const f of frames) for (const e of f.events) assert.ok(rows.some((r) => r.event_id === e.id && r.runner_id === f.runnerId), `${e.id} under ${f.runnerId}`);
  assert.ok(c.inserts() < 10, `fewer statements than frames (${c.inserts()} for ${frames.length})`);
});

test('a frame the database refuses, waiting with others, fails alone: the others are stored', async () => {
  const c = counting();
  const good = Array.from({ length: 8 }, () => [event('bench.event')]);
  // JSON accepts \u0000 in a string, PostgreSQL's jsonb does not (socket.ts refuses such frames before; here it gets through).
  const bad = [{ ...event('bench.event'), payload: { text: 'a\u0000b' } }];
  const results = await Promise.allSettled([...good, bad, ...good.map(() => [event('bench.event')])].map((events) => ingestEvents(c.db, runner, events, JSON.stringify({ type: 'events', events }), [])));
  const failed = results.map((r, i) => (r.status === 'rejected' ? i : -1)).filter((i) => i >= 0);
  assert.equal(failed, [8], 'only the refused frame failed');
  assert.is((await stored()).length, 16, 'the 16 others are stored');
});

test.run();
