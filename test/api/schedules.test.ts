import { Cron } from 'croner';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let startedAt: number;
test.before(async () => {
  startedAt = Date.now();
  server = await startServer({ admin: true, env: { ACTIVITY_RETENTION_DAYS: '90' } });
});
test.after(async () => server?.cleanup());

test('GET /api/schedules lists the system jobs with their next run and no last run yet', async () => {
  const next = (cron: string, at: number) => new Cron(cron, { paused: true, timezone: 'UTC' }).nextRun(new Date(at))!.toISOString();
  const before = Date.now();
  const res = await server.api('/api/schedules');
  const after = Date.now();
  assert.is(res.status, 200);
  const { jobs } = await res.json();
  assert.equal(jobs.map((j: { name: string }) => j.name), ['retention.activity', 'retention.events', 'retention.deliveries', 'retention.housekeeping', 'retention.codehost_deliveries', 'audit.verify', 'runners.offline', 'codehost.cost_blocks']);
  for (const j of jobs) {
    assert.is(j.kind, 'system');
    // No run before this server started; a job due every minute (runners.offline) may have run since.
    if (j.lastRun !== null) assert.ok(Date.parse(j.lastRun.scheduledFor) >= startedAt - 1000, `${j.name} ran before the server started: ${JSON.stringify(j.lastRun)}`);
    if (j.lastRun !== null) assert.ok(['runners.offline', 'codehost.cost_blocks'].includes(j.name), `${j.name} has a last run already`);
    // The next run as of the request (a minute boundary may fall between asking and answering).
    assert.ok([next(j.cron, before), next(j.cron, after)].includes(j.nextRunAt), `${j.name}: ${j.nextRunAt}`);
  }
  assert.match(jobs[0].description, /90 days/);
});

test('POST /api/schedules/:name/run → 202; the result shows up as the last run', async () => {
  const res = await server.api('/api/schedules/retention.deliveries/run', { method: 'POST' });
  assert.is(res.status, 202);
  const body = await res.json();
  assert.is(body.started, true);
  let job;
  for (let i = 0; i < 50; i++) {
    job = (await (await server.api('/api/schedules')).json()).jobs.find((j: { name: string }) => j.name === 'retention.deliveries');
    if (job.lastRun?.status === 'ok') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.is(job.lastRun.status, 'ok');
  assert.is(job.lastRun.scheduledFor, body.scheduledFor);
  assert.equal(job.lastRun.result, { outbound: 0, inbound: 0, deliveryIds: 0 });
});

test('unknown job → 404; malformed name → 400', async () => {
  const missing = await server.api('/api/schedules/no.such.job/run', { method: 'POST' });
  assert.is(missing.status, 404);
  const bad = await server.api(`/api/schedules/${'x'.repeat(100)}/run`, { method: 'POST' });
  assert.is(bad.status, 400);
  assert.ok((await bad.json()).error.fields.name);
});

test.run();
