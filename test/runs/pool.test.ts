// Runner pools on one server (functions/runs/pool.ts; docs/skill-runs.md "Pool runs"; docs/runner.md "What
// happens on loss"), with protocol fake runners as pool members: a pool trigger's call queues a run that
// waits while every runner is full and is dispatched in order when a place frees; least loaded first;
// tags; the queue timeout with its notification; runner_lost after the grace and one retry; a late report
// over runner_lost cancels the retry; a pool schedule queues its run too; pool entries in the watch list; a runner removed from the pool still has its run recorded.
// Pools and targets are set with SQL, so these run on PostgreSQL (the test reaches the server's database).
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pickRunner } from '../../functions/runs/pool.ts';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { KEY } from '../triggers/_harness.ts';
import { meta, send, uid } from '../helpers/usage-events.ts';
import { createSchedule, daily } from '../schedules/_harness.ts';
import { fakeRunner, goOffline, goOnline, poolProject, queueRun, report, runIs, runOf, waitFor } from './_pool.ts';

test('pickRunner(): online, pool-capable, tagged, free — least loaded first; else the waiting reason', () => {
  const m = (id: string, o: Partial<{ online: boolean; pool: boolean; tags: string[]; max: number; load: number }> = {}) => ({ id, online: true, pool: true, tags: [], max: 2, load: 0, ...o });
  assert.equal(pickRunner([m('a', { load: 1 }), m('b')], []), { runnerId: 'b' });
  assert.equal(pickRunner([m('a', { load: 1, max: 4 }), m('b', { load: 1 })], []), { runnerId: 'a' });
  assert.equal(pickRunner([m('a', { online: false })], []), { reason: 'no runner online in the pool' });
  assert.equal(pickRunner([m('a', { pool: false })], []), { reason: 'no pool runner takes pool runs (update svc-runner)' });
  assert.equal(pickRunner([m('a', { tags: ['cpu'] })], ['gpu']), { reason: 'no runner online with tag gpu' });
  assert.equal(pickRunner([m('a', { load: 2 }), m('b', { load: 2 }), m('c', { load: 2 })], []), { reason: '3 runners busy' });
  assert.equal(pickRunner([m('a', { tags: ['gpu'] }), m('b')], ['gpu']), { runnerId: 'a' });
});

