// The pool dispatcher on the selected driver (PGlite by default; SVC_TEST_DB=postgres), driven pass by
// pass with a fake hub (functions/runs/pool.ts): queued → dispatched with runId on `done`; a refusal
// fails the run command_refused; an offline runner puts it back in the queue; a run queued past its
// deadline fails no_runner_available with one notification; a lost runner's run fails runner_lost and is
// retried once; the lost runner's late `succeeded` replaces runner_lost and cancels a queued retry
// (runs/ingest.ts); a lease that runs out while sending fails the run interrupted. The server-level behaviour is in pool.test.ts (PostgreSQL).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunnerEvent } from '../../protocol/frames.ts';
import { recordSkillRuns } from '../../functions/runs/ingest.ts';
import { hasLiveRun } from '../../functions/triggers/fire.ts';
import { PoolDispatcher, queuePoolRun } from '../../functions/runs/pool.ts';
import type { PoolRunSpec } from '../../functions/runs/pool.ts';
import { systemClock } from '../../functions/lib/clock.ts';
import { sql } from '../../functions/lib/db/index.ts';
import type { Db } from '../../functions/lib/db/index.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { migratedTestDb } from '../helpers/db.ts';

let db: Db;
let cleanup: () => Promise<void>;
const sent: { runnerId: string; name: string; args: any }[] = [];
let answer: (runnerId: string) => { status: string; data?: unknown; error?: unknown } = () => ({ status: 'done', data: {} });
const hub = {
  command: async (runnerId: string, name: string, args: any) => {
    sent.push({ runnerId, name, args });
    return answer(runnerId) as any;
  },
};
let pool: PoolDispatcher;
/** One dispatcher pass, and the commands it sent settled. */
const pass = async () => {
  await (pool as any).pass();
  await Promise.all((pool as any).inFlight);
};

const spec = (o: Partial<PoolRunSpec> = {}): PoolRunSpec => ({
  projectId: 'p', source: 'trigger', sourceId: 't', sourceName: 'on push', createdBy: 'u-admin', skill: 'review', args: ['a'],
  profile: null, model: null, output: 'report', targetTags: [], queueTimeoutMinutes: 30, retryOnLoss: false, ...o,
});
const run = async (id: string) => (await db.query<{ state: string; runner_id: string | null; reason: string | null; retry_of: string | null }>(sql`select state, runner_id, reason, retry_of from skill_runs where id = ${id}`))[0];
const online = (id: string, on = true) =>
  db.query(sql`update runners set connected_instance = ${on ? 'x' : null}, last_seen_at = ${on ? new Date() : new Date(Date.now() - 3_600_000)} where id = ${id}`);
const stateEvent = (runnerId: string, runId: string, state: string): RunnerEvent => {
  const now = new Date().toISOString();
  return { id: `${runnerId}.${runId}.${state}`, source: 'project:p', kind: 'skill_run.state', ts: now, payload: { runId, project: 'p', skill: 'review', args: [], output: 'report', createdAt: now, state, at: now } } as RunnerEvent;
};

test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  await db.query(sql`insert into users (id, email, name, instance_admin) values ('u-admin', 'a@example.test', 'A', true)`);
  for (const id of ['r1', 'r2']) {
    await db.query(sql`insert into runners (id, name, paired_at, capabilities, max_concurrent_runs, tags) values (${id}, ${id}, now(), ${sql.json(['skills.pool'])}, 1, ${sql.json(id === 'r2' ? ['gpu'] : [])})`);
  }
  await db.query(sql`insert into projects (id, name, repo, runner_id, root_path) values ('p', 'p', 'a/p', 'r1', '/srv/p')`);
  await db.query(sql`insert into project_runners (project_id, runner_id, root_path, root_state) values ('p', 'r2', '/pool/p', 'ok')`);
  pool = new PoolDispatcher({ db, log: createLogger('error'), hub, clock: systemClock, leaseMs: 60_000, lossGraceSeconds: 1 });
});
test.after(async () => {
  await cleanup?.();
});
test.before.each(async () => {
  sent.length = 0;
  answer = () => ({ status: 'done', data: {} });
  await online('r1');
  await online('r2');
});

test('queued → skill.run with the runId to a free runner → starting on it; full → waits "2 runners busy"', async () => {
  const a = await queuePoolRun(db, spec(), Date.now());
  assert.is((await run(a)).state, 'queued');
  await pass();
  assert.is(sent.length, 1);
  assert.is(sent[0].name, 'skill.run');
  assert.is(sent[0].args.runId, a);
  assert.equal(await run(a), { state: 'starting', runner_id: sent[0].runnerId, reason: null, retry_of: null });
  const b = await queuePoolRun(db, spec(), Date.now());
  await pass();
  assert.is((await run(b)).runner_id, sent.find((s) => s.args.runId === b)!.runnerId);
  assert.is.not(sent[1].runnerId, sent[0].runnerId, 'least loaded first');
  const c = await queuePoolRun(db, spec(), Date.now());
  await pass();
  assert.is((await run(c)).state, 'queued');
  assert.is((await db.query<{ waiting_reason: string }>(sql`select waiting_reason from pool_runs where run_id = ${c}`))[0].waiting_reason, '2 runners busy');
  // a's runner reports its end: c goes there.
  const holder = sent[0].runnerId;
  await recordSkillRuns(db, holder, [stateEvent(holder, a, 'succeeded')]);
  await pass();
  assert.equal(await run(c), { state: 'starting', runner_id: holder, reason: null, retry_of: null });
  for (const id of [b, c]) await recordSkillRuns(db, (await run(id)).runner_id!, [stateEvent((await run(id)).runner_id!, id, 'succeeded')]);
});

