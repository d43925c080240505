// A schedule's target fields (issue #37; functions/runs/pool-target.ts; docs/schedules.md "Where the runs
// go"): defaults (primary, [], 30, false); pool with tags, timeout and retry stored, answered and audited;
// targetTags or retryOnRunnerLoss with the primary target, a bad tag, 17 tags or a bad timeout → 400
// naming the field; switching back to primary clears the pool-only fields.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { callAs } from '../helpers/users.ts';
import { daily, setup } from './_harness.ts';
import type { Setup } from './_harness.ts';

let s: Setup;
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(s.server, path, init);
const base = () => `/api/projects/${s.projectId}/schedules`;
test.before(async () => {
  s = await setup();
});
test.after(async () => {
  s?.ws.ws.close();
  await s?.server.cleanup();
});

test('defaults, then the pool target stored, answered, audited and switched back', async () => {
  const plain = await call(base(), { method: 'POST', json: daily({ name: 'plain' }) });
  assert.is(plain.status, 201);
  assert.equal([plain.body.target, plain.body.targetTags, plain.body.queueTimeoutMinutes, plain.body.retryOnRunnerLoss], ['primary', [], 30, false]);
  const made = await call(base(), { method: 'POST', json: daily({ name: 'pooled', target: 'pool', targetTags: ['linux', 'arm'], queueTimeoutMinutes: 90, retryOnRunnerLoss: true }) });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const id = made.body.id;
  const got = (await call(`${base()}/${id}`)).body;
  assert.equal([got.target, got.targetTags, got.queueTimeoutMinutes, got.retryOnRunnerLoss], ['pool', ['arm', 'linux'], 90, true]);
  assert.is((await call(`/api/audit?action=schedule.create&targetId=${id}`)).body.records[0].diff.after.target, 'pool');
  const back = await call(`${base()}/${id}`, { method: 'PATCH', json: { target: 'primary' } });
  assert.is(back.status, 200);
  assert.equal([back.body.target, back.body.targetTags, back.body.retryOnRunnerLoss], ['primary', [], false]);
  const updated = (await call(`/api/audit?action=schedule.update&targetId=${id}`)).body.records[0];
  assert.is(updated.diff.before.target, 'pool');
  assert.is(updated.diff.after.target, 'primary');
});

test('bad inputs → 400 naming the field, nothing stored', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ targetTags: ['gpu'] }, 'targetTags'],
    [{ retryOnRunnerLoss: true }, 'retryOnRunnerLoss'],
    [{ target: 'pool', targetTags: ['no spaces'] }, 'targetTags'],
    [{ target: 'pool', targetTags: Array.from({ length: 17 }, (_, i) => `t${i}`) }, 'targetTags'],
    [{ target: 'pool', queueTimeoutMinutes: -1 }, 'queueTimeoutMinutes'],
  ];
  const before = (await call(base())).body.schedules.length;
  for (const [over, field] of cases) {
    const res = await call(base(), { method: 'POST', json: daily({ name: 'bad', ...over }) });
    assert.is(res.status, 400, JSON.stringify(over));
    assert.ok(Object.keys(res.body.error.fields).some((k) => k === field || k.startsWith(`${field}.`)), `${JSON.stringify(over)}: ${JSON.stringify(res.body.error)}`);
  }
  assert.is((await call(base())).body.schedules.length, before);
});

test.run();