onlyOn('postgres', test, 9, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let server: RunningServer;
  let sql: postgres.Sql;

  test.before(async () => {
    pg = await freshPostgres();
    server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', POOL_LOSS_GRACE_SECONDS: '2' }, dbEnv: { DATABASE_URL: pg.url } });
    sql = postgres(pg.url, { max: 2, onnotice: () => {} });
  });
  test.after(async () => {
    await sql?.end();
    await server?.cleanup();
    await pg?.drop();
  });

  test('queued while every runner is full (position and reason in GET /api/runs), dispatched in order as places free', async () => {
    const a = await fakeRunner(server, sql, { max: 1 });
    const b = await fakeRunner(server, sql, { max: 1 });
    const projectId = await poolProject(server, sql, [a, b]);
    const first = await queueRun(server, sql, projectId);
    await runIs(server, projectId, first, 'starting');
    const second = await queueRun(server, sql, projectId);
    await runIs(server, projectId, second, 'starting');
    assert.equal([...a.runs, ...b.runs].sort(), [first, second].sort());
    assert.is(a.runs.length, 1, 'least loaded first: one each');
    const third = await queueRun(server, sql, projectId);
    const fourth = await queueRun(server, sql, projectId);
    const q3 = await runIs(server, projectId, third, 'queued', (r) => r.queue?.reason === '2 runners busy');
    assert.equal(q3.queue, { position: 1, reason: '2 runners busy' });
    assert.is(q3.runnerId, null);
    assert.equal((await runOf(server, projectId, fourth)).queue?.position, 2);
    // a's run ends: the oldest waiting run takes its place, on a.
    const holderOfFirst = a.runs.includes(first) ? a : b;
    await report(holderOfFirst, projectId, first, 'running');
    await report(holderOfFirst, projectId, first, 'succeeded');
    const started = await runIs(server, projectId, third, 'starting');
    assert.is(started.runnerId, holderOfFirst.runnerId);
    assert.is((await runOf(server, projectId, fourth)).state, 'queued');
    assert.equal((await runOf(server, projectId, fourth)).queue?.position, 1);
    // Its events are recorded as that runner's (it is not the project's primary).
    await report(holderOfFirst, projectId, third, 'running');
    await runIs(server, projectId, third, 'running');
    for (const f of [a, b]) f.client.ws.close();
  });

  test('tags: a run goes only to a runner with every target tag; none online → waits "no runner online with tag …"', async () => {
    const cpu = await fakeRunner(server, sql, { max: 2, tags: ['cpu'] });
    const gpu = await fakeRunner(server, sql, { max: 2, tags: ['gpu', 'cpu'] });
    const projectId = await poolProject(server, sql, [cpu, gpu]);
    const run = await queueRun(server, sql, projectId, { tags: ['gpu'] });
    assert.is((await runIs(server, projectId, run, 'starting')).runnerId, gpu.runnerId);
    const tpu = await queueRun(server, sql, projectId, { tags: ['tpu'] });
    await runIs(server, projectId, tpu, 'queued', (r) => r.queue?.reason === 'no runner online with tag tpu');
    assert.is(cpu.runs.length, 0);
    for (const f of [cpu, gpu]) f.client.ws.close();
  });

  test('queue timeout: failed no_runner_available with the waiting reason, one run.queue_timeout notification, the delivery stays fired', async () => {
    const old = await fakeRunner(server, sql, { max: 1, pool: false });
    const projectId = await poolProject(server, sql, [old]);
    const run = await queueRun(server, sql, projectId, { timeoutMinutes: 0.03 });
    const failed = await runIs(server, projectId, run, 'failed');
    assert.is(failed.reason, 'no_runner_available');
    assert.match(failed.error, 'no pool runner takes pool runs (update svc-runner)');
    assert.is(failed.queue, null);
    const notes = await sql`select kind, data from notifications where kind = 'run.queue_timeout' and project_id = ${projectId}`;
    assert.is(notes.length, 1);
    assert.is(notes[0].data.runId, run);
    const [activity] = await sql`select count(*)::int as n from activity_items where project_id = ${projectId} and kind = 'run.failed'`;
    assert.is(activity.n, 1);
    const [d] = await sql`select status, run_id from inbound_deliveries where run_id = ${run}`;
    assert.is(d.status, 'fired');
    assert.is(old.runs.length, 0, 'a runner without skills.pool is never sent a pool run');
    old.client.ws.close();
  });

  test('runner_lost after POOL_LOSS_GRACE_SECONDS, retried once on another runner; a lost retry is not retried', async () => {
    const d = await fakeRunner(server, sql, { max: 1 });
    const projectId = await poolProject(server, sql, [d]);
    const run = await queueRun(server, sql, projectId, { retry: true });
    await runIs(server, projectId, run, 'starting');
    await report(d, projectId, run, 'running');
    const e = await fakeRunner(server, sql, { max: 1 });
    await sql`insert into project_runners (project_id, runner_id, root_path, root_state) values (${projectId}, ${e.runnerId}, '/pool/e', 'ok')`;
    await goOffline(d);
    const lost = await runIs(server, projectId, run, 'failed');
    assert.is(lost.reason, 'runner_lost');
    const retry = await waitFor('the retry', async () => (await sql`select id from skill_runs where retry_of = ${run}`)[0]?.id as string | undefined);
    const started = await runIs(server, projectId, retry, 'starting');
    assert.is(started.runnerId, e.runnerId);
    assert.is(started.retryOf, run);
    await goOffline(e);
    await runIs(server, projectId, retry, 'failed', (r) => r.reason === 'runner_lost');
    await new Promise((r) => setTimeout(r, 1500)); // a pass or more after the loss: still no retry of the retry
    assert.is((await sql`select count(*)::int as n from skill_runs where retry_of = ${retry}`)[0].n, 0);
  });

  test('a late report replaces runner_lost; a late success cancels the retry its runner holds', async () => {
    const d = await fakeRunner(server, sql, { max: 1 });
    const e = await fakeRunner(server, sql, { max: 1 });
    const projectId = await poolProject(server, sql, [d]);
    const run = await queueRun(server, sql, projectId, { retry: true });
    await runIs(server, projectId, run, 'starting');
    await report(d, projectId, run, 'running');
    await sql`insert into project_runners (project_id, runner_id, root_path, root_state) values (${projectId}, ${e.runnerId}, '/pool/e', 'ok')`;
    await goOffline(d);
    await runIs(server, projectId, run, 'failed', (r) => r.reason === 'runner_lost');
    const retry = await waitFor('the retry', async () => (await sql`select id from skill_runs where retry_of = ${run}`)[0]?.id as string | undefined);
    await runIs(server, projectId, retry, 'starting');
    await report(e, projectId, retry, 'running');
    // d comes back with the run's end.
    await goOnline(server, d);
    await report(d, projectId, run, 'succeeded');
    const late = await runIs(server, projectId, run, 'succeeded');
    assert.is(late.reason, null);
    await waitFor('skill.cancel of the retry', async () => e.cancels.includes(retry));
    await report(e, projectId, retry, 'cancelled');
    await runIs(server, projectId, retry, 'cancelled');
    for (const f of [d, e]) f.client.ws.close();
  });

  test('a pool schedule run now: started with a queued run, which the dispatcher sends with its runId', async () => {
    const f = await fakeRunner(server, sql, { max: 1 });
    const projectId = await poolProject(server, sql, [f]);
    const made = await createSchedule(server, projectId, daily({ args: [] }));
    await sql`update project_schedules set target = 'pool' where id = ${made.id}`;
    const res = await server.api(`/api/projects/${projectId}/schedules/${made.id}/run`, { method: 'POST' });
    const body = await res.json();
    assert.is(res.status, 202);
    assert.is(body.result, 'started');
    const started = await runIs(server, projectId, body.runId, 'starting');
    assert.is(started.runnerId, f.runnerId);
    assert.equal(f.runs, [body.runId]);
    f.client.ws.close();
  });

  test('watch list: a pool member that announced skills.pool gets the project with its own root and pool: true; an older runner none', async () => {
    const f = await fakeRunner(server, sql, { max: 1 });
    const old = await fakeRunner(server, sql, { max: 1, pool: false });
    const projectId = await poolProject(server, sql, [f, old]);
    for (const r of [f, old]) {
      await goOffline(r);
      await goOnline(server, r, r === f);
    }
    const listed = (r: typeof f) => r.client.frames.filter((x: any) => x.type === 'welcome' || x.type === 'projects').flatMap((x: any) => x.projects);
    await waitFor('the pool entry', async () => listed(f).some((p: any) => p.id === projectId));
    assert.equal(listed(f).filter((p: any) => p.id === projectId).at(-1), { id: projectId, root: `/pool/${projectId}`, pool: true });
    assert.is(listed(old).filter((p: any) => p.id === projectId).length, 0);
    for (const r of [f, old]) r.client.ws.close();
  });

  test("a pool member's agent session of a pool run counts for the pool's project (cost ingest); another runner's project does not", async () => {
    const f = await fakeRunner(server, sql, { max: 1 });
    const projectId = await poolProject(server, sql, [f]);
    const stranger = await poolProject(server, sql, []);
    const [mine, theirs] = [`s-${uid()}`, `s-${uid()}`];
    await send(f.client, [meta('claude', mine, { project: projectId }), meta('claude', theirs, { project: stranger })]);
    const rows = await sql`select session_id, project_id from agent_sessions where runner_id = ${f.runnerId} order by session_id`;
    assert.equal(Object.fromEntries(rows.map((r) => [r.session_id, r.project_id])), { [mine]: projectId, [theirs]: null });
    f.client.ws.close();
  });

  test('a runner removed from the pool keeps its in-flight run recorded, and gets no new one', async () => {
    const f = await fakeRunner(server, sql, { max: 2 });
    const projectId = await poolProject(server, sql, [f]);
    const run = await queueRun(server, sql, projectId);
    await runIs(server, projectId, run, 'starting');
    await sql`delete from project_runners where runner_id = ${f.runnerId}`;
    await report(f, projectId, run, 'running');
    await report(f, projectId, run, 'succeeded');
    await runIs(server, projectId, run, 'succeeded');
    const next = await queueRun(server, sql, projectId);
    await runIs(server, projectId, next, 'queued', (r) => r.queue?.reason === 'no runner online in the pool');
    assert.is(f.runs.length, 1);
    f.client.ws.close();
  });
});

test.run();
