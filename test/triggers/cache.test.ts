// The hook's cache of enabled triggers (functions/triggers/cache.ts): a disabled, deleted, rotated or
// edited trigger is refused (or rendered anew) AT ONCE by another process, even when that process never
// hears of the change — the notification is switched off here, so only the version check in the record
// statement stands between a stale entry and an acceptance. And with notifications on, another process
// takes up a rotated secret well within the cache's TTL.
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TriggerCache } from '../../functions/triggers/cache.ts';
import type { CachedTrigger } from '../../functions/triggers/cache.ts';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { KEY, createTrigger, deliveries, makeProject, post, skillTrigger } from './_harness.ts';

const entry = (id: string, enabled = true) => ({ row: { id, enabled } as CachedTrigger['row'], version: '1', secrets: null }) as CachedTrigger;

test('cache: keeps enabled triggers only, until the TTL, and drops a load that raced with an invalidation', () => {
  let now = 1000;
  const c = new TriggerCache(500, 2, () => now);
  c.set('h1', entry('t1', false), c.mark());
  assert.is(c.get('h1'), undefined, 'a disabled trigger is never cached');
  c.set('h1', entry('t1'), c.mark());
  assert.is(c.get('h1')?.row.id, 't1');
  now += 500;
  assert.is(c.get('h1'), undefined, 'expired at the TTL');
  const mark = c.mark();
  c.invalidate('t9');
  c.set('h2', entry('t2'), mark);
  assert.is(c.get('h2'), undefined, 'read before an invalidation: not kept');
  c.set('h2', entry('t2'), c.mark());
  c.set('h3', entry('t3'), c.mark());
  c.set('h4', entry('t4'), c.mark());
  assert.is(c.size, 2, 'bounded');
  assert.is(c.get('h2'), undefined, 'the oldest went first');
  c.invalidate('t3');
  assert.is(c.get('h3'), undefined);
  assert.is(c.get('h4')?.row.id, 't4');
  c.invalidate();
  assert.is(c.size, 0, 'invalidate() drops everything');
});

onlyOn('postgres', test, 2, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let a: RunningServer;
  let b: RunningServer;
  let sql: postgres.Sql;
  let projectId = '';
  const env = { APP_ENCRYPTION_KEY: KEY };

  test.before(async () => {
    pg = await freshPostgres();
    a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ env, dbEnv: { DATABASE_URL: pg.url } });
    sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    // A runner that never connects: deliveries are accepted, then fail runner_offline.
    const runner = (await a.api('/api/runners', { method: 'POST', json: { name: 'never' } }).then((r) => r.json())).runner.id;
    projectId = await makeProject(a, runner);
  });
  test.after(async () => {
    await sql?.end();
    await Promise.all([a, b].map((s) => s?.cleanup()));
    await pg?.drop();
  });

  const onB = (url: string) => b.url + new URL(url).pathname;
  const admin = (path: string, init: { method: string; json?: unknown }) => callAs(a, `/api/projects/${projectId}/triggers/${path}`, init);

  test('a change made on one process, never announced: the other refuses at once (disabled, rotated, deleted) and renders an edit anew', async () => {
    const t = await createTrigger(a, projectId, skillTrigger());
    assert.is((await post(onB(t.url), t.secret, { ref: 'main' })).status, 202, 'B has read the trigger (and cached it)');
    await sql`alter table triggers disable trigger triggers_changed`;
    try {
      assert.is((await admin(`${t.id}/disable`, { method: 'POST' })).status, 200);
      const refused = randomUUID();
      assert.is((await post(onB(t.url), t.secret, { ref: 'main' }, { delivery: refused })).status, 404, 'disabled on A → 404 on B');
      assert.not.ok((await deliveries(a, projectId, t.id)).some((d) => d.deliveryId === refused), 'nothing recorded');

      assert.is((await admin(`${t.id}/enable`, { method: 'POST' })).status, 200);
      assert.is((await post(onB(t.url), t.secret, { ref: 'main' })).status, 202, 'enabled again');

      const first = await admin(`${t.id}/rotate`, { method: 'POST' });
      const second = await admin(`${t.id}/rotate`, { method: 'POST' });
      assert.is(second.status, 200);
      assert.is((await post(onB(t.url), t.secret, { ref: 'main' })).status, 401, 'the original secret, dropped by the second rotation → 401 on B');
      assert.is((await post(onB(t.url), first.body.secret, { ref: 'main' })).status, 202, 'the previous one verifies within its 24 h');
      assert.is((await post(onB(t.url), second.body.secret, { ref: 'main' })).status, 202, 'the new one verifies');

      assert.is((await admin(t.id, { method: 'PATCH', json: { args: ['--branch', '{{payload.ref}}'] } })).status, 200);
      const edited = randomUUID();
      assert.is((await post(onB(t.url), second.body.secret, { ref: 'dev' }, { delivery: edited })).status, 202);
      const row = (await deliveries(a, projectId, t.id)).find((d) => d.deliveryId === edited);
      assert.equal(row?.args, ['--branch', 'dev'], 'rendered with the edited template');

      assert.is((await admin(t.id, { method: 'DELETE' })).status, 204);
      assert.is((await post(onB(t.url), second.body.secret, { ref: 'main' })).status, 404, 'deleted on A → 404 on B');
    } finally {
      await sql`alter table triggers enable trigger triggers_changed`;
    }
  });

  test('announced: a secret rotated on one process verifies on the other well within the cache TTL', async () => {
    const t = await createTrigger(a, projectId, skillTrigger());
    assert.is((await post(onB(t.url), t.secret, { ref: 'main' })).status, 202);
    const rotated = await admin(`${t.id}/rotate`, { method: 'POST' });
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 5000 && status !== 202) {
      status = (await post(onB(t.url), rotated.body.secret, { ref: 'main' })).status;
      if (status !== 202) await new Promise((r) => setTimeout(r, 50));
    }
    assert.is(status, 202, 'the new secret verifies on B within 5 s (the TTL is 10 s)');
  });
});

test.run();
