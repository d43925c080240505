// Two server processes on one PostgreSQL: each due time of a project schedule runs once — one skill.run
// per time reaches the runner, one job_runs row per time — whichever process takes it.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import { createSchedule, daily, makeProject, reportRun, waitFor } from './_harness.ts';

onlyOn('postgres', test, 1, () => {
  test('2 processes, a schedule due at three times 2 s apart: each time sends skill.run once', async () => {
    const pg = await freshPostgres();
    const servers: RunningServer[] = [];
    const db = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      const first = await startServer({ dbEnv: { DATABASE_URL: pg.url }, admin: true, env: { NODE_ENV: 'test' } });
      servers.push(first);
      servers.push(await startServer({ dbEnv: { DATABASE_URL: pg.url }, env: { NODE_ENV: 'test' } }));
      const runner = await pairRunner(first.api, first.url, 'replicas');
      const projectId = await makeProject(first, runner.runnerId);
      const ws = connect(servers[1].url, runner.token); // held by the second process; the first relays through the database
      await ws.next('welcome');
      let t = new Date(Math.ceil((Date.now() + 4000) / 1000) * 1000);
      if (t.getUTCSeconds() > 53) t = new Date(Math.ceil(t.getTime() / 60_000) * 60_000 + 1000);
      const times = [0, 2000, 4000].map((d) => new Date(t.getTime() + d));
      const cron = `${times.map((x) => x.getUTCSeconds()).join(',')} ${t.getUTCMinutes()} ${t.getUTCHours()} * * *`;
      const made = await createSchedule(first, projectId, daily({ name: 'replicated', cron, timezone: 'UTC' }));
      for (let i = 1; i <= 3; i++) {
        const cmd = await ws.next('command', 20_000);
        assert.is(cmd.name, 'skill.run');
        ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { runId: `run-rep-${i}`, state: 'queued' } });
        await reportRun(ws, projectId, `run-rep-${i}`, 'succeeded');
      }
      // Once the last time is past and recorded, the pending time is tomorrow's first.
      await waitFor('the last time recorded', async () => {
        const r = await (await first.api(`/api/projects/${projectId}/schedules/${made.id}`)).json();
        return r.lastRun?.scheduledFor === times[2].toISOString() && r.nextRunAt === new Date(t.getTime() + 86400_000).toISOString();
      }, 20_000);
      // The schedule records its last time when the job starts; the job's own row and its log line follow
      // once the runner's answer has come back through the other process.
      const finishedLines = () => servers.flatMap((s) => [...s.output().matchAll(/job finished .*job=schedule:\S+ scheduledFor=(\S+)/g)].map((m) => m[1]));
      const jobRows = () => db`select scheduled_for, status, attempt from job_runs where job = ${`schedule:${made.id}`} order by scheduled_for`;
      await waitFor('the three jobs finished', async () => (await jobRows()).every((r) => r.status !== 'running') && finishedLines().length >= 3, 20_000);
      const rows = await jobRows();
      assert.equal(rows.map((r) => [new Date(r.scheduled_for).toISOString(), r.status, r.attempt]), times.map((x) => [x.toISOString(), 'ok', 1]));
      const commands = ws.frames.filter((f) => f.type === 'command');
      assert.is(commands.length, 3, 'one skill.run per time');
      const sent = await db`select count(*)::int as n from runner_commands where name = 'skill.run'`;
      assert.is(sent[0].n, 3);
      assert.equal(finishedLines().sort(), times.map((x) => x.toISOString()), 'each time finished once across both processes');
      ws.ws.close();
    } finally {
      await db.end();
      await Promise.all(servers.map((s) => s.cleanup()));
      await pg.drop();
    }
  });
});

test.run();
