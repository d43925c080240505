// Missed runs (docs/schedules.md, "Missed runs"): a server that was down at a schedule's time runs the
// missed run once at start when it is less than one interval late; a run more than one interval late is
// recorded as missed and not run. The first server has JOBS_ENABLED=false (nothing runs there, like a
// service that is down), the second one starts on the same database after the times passed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { pairRunner } from '../helpers/wsclient.ts';
import { createSchedule, cronAt, daily, makeProject, waitFor } from './_harness.ts';

let dbEnv: Record<string, string>;
let drop: (() => Promise<void>) | undefined;
const servers: RunningServer[] = [];

test.before(async () => {
  ({ env: dbEnv, cleanup: drop } = await serverDbEnv());
});
test.after(async () => {
  for (const s of servers) await s.cleanup();
  await drop?.();
});

/** Two times 2 s apart within one minute, at least 3 s from now. */
async function twoTimesSoon(): Promise<[Date, Date]> {
  let first = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000);
  if (first.getUTCSeconds() > 56) first = new Date(Math.ceil(first.getTime() / 60_000) * 60_000 + 1000);
  return [first, new Date(first.getTime() + 2000)];
}

test('down at the time: less than one interval late runs once at start; more than one interval late is recorded missed', async () => {
  const down = await startServer({ admin: true, dbEnv, env: { JOBS_ENABLED: 'false', NODE_ENV: 'test' } });
  servers.push(down);
  const runner = await pairRunner(down.api, down.url, 'missed');
  const projectId = await makeProject(down, runner.runnerId);
  const [t1, t2] = await twoTimesSoon();
  // Daily at t1: at start it is seconds late, far less than a day → runs once.
  const once = await createSchedule(down, projectId, daily({ name: 'daily', cron: cronAt(t1), timezone: 'UTC' }));
  // At t1 and t2 every day: by the restart t2 has passed too → t1 is more than one interval late.
  const [s, m, h] = cronAt(t1).split(' ');
  const twice = await createSchedule(down, projectId, daily({ name: 'twice', cron: `${s},${t2.getUTCSeconds()} ${m} ${h} * * *`, timezone: 'UTC' }));
  assert.equal([once.nextRunAt, twice.nextRunAt], [t1.toISOString(), t1.toISOString()]);
  await waitFor('both times passed', async () => Date.now() > t2.getTime() + 500, 20_000);
  const view = async (id: string) => (await down.api(`/api/projects/${projectId}/schedules/${id}`)).json();
  assert.is((await view(once.id)).lastRun, null, 'nothing ran while no server ran jobs');
  assert.is(await down.stop(), 0);

  const up = await startServer({ dbEnv, env: { NODE_ENV: 'test' } });
  servers.push(up);
  const call = async (id: string) => (await fetch(`${up.url}/api/projects/${projectId}/schedules/${id}`, { headers: { authorization: `Bearer ${down.admin.token}` } })).json();
  // The runner is not connected: the run that runs at start fails runner_offline — once.
  const ran = await waitFor('the missed daily run ran at start', async () => {
    const r = await call(once.id);
    return r.lastRun ? r : undefined;
  });
  assert.equal([ran.lastRun.scheduledFor, ran.lastRun.result, ran.lastRun.reason, ran.consecutiveFailures], [t1.toISOString(), 'failed', 'runner_offline', 1]);
  assert.is(ran.nextRunAt, new Date(t1.getTime() + 86400_000).toISOString());
  const skipped = await waitFor('the late run recorded missed', async () => {
    const r = await call(twice.id);
    return r.lastRun ? r : undefined;
  });
  assert.equal([skipped.lastRun.scheduledFor, skipped.lastRun.result, skipped.lastRun.reason, skipped.consecutiveFailures], [t1.toISOString(), 'skipped', 'missed', 0]);
  assert.is(skipped.nextRunAt, new Date(t1.getTime() + 86400_000).toISOString(), 'next is the first time after now; t2 is not run either');
  assert.is((up.output().match(/scheduled run failed/g) ?? []).length, 1, 'one run at start, not one per missed time');
});

test.run();
