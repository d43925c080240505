// Scheduler over SQL leases, in-process with an injected clock (runs on PGlite and PostgreSQL).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_ATTEMPTS, Scheduler } from '../../functions/jobs/scheduler.ts';
import type { JobDefinition, Timers } from '../../functions/jobs/scheduler.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { migratedTestDb } from '../helpers/db.ts';

const quiet = createLogger('error');

/** A manual clock: timers fire only when advance() passes their due time. */
function fakeTimers(start: number): Timers & { advance(ms: number): Promise<void> } {
  let now = start;
  let seq = 0;
  const pending = new Map<number, { due: number; fn: () => void }>();
  return {
    now: () => now,
    setTimeout: (fn, ms) => (pending.set(++seq, { due: now + ms, fn }), seq),
    clearTimeout: (h) => void pending.delete(h as number),
    async advance(ms) {
      const until = now + ms;
      for (;;) {
        const next = [...pending.entries()].filter(([, t]) => t.due <= until).sort((a, b) => a[1].due - b[1].due)[0];
        if (!next) break;
        pending.delete(next[0]);
        now = next[1].due;
        next[1].fn();
        await new Promise((r) => setTimeout(r, 30)); // let the fired work reach the database
      }
      now = until;
    },
  };
}

let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
});
test.after(async () => cleanup?.());
test.before.each(async () => {
  await db.query(sql`delete from job_runs`);
});

function countingJob(name: string, body?: (signal: AbortSignal) => Promise<void>) {
  const runs: Date[] = [];
  const def: JobDefinition = {
    name,
    description: 'test job',
    cron: '30 4 * * *',
    run: async ({ scheduledFor, signal }) => {
      runs.push(scheduledFor);
      await body?.(signal);
      return { ran: runs.length };
    },
  };
  return { def, runs };
}

const row = async (job: string) =>
  (await db.query<{ status: string; attempt: number; result: unknown; error: string | null; lease_owner: string | null; expired: boolean }>(sql`
    select status, attempt, result, error, lease_owner, lease_expires_at < now() as expired from job_runs where job = ${job}`))[0];

test('a cron tick fires at its exact time and records the result', async () => {
  const timers = fakeTimers(Date.parse('2026-03-01T04:29:59.000Z'));
  const s = new Scheduler(db, quiet, 60, timers);
  const { def, runs } = countingJob('tick');
  s.register(def);
  s.start();
  assert.is(s.nextRun('tick')!.toISOString(), '2026-03-01T04:30:00.000Z');
  await timers.advance(500);
  assert.is(runs.length, 0, 'not early');
  await timers.advance(600);
  await s.settled();
  assert.equal(runs.map((d) => d.toISOString()), ['2026-03-01T04:30:00.000Z']);
  const r = await row('tick');
  assert.is(r.status, 'ok');
  assert.equal(r.result, { ran: 1 });
  assert.is(s.nextRun('tick')!.toISOString(), '2026-03-02T04:30:00.000Z');
  await s.stop(0);
});

test('the same tick on two schedulers runs once', async () => {
  const a = new Scheduler(db, quiet, 60);
  const b = new Scheduler(db, quiet, 60);
  const ja = countingJob('once');
  const jb = countingJob('once');
  a.register(ja.def);
  b.register(jb.def);
  const at = new Date('2026-03-01T04:30:00.000Z');
  const wins = await Promise.all([a.fire('once', at), b.fire('once', at), a.fire('once', at), b.fire('once', at)]);
  await Promise.all([a.settled(), b.settled()]);
  assert.is(wins.filter(Boolean).length, 1);
  assert.is(ja.runs.length + jb.runs.length, 1);
});

test('stop() while a tick is being claimed: the tick does not run here, its row is released for another replica', async () => {
  // The claim's INSERT is held until stop() has begun (the race of a replica stopping mid-claim).
  let openGate: () => void = () => {};
  const gate = new Promise<void>((r) => (openGate = r));
  const slow: Db = Object.create(db);
  slow.query = (async (q: Parameters<Db['query']>[0]) => {
    const rows = await db.query(q);
    if (/insert into job_runs/.test(JSON.stringify(q))) await gate;
    return rows;
  }) as Db['query'];
  const s = new Scheduler(slow, quiet, 60);
  const j = countingJob('mid-claim');
  s.register(j.def);
  s.start();
  const at = new Date('2026-03-01T04:30:00.000Z');
  const fired = s.fire('mid-claim', at);
  let stopped = false;
  const stopping = s.stop(1000).then(() => (stopped = true));
  await new Promise((r) => setTimeout(r, 50));
  assert.is(stopped, false, 'stop() waits for the claim under way');
  openGate();
  assert.is(await fired, false);
  await stopping;
  assert.is(j.runs.length, 0, 'not run by a stopping scheduler');
  const [row] = await db.query<{ status: string; lease_owner: string | null; expired: boolean }>(sql`select status, lease_owner, lease_expires_at < now() as expired from job_runs where job = 'mid-claim'`);
  assert.equal([row.status, row.lease_owner, row.expired], ['running', null, true]);
  // Another replica's sweep takes it over and runs it once.
  const other = new Scheduler(db, quiet, 60);
  const jo = countingJob('mid-claim');
  other.register(jo.def);
  assert.is(await other.sweep(), 1);
  await other.settled();
  assert.is(jo.runs.length, 1);
});

