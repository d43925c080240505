// Project budgets (docs/cost.md, "Budgets"): month-to-date spend from ingested LLM requests; 80 % and
// 100 % each notify the project's admins once per month (the notifications list, no webhook event) and
// add an activity item; action `stop` makes inbound triggers skip with budget_exceeded and refuses
// orchestrator.start, through both command routes. Against the real server, with a protocol client
// paired as the project's runner.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTrigger, deliveries, post, setup, waitFor } from '../triggers/_harness.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

let server: RunningServer;
let projectId = '';
let runnerId = '';
let ws: Client;
let padmin: TestUser;
let viewer: TestUser;
const MODEL = `budget-model-${randomBytes(3).toString('hex')}`; // $100 per million output tokens
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
let n = 0;

/** One request of `usd` dollars in this project, now. */
function spend(usd: number, project = projectId) {
  const id = `r-${++n}-${randomBytes(3).toString('hex')}`;
  return {
    id: `llm.${id}`,
    source: 'sessions',
    kind: 'llm.request',
    ts: new Date().toISOString(),
    payload: {
      key: `claude:m:${id}`,
      runtime: 'claude',
      source: 'transcript',
      sessionId: 'budget-session',
      requestId: id,
      model: MODEL,
      at: new Date().toISOString(),
      inputTokens: 0,
      outputTokens: Math.round(usd * 10_000),
      cacheWrite5mTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      project,
    },
  };
}

async function send(events: unknown[]): Promise<void> {
  ws.send({ type: 'events', events });
  await ws.next('ack');
}

const budgetNotices = async (token?: string) =>
  ((await call('/api/notifications', { token })).body.notifications as { kind: string; projectId: string; data: Record<string, any> }[]).filter(
    (x) => x.kind === 'budget.threshold' && x.projectId === projectId,
  );

