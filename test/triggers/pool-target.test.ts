// A trigger's target fields (issue #37; functions/runs/pool-target.ts; docs/triggers.md "Where the runs
// go"): defaults (primary, [], 30, false); pool with tags (each once, sorted), a fractional timeout and
// retry stored in the row, answered and audited; targetTags or retryOnRunnerLoss with the primary target,
// a bad tag, 17 tags, a timeout of 0 or over a day, and the pool target with next_round → 400 naming the field.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { callAs } from '../helpers/users.ts';
import { setup, skillTrigger } from './_harness.ts';
import type { Setup } from './_harness.ts';

let s: Setup;
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(s.server, path, init);
const base = () => `/api/projects/${s.projectId}/triggers`;
test.before(async () => {
  s = await setup();
});
test.after(async () => s?.server.cleanup());

test('defaults: primary, no tags, 30 minutes, no retry', async () => {
  const made = await call(base(), { method: 'POST', json: skillTrigger() });
  assert.is(made.status, 201);
  const t = made.body.trigger;
  assert.equal([t.target, t.targetTags, t.queueTimeoutMinutes, t.retryOnRunnerLoss], ['primary', [], 30, false]);
});

test('pool target: stored, answered, audited; switching back to primary clears the pool-only fields', async () => {
  const made = await call(base(), { method: 'POST', json: skillTrigger({ name: 'pooled', target: 'pool', targetTags: ['linux', 'gpu', 'gpu'], queueTimeoutMinutes: 2.5, retryOnRunnerLoss: true }) });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const id = made.body.trigger.id;
  const got = (await call(`${base()}/${id}`)).body;
  assert.equal([got.target, got.targetTags, got.queueTimeoutMinutes, got.retryOnRunnerLoss], ['pool', ['gpu', 'linux'], 2.5, true]);
  const created = (await call(`/api/audit?action=trigger.create&targetId=${id}`)).body.records[0];
  assert.is(created.diff.after.target, 'pool');
  assert.equal(created.diff.after.targetTags, ['gpu', 'linux']);
  const patched = await call(`${base()}/${id}`, { method: 'PATCH', json: { queueTimeoutMinutes: 10 } });
  assert.is(patched.status, 200);
  assert.equal([patched.body.target, patched.body.queueTimeoutMinutes, patched.body.retryOnRunnerLoss], ['pool', 10, true]);
  const back = await call(`${base()}/${id}`, { method: 'PATCH', json: { target: 'primary' } });
  assert.is(back.status, 200);
  assert.equal([back.body.target, back.body.targetTags, back.body.retryOnRunnerLoss], ['primary', [], false]);
  const updated = (await call(`/api/audit?action=trigger.update&targetId=${id}`)).body.records;
  assert.ok(updated.some((r: { diff: { before: { target: string }; after: { target: string } } }) => r.diff.before.target === 'pool' && r.diff.after.target === 'primary'));
});

test('bad inputs → 400 naming the field, nothing stored', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ targetTags: ['gpu'] }, 'targetTags'],
    [{ retryOnRunnerLoss: true }, 'retryOnRunnerLoss'],
    [{ target: 'pool', targetTags: ['GPU'] }, 'targetTags'],
    [{ target: 'pool', targetTags: Array.from({ length: 17 }, (_, i) => `t${i}`) }, 'targetTags'],
    [{ target: 'pool', queueTimeoutMinutes: 0 }, 'queueTimeoutMinutes'],
    [{ target: 'pool', queueTimeoutMinutes: 1441 }, 'queueTimeoutMinutes'],
    [{ target: 'elsewhere' }, 'target'],
  ];
  const before = (await call(base())).body.triggers.length;
  for (const [over, field] of cases) {
    const res = await call(base(), { method: 'POST', json: skillTrigger({ name: 'bad', ...over }) });
    assert.is(res.status, 400, JSON.stringify(over));
    assert.ok(Object.keys(res.body.error.fields).some((k) => k === field || k.startsWith(`${field}.`)), `${JSON.stringify(over)}: ${JSON.stringify(res.body.error)}`);
  }
  const round = await call(base(), { method: 'POST', json: { name: 'round', action: 'next_round', target: 'pool' } });
  assert.is(round.status, 400);
  assert.ok(round.body.error.fields.target);
  assert.is((await call(base())).body.triggers.length, before);
});

test.run();
