// POST /api/webhooks/:webhookId/recover against the real server (dist/server.mjs): deliveries that
// really failed at a receiver on loopback (made before the server starts, by the worker in-process on
// the same database) are recovered through the API and reach the receiver again with their original
// delivery ids and valid signatures; the answer counts them, a second call answers 0, each call is
// audited; `since` is validated (400 naming it, nothing queued); instance admins only (403), 404 for a
// webhook that does not exist.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { receiver, sleep } from './_harness.ts';
import type { Receiver } from './_harness.ts';
import { preparedFailures } from './_recover.ts';
import type { Prepared } from './_recover.ts';

let server: RunningServer;
let rx: Receiver;
let prepared: Prepared;
let hook: Prepared['hook'];
const DAY = 24 * 3600_000;

test.before(async () => {
  rx = await receiver();
  prepared = await preparedFailures(rx);
  hook = prepared.hook;
  server = await startServer({ admin: true, dbEnv: prepared.env });
});
test.after(async () => {
  await rx?.close();
  await server?.cleanup();
  await prepared?.drop();
});

const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
const recover = (since: unknown, id = hook.id, token?: string) => call(`/api/webhooks/${id}/recover`, { method: 'POST', json: since === undefined ? {} : { since }, token });
const failedCount = async () => (await call(`/api/webhooks/${hook.id}/deliveries?status=failed`)).body.deliveries.length;
async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

test('since: missing, not a time, more than 14 days back or in the future → 400 naming since; nothing queued', async () => {
  const cases: unknown[] = [undefined, 'yesterday', 1_700_000_000, new Date(Date.now() - 15 * DAY).toISOString(), new Date(Date.now() + DAY).toISOString()];
  for (const since of cases) {
    const r = await recover(since);
    assert.is(r.status, 400, JSON.stringify(since));
    assert.ok(r.body.error.fields?.since, `fields.since for ${JSON.stringify(since)}: ${JSON.stringify(r.body)}`);
  }
  assert.is((await call(`/api/webhooks/${hook.id}/recover`, { method: 'POST', json: { since: new Date().toISOString(), extra: 1 } })).status, 400);
  assert.is(await failedCount(), 3);
});

test('rights: a user who is not an instance admin → 403; a webhook that does not exist → 404; nothing queued', async () => {
  const user = await makeUser(server, 'viewer');
  const since = new Date(Date.now() - DAY).toISOString();
  assert.is((await recover(since, hook.id, user.token)).status, 403);
  assert.is((await recover(since, '00000000-0000-0000-0000-000000000000')).status, 404);
  assert.is(await failedCount(), 3);
  assert.is((await call('/api/audit?action=webhook.recover')).body.records.length, 0, 'refused calls are not audited');
});

test('recover: the failed deliveries since the time are queued and reach the receiver with their original ids and valid signatures; audited', async () => {
  rx.requests.length = 0;
  rx.handle((_req, res) => res.end('thanks'));
  const since = new Date(Date.now() - DAY).toISOString();
  const r = await recover(since);
  assert.equal([r.status, r.body], [200, { queued: 2 }]);
  await until('both recovered deliveries', async () => rx.requests.length >= 2);
  const got = rx.requests.map((x) => String(x.headers['x-svc-delivery'])).sort();
  assert.equal(got, prepared.recentFailed, 'the original delivery ids');
  for (const x of rx.requests) {
    assert.is(x.body, prepared.firstSeries.get(String(x.headers['x-svc-delivery'])));
    assert.ok(verifyWebhook(x.body, x.headers['x-svc-signature'] as string, hook.secret).ok);
  }
  const log = await until('delivered', async () => {
    const d = (await call(`/api/webhooks/${hook.id}/deliveries`)).body.deliveries;
    return d.filter((x: { status: string }) => x.status === 'delivered').length === 3 && d;
  });
  assert.equal(log.filter((x: { status: string }) => x.status === 'failed').length, 1, 'the one that ended before since');
  const detail = await call(`/api/webhooks/${hook.id}/deliveries/${prepared.recentFailed[0]}`);
  assert.equal(detail.body.attemptLog.map((a: { attempt: number; outcome: string }) => [a.attempt, a.outcome]), [[1, 'failure'], [2, 'success']]);
  const [rec] = (await call('/api/audit?action=webhook.recover')).body.records;
  assert.equal([rec.targetType, rec.targetId, rec.diff], ['webhook', hook.id, { since: new Date(since).toISOString(), queued: 2 }]);
});

test('recover twice: the second answers 0 queued and sends nothing', async () => {
  rx.requests.length = 0;
  const r = await recover(new Date(Date.now() - DAY).toISOString());
  assert.equal([r.status, r.body], [200, { queued: 0 }]);
  const records = (await call('/api/audit?action=webhook.recover')).body.records;
  assert.equal([records.length, records[0].diff.queued], [2, 0]);
  await sleep(1500); // the worker polls every second: give it the chance to send something it should not
  assert.is(rx.requests.length, 0);
});

test.run();