test('a refusal fails the run command_refused; an offline runner leaves it queued', async () => {
  answer = () => ({ status: 'failed', error: { code: 'unknown_skill', message: 'no such skill' } });
  const a = await queuePoolRun(db, spec(), Date.now());
  await pass();
  assert.equal(await run(a), { state: 'failed', runner_id: null, reason: 'command_refused', retry_of: null });
  answer = () => ({ status: 'offline' });
  const b = await queuePoolRun(db, spec(), Date.now());
  await pass();
  assert.is((await run(b)).state, 'queued');
  assert.match((await db.query<{ waiting_reason: string }>(sql`select waiting_reason from pool_runs where run_id = ${b}`))[0].waiting_reason, 'went offline');
  answer = () => ({ status: 'done', data: {} });
  await pass();
  assert.is((await run(b)).state, 'starting');
  await recordSkillRuns(db, (await run(b)).runner_id!, [stateEvent((await run(b)).runner_id!, b, 'succeeded')]);
});

test('tags, and the queue timeout: failed no_runner_available with the reason, one notification', async () => {
  await online('r2', false);
  const a = await queuePoolRun(db, spec({ targetTags: ['gpu'], queueTimeoutMinutes: 0.005 }), Date.now());
  await pass();
  assert.is((await db.query<{ waiting_reason: string }>(sql`select waiting_reason from pool_runs where run_id = ${a}`))[0].waiting_reason, 'no runner online with tag gpu');
  await new Promise((r) => setTimeout(r, 400));
  await pass();
  await pass();
  assert.equal(await run(a), { state: 'failed', runner_id: null, reason: 'no_runner_available', retry_of: null });
  const notes = await db.query<{ data: { runId: string } }>(sql`select data from notifications where kind = 'run.queue_timeout'`);
  assert.is(notes.length, 1);
  assert.is(notes[0].data.runId, a);
  assert.is(sent.length, 0);
});

test('runner_lost after the grace, retried once; the late success replaces runner_lost and cancels the queued retry', async () => {
  await online('r1', false);
  const a = await queuePoolRun(db, spec({ retryOnLoss: true }), Date.now());
  await pass();
  assert.is((await run(a)).runner_id, 'r2');
  await online('r2', false); // gone for an hour: past the grace
  await pass();
  assert.equal(await run(a), { state: 'failed', runner_id: 'r2', reason: 'runner_lost', retry_of: null });
  const [retry] = await db.query<{ id: string }>(sql`select id from skill_runs where retry_of = ${a}`);
  assert.is((await run(retry.id)).state, 'queued');
  assert.ok(await hasLiveRun(db, 't', 'another-delivery', Date.now()), "the retry is its trigger's live run (previous_still_running)");
  // r2 comes back with the lost run's end.
  await recordSkillRuns(db, 'r2', [stateEvent('r2', a, 'succeeded')]);
  assert.equal(await run(a), { state: 'succeeded', runner_id: 'r2', reason: null, retry_of: null });
  assert.is((await run(retry.id)).state, 'cancelled');
  assert.not.ok(await hasLiveRun(db, 't', 'another-delivery', Date.now()));
  // A lost retry is not retried.
  await online('r2');
  const b = await queuePoolRun(db, spec({ retryOnLoss: true }), Date.now());
  await pass();
  await online('r2', false);
  await pass();
  const [again] = await db.query<{ id: string }>(sql`select id from skill_runs where retry_of = ${b}`);
  await online('r2');
  await pass();
  assert.is((await run(again.id)).state, 'starting');
  await online('r2', false);
  await pass();
  assert.is((await run(again.id)).reason, 'runner_lost');
  assert.is((await db.query<{ n: number }>(sql`select count(*)::int as n from skill_runs where retry_of = ${again.id}`))[0].n, 0);
});

test('a process that dies while sending: its lease runs out, the run fails interrupted and is never sent again', async () => {
  // A dispatcher whose command never comes back (its process "died" with skill.run out).
  const dying = new PoolDispatcher({ db, log: createLogger('error'), hub: { command: () => new Promise(() => {}) } as any, clock: systemClock, leaseMs: 50, lossGraceSeconds: 1 });
  const a = await queuePoolRun(db, spec(), Date.now());
  await (dying as any).pass();
  assert.is((await db.query<{ status: string }>(sql`select status from pool_runs where run_id = ${a}`))[0].status, 'dispatching');
  await new Promise((r) => setTimeout(r, 100));
  await pass();
  assert.equal(await run(a), { state: 'failed', runner_id: null, reason: 'interrupted', retry_of: null });
  assert.is(sent.filter((x) => x.args.runId === a).length, 0, 'not sent again by another process');
});

test.run();