test('a failing job is recorded as failed with its message', async () => {
  const s = new Scheduler(db, quiet, 60);
  s.register({ name: 'fails', description: '', cron: '* * * * *', run: async () => Promise.reject(new Error('disk on fire')) });
  await s.fire('fails', new Date());
  await s.settled();
  const r = await row('fails');
  assert.is(r.status, 'failed');
  assert.is(r.error, 'disk on fire');
});

test('a running row whose lease expired (holder died) is taken over and finished', async () => {
  const s = new Scheduler(db, quiet, 60);
  const { def, runs } = countingJob('orphan');
  s.register(def);
  const at = new Date('2026-03-01T04:30:00.000Z');
  await db.query(sql`insert into job_runs (job, scheduled_for, status, lease_owner, lease_expires_at)
                     values ('orphan', ${at}, 'running', 'dead-replica', now() - interval '1 second')`);
  assert.is(await s.sweep(), 1);
  await s.settled();
  assert.is(runs.length, 1);
  const r = await row('orphan');
  assert.is(r.status, 'ok');
  assert.is(r.attempt, 2);
  assert.is(await s.sweep(), 0, 'nothing left to take over');
});

test('a live lease is not taken over', async () => {
  const s = new Scheduler(db, quiet, 60);
  const { def, runs } = countingJob('alive');
  s.register(def);
  await db.query(sql`insert into job_runs (job, scheduled_for, status, lease_owner, lease_expires_at)
                     values ('alive', now(), 'running', 'other-replica', now() + interval '30 seconds')`);
  assert.is(await s.sweep(), 0);
  assert.is(runs.length, 0);
});

test(`after ${MAX_ATTEMPTS} expired leases the run is marked failed, not retried again`, async () => {
  const s = new Scheduler(db, quiet, 60);
  const { def, runs } = countingJob('cursed');
  s.register(def);
  await db.query(sql`insert into job_runs (job, scheduled_for, status, attempt, lease_owner, lease_expires_at)
                     values ('cursed', now(), 'running', ${MAX_ATTEMPTS}, 'dead', now() - interval '1 second')`);
  await s.sweep();
  await s.settled();
  assert.is(runs.length, 0);
  const r = await row('cursed');
  assert.is(r.status, 'failed');
  assert.match(r.error!, /lease expired 3 times/);
});

test('a run that loses its lease is aborted and does not overwrite the new holder', async () => {
  const timers = fakeTimers(Date.now());
  const s = new Scheduler(db, quiet, 30, timers);
  let aborted = false;
  const { def } = countingJob('stolen', (signal) => new Promise((r) => signal.addEventListener('abort', () => ((aborted = true), r()))));
  s.register(def);
  await s.fire('stolen', new Date(timers.now()));
  await db.query(sql`update job_runs set lease_owner = 'thief' where job = 'stolen'`);
  await timers.advance(10_001); // the heartbeat notices
  await s.settled();
  assert.ok(aborted, 'job saw the abort');
  const r = await row('stolen');
  assert.is(r.status, 'running');
  assert.is(r.lease_owner, 'thief');
});

test('stop() releases the lease of an unfinished job so another replica takes it over at once', async () => {
  const a = new Scheduler(db, quiet, 60);
  const slow = countingJob('slow', (signal) => new Promise((r) => signal.addEventListener('abort', () => r())));
  a.register(slow.def);
  await a.fire('slow', new Date());
  await a.stop(50);
  const released = await row('slow');
  assert.is(released.status, 'running');
  assert.is(released.lease_owner, null);
  assert.ok(released.expired);
  const b = new Scheduler(db, quiet, 60);
  const quick = countingJob('slow');
  b.register(quick.def);
  assert.is(await b.sweep(), 1);
  await b.settled();
  assert.is((await row('slow')).status, 'ok');
});

test.run();