test.before(async () => {
  const s = await setup();
  server = s.server;
  projectId = s.projectId;
  runnerId = s.runner.runnerId;
  padmin = await makeUser(server, 'budgetadmin');
  viewer = await makeUser(server, 'budgetviewer');
  assert.is((await call(`/api/projects/${projectId}/members/${padmin.id}`, { method: 'PUT', json: { role: 'admin' } })).status, 200);
  assert.is((await call(`/api/projects/${projectId}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  const price = await call(`/api/prices/${MODEL}`, { method: 'PUT', json: { inputUsdPerMTok: 0, outputUsdPerMTok: 100, effectiveFrom: '2020-01-01T00:00:00Z' } });
  assert.is(price.status, 200);
  ws = connect(server.url, s.runner.token);
  await ws.next('welcome');
  // The runner answers orchestrator.start when it gets it (a budget that does not stop lets it through).
  ws.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type === 'command') ws.send({ type: 'result', requestId: f.requestId, ok: true, data: { started: true } });
  });
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

test('a project admin sets the budget (audited); a viewer may read it but not set it', async () => {
  const set = await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: 10, action: 'warn' }, token: padmin.token });
  assert.is(set.status, 200, JSON.stringify(set.body));
  assert.equal([set.body.budgetUsd, set.body.action, set.body.monthToDateUsd, set.body.exceeded, set.body.stopped, set.body.notices], [10, 'warn', 0, false, false, []]);
  assert.match(set.body.month, /^\d{4}-\d{2}$/);
  const read = await call(`/api/projects/${projectId}/budget`, { token: viewer.token });
  assert.is(read.status, 200);
  assert.is(read.body.budgetUsd, 10);
  assert.is((await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: 1, action: 'stop' }, token: viewer.token })).status, 403);
  const bad = await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: -1, action: 'pause' }, token: padmin.token });
  assert.is(bad.status, 400);
  assert.equal(Object.keys(bad.body.error.fields).sort(), ['action', 'budgetUsd']);
  const audit = await call(`/api/audit?action=project.budget_set&targetId=${projectId}`);
  assert.is(audit.body.records.length, 1);
  assert.equal(audit.body.records[0].diff, { before: { budgetUsd: null, action: 'warn' }, after: { budgetUsd: 10, action: 'warn' } });
  assert.is((await call(`/api/projects/${projectId}`)).body.budgetUsd, 10, 'the project shows it too');
});

test('80 % and 100 %: one notification each per month to the project admins, whatever is re-sent; an activity item each', async () => {
  await send([spend(7.5)]);
  assert.equal(await budgetNotices(padmin.token), [], 'below 80 %: nothing');
  const first = spend(0.6); // 8.10 → 81 %
  await send([first]);
  await send([first]); // re-sent: nothing new
  let mine = await budgetNotices(padmin.token);
  assert.equal(mine.map((x) => x.data.threshold), [80]);
  assert.is(mine[0].data.projectId, projectId);
  await send([spend(0.5)]); // 8.60: still 80 % only
  assert.is((await budgetNotices(padmin.token)).length, 1);
  await send([spend(2)]); // 10.60 → 106 %
  await send([spend(1)]); // further spend: no third notice
  mine = await budgetNotices(padmin.token);
  assert.equal(mine.map((x) => x.data.threshold), [100, 80]);
  assert.equal([mine[0].data.action, mine[0].data.stopped, mine[0].data.budgetUsd], ['warn', false, 10]);
  assert.equal(await budgetNotices(viewer.token), [], 'a viewer is not told');
  assert.is((await budgetNotices()).length, 2, 'instance admins see them');
  const state = (await call(`/api/projects/${projectId}/budget`, { token: viewer.token })).body;
  assert.ok(Math.abs(state.monthToDateUsd - 11.6) < 1e-9, String(state.monthToDateUsd));
  assert.equal([state.exceeded, state.stopped, state.notices.map((x: { threshold: number }) => x.threshold)], [true, false, [80, 100]]);
  const activity = (await call(`/api/activity?projectId=${projectId}&kind=budget.threshold`, { token: viewer.token })).body.items;
  assert.equal(activity.map((a: { data: { threshold: number } }) => a.data.threshold), [100, 80]);
  // Lowering and raising the budget within the month: each threshold was told already this month.
  await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: 5, action: 'warn' }, token: padmin.token });
  assert.is((await budgetNotices()).length, 2);
});

test('warn never stops; stop at 100 %: a trigger delivery is skipped budget_exceeded and orchestrator.start is refused', async () => {
  const trigger = await createTrigger(server, projectId, { name: 'next', action: 'next_round' });
  // Over budget with action warn: orchestrator.start goes through to the runner.
  const warn = await call(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name: 'orchestrator.start', args: {} }, token: padmin.token });
  assert.is(warn.status, 200, JSON.stringify(warn.body));

  const stop = await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: 10, action: 'stop' }, token: padmin.token });
  assert.equal([stop.body.exceeded, stop.body.stopped], [true, true]);
  const accepted = await post(trigger.url, trigger.secret, { ref: 'main' });
  assert.is(accepted.status, 202);
  const d = await waitFor('the delivery decided', async () => (await deliveries(server, projectId, trigger.id)).find((x) => x.deliveryId === accepted.body.deliveryId && x.status !== 'accepted'));
  assert.equal([d.status, d.reason], ['skipped', 'budget_exceeded']);
  for (const path of [`/api/projects/${projectId}/commands`, `/api/runners/${runnerId}/commands`]) {
    const refused = await call(path, { method: 'POST', json: { name: 'orchestrator.start', args: { projectId, next: true } }, token: padmin.token });
    assert.is(refused.status, 409, path);
    assert.is(refused.body.error.code, 'budget_exceeded');
  }
  // Stopping still works; a higher budget lets the next round start again.
  assert.is((await call(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name: 'orchestrator.stop', args: {} }, token: padmin.token })).status, 200);
  const raised = await call(`/api/projects/${projectId}/budget`, { method: 'PUT', json: { budgetUsd: 100, action: 'stop' }, token: padmin.token });
  assert.equal([raised.body.exceeded, raised.body.stopped], [false, false]);
  assert.is((await call(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name: 'orchestrator.start', args: {} }, token: padmin.token })).status, 200);
  const again = await post(trigger.url, trigger.secret, { ref: 'main' });
  const fired = await waitFor('the delivery fired', async () => (await deliveries(server, projectId, trigger.id)).find((x) => x.deliveryId === again.body.deliveryId && x.status !== 'accepted' && x.status !== 'firing'));
  assert.is(fired.status, 'fired');
});

test.run();
