// Several real server processes on one PostgreSQL: a tick runs once; a dead holder is taken over.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

onlyOn('postgres', test, 2, () => {
  test('3 processes, a job every second for 5 s: each tick runs exactly once', async () => {
    const pg = await freshPostgres();
    const servers: RunningServer[] = [];
    try {
      const env = { ACTIVITY_RETENTION_CRON: '* * * * * *' };
      // Migrate with one process first so the three start together on a ready schema.
      const first = await startServer({ dbEnv: { DATABASE_URL: pg.url }, env });
      servers.push(first);
      servers.push(...(await Promise.all([1, 2].map(() => startServer({ dbEnv: { DATABASE_URL: pg.url }, env })))));
      await sleep(5000);
      await Promise.all(servers.map((s) => s.stop()));
      const finished = servers.flatMap((s) =>
        [...s.output().matchAll(/job finished .*job=retention\.activity scheduledFor=(\S+)/g)].map((m) => m[1]),
      );
      const distinct = new Set(finished);
      assert.ok(distinct.size >= 4, `ran on ${distinct.size} ticks`);
      assert.is(finished.length, distinct.size, 'no tick ran twice across processes');
      const sql = postgres(pg.url, { max: 1 });
      const rows = await sql`select scheduled_for, status, attempt, lease_owner from job_runs where job = 'retention.activity'`;
      await sql.end();
      const ran = rows.filter((r) => r.status === 'ok');
      assert.is(ran.length, distinct.size);
      assert.ok(ran.every((r) => r.attempt === 1));
      // A tick claimed while its process was stopping is not run there: it is released for another replica.
      for (const r of rows.filter((x) => x.status !== 'ok')) assert.equal([r.status, r.lease_owner], ['running', null]);
      const winners = servers.filter((s) => /job finished .*job=retention\.activity/.test(s.output())).length;
      assert.ok(winners >= 1);
    } finally {
      await Promise.all(servers.map((s) => s.cleanup()));
      await pg.drop();
    }
  });

  test('kill -9 of the replica running a job: another replica takes it over after the lease and finishes it', async () => {
    const pg = await freshPostgres();
    const servers: RunningServer[] = [];
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      const env = { JOB_LEASE_SECONDS: '2' };
      const holder = await startServer({ dbEnv: { DATABASE_URL: pg.url }, env, admin: true });
      servers.push(holder);
      // A backlog large enough that the cleanup takes a while in 5,000-row batches.
      await sql`insert into activity_items (kind, created_at) select 'old', now() - interval '400 days' from generate_series(1, 400000)`;
      const run = await holder.api('/api/schedules/retention.activity/run', { method: 'POST' });
      assert.is(run.status, 202);
      const { scheduledFor } = await run.json();
      await sleep(150);
      const [running] = await sql`select status, lease_owner from job_runs where job = 'retention.activity'`;
      assert.is(running.status, 'running', 'still working when killed');
      await holder.stop('SIGKILL');

      const survivor = await startServer({ dbEnv: { DATABASE_URL: pg.url }, env });
      servers.push(survivor);
      let row;
      for (let i = 0; i < 100; i++) {
        [row] = await sql`select status, attempt, lease_owner from job_runs where job = 'retention.activity'`;
        if (row.status !== 'running') break;
        await sleep(200);
      }
      assert.is(row!.status, 'ok');
      assert.is(row!.attempt, 2);
      assert.match(survivor.output(), new RegExp(`taking over job whose lease expired .*job=retention.activity scheduledFor=${scheduledFor}`));
      const [{ left }] = await sql`select count(*)::int as left from activity_items`;
      assert.is(left, 0);
    } finally {
      await sql.end();
      await Promise.all(servers.map((s) => s.cleanup()));
      await pg.drop();
    }
  });
});

test.run();
