// Runner pools across server processes (functions/runs/pool.ts): two replicas on one PostgreSQL dispatch
// each queued run once (FOR UPDATE SKIP LOCKED), whichever holds the runner's socket; queued runs survive
// a restart of every process and are dispatched once a runner is back.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { KEY } from '../triggers/_harness.ts';
import { fakeRunner, goOffline, goOnline, poolProject, queueRun, report, runIs, waitFor } from './_pool.ts';

onlyOn('postgres', test, 2, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let servers: RunningServer[] = [];
  let sql: postgres.Sql;
  const env = { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' };

  test.before(async () => {
    pg = await freshPostgres();
    const a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url } });
    servers = [a, await startServer({ env, dbEnv: { DATABASE_URL: pg.url } })];
    sql = postgres(pg.url, { max: 2, onnotice: () => {} });
  });
  test.after(async () => {
    await sql?.end();
    await Promise.all(servers.map((s) => s.cleanup()));
    await pg?.drop();
  });

  test('two replicas: each of 12 queued runs is sent once, to runners held by either process', async () => {
    const [a, b] = servers;
    const one = await fakeRunner(a, sql, { max: 3 });
    const two = await fakeRunner(a, sql, { max: 3, via: b });
    const projectId = await poolProject(a, sql, [one, two]);
    const runs: string[] = [];
    for (let i = 0; i < 12; i++) runs.push(await queueRun(a, sql, projectId));
    const done = new Set<string>();
    // Each runner ends what it holds; the rest follow as places free.
    await waitFor('every run sent', async () => {
      for (const f of [one, two]) {
        for (const id of f.runs) {
          if (done.has(id)) continue;
          done.add(id);
          await report(f, projectId, id, 'succeeded');
        }
      }
      return done.size === runs.length;
    }, 60_000);
    const sent = [...one.runs, ...two.runs];
    assert.is(sent.length, runs.length, 'no run sent twice');
    assert.equal([...new Set(sent)].sort(), [...runs].sort());
    assert.ok(one.runs.length > 0 && two.runs.length > 0, `both runners took runs: ${one.runs.length}/${two.runs.length}`);
    for (const id of runs) await runIs(a, projectId, id, 'succeeded');
    for (const f of [one, two]) f.client.ws.close();
  });

  test('a restart keeps queued runs: dispatched once a runner is back', async () => {
    const f = await fakeRunner(servers[0], sql, { max: 1 });
    const projectId = await poolProject(servers[0], sql, [f]);
    await goOffline(f);
    const run = await queueRun(servers[0], sql, projectId);
    await runIs(servers[0], projectId, run, 'queued', (r) => r.queue?.reason === 'no runner online in the pool');
    await Promise.all(servers.map((s) => s.stop()));
    servers = [await startServer({ env, dbEnv: { DATABASE_URL: pg.url } })];
    await goOnline(servers[0], f);
    await waitFor('the run sent', async () => f.runs.includes(run));
    await waitFor('the run starting on it', async () => (await sql`select runner_id from skill_runs where id = ${run} and state = 'starting'`)[0]?.runner_id === f.runnerId);
    assert.is(f.runs.length, 1);
    f.client.ws.close();
  });
});

test.run();
