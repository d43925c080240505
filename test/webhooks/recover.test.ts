// Recovering failed deliveries (issue #39 part 2; functions/webhooks/recover.ts) in-process on PGlite
// and PostgreSQL, with the real worker, a real receiver on loopback that fails then succeeds, and an
// injected clock: exactly the failed ones since the time, their original delivery ids and valid
// signatures, the attempts numbered on, a second recovery queues nothing, two at once queue each once,
// and deliveries failed around an open circuit come back once it closes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { recoverFailed, recoverStatement } from '../../functions/webhooks/recover.ts';
import { explainAnalyze, rowsTouched } from '../helpers/explain.ts';
import { resumeCircuit } from '../../functions/webhooks/webhooks.ts';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { TEST_DB } from '../helpers/db.ts';
import { addProject, addWebhook, attempts, deliveries, emit, fakeClock, migratedDb, receiver, setAllowlist, sleep, worker } from './_harness.ts';
import type { Receiver } from './_harness.ts';

let db: Db;
let cleanup: () => Promise<void>;
let rx: Receiver;
let project: string;
test.before(async () => {
  ({ db, cleanup } = await migratedDb());
  rx = await receiver();
  await setAllowlist(db, ['127.0.0.1/32']);
  project = await addProject(db);
});
test.after(async () => {
  await rx?.close();
  await cleanup?.();
});
const failing = () => rx.handle((_req, res) => res.writeHead(503).end('down'));
const working = () => rx.handle((_req, res) => res.end('ok'));
test.before.each(() => {
  rx.requests.length = 0;
  working();
});

const HOUR = 3600_000;
/** Deliveries of `hookId` made from `n` new events, each allowed one attempt, so one failure ends it. */
async function oneShotDeliveries(hookId: string, type: string, n: number, w: ReturnType<typeof worker>): Promise<void> {
  for (let i = 0; i < n; i++) await emit(db, type, project);
  await w.dispatch();
  await db.query(sql`update outbound_deliveries set attempts_allowed = 1 where webhook_id = ${hookId} and status = 'pending'`);
}
const statuses = async (hookId: string) => (await deliveries(db, hookId)).map((d) => d.status);

test('recover queues exactly the deliveries that ended failed since the time; the receiver gets each with its original id, the same body and a valid signature', async () => {
  const clock = fakeClock();
  const w = worker(db, { clock });
  const hook = await addWebhook(db, { url: `${rx.url}/a`, events: ['pr.merged'] });
  const other = await addWebhook(db, { url: `${rx.url}/other`, events: ['pr.merged'] });
  failing();
  await oneShotDeliveries(hook.id, 'pr.merged', 3, w);
  await db.query(sql`update outbound_deliveries set attempts_allowed = 1 where webhook_id = ${other.id}`);
  await w.tick();
  assert.equal(await statuses(hook.id), ['failed', 'failed', 'failed']);
  const first = new Map(rx.requests.filter((r) => r.url === '/a').map((r) => [String(r.headers['x-svc-delivery']), r.body]));
  assert.is(first.size, 3);
  const [old, ...recent] = await deliveries(db, hook.id);
  await db.query(sql`update outbound_deliveries set updated_at = now() - interval '2 days' where id = ${old.id}`); // ended before `since`

  const since = new Date(Date.now() - HOUR);
  const ids = await recoverFailed(db, hook.id, since, new Date(clock.now()));
  assert.equal(ids.sort(), recent.map((d) => d.id).sort(), 'the two that failed since, not the older one nor the other webhook’s');
  assert.equal(await statuses(hook.id), ['failed', 'pending', 'pending']);
  assert.equal(await statuses(other.id), ['failed', 'failed', 'failed']);

  rx.requests.length = 0;
  working();
  await w.tick();
  const got = rx.requests.filter((r) => r.url === '/a');
  assert.equal(got.map((r) => String(r.headers['x-svc-delivery'])).sort(), ids.sort(), 'the original delivery ids');
  for (const r of got) {
    assert.is(r.body, first.get(String(r.headers['x-svc-delivery'])), 'the same envelope, byte for byte');
    assert.ok(verifyWebhook(r.body, r.headers['x-svc-signature'] as string, hook.secret, { now: Math.floor(clock.now() / 1000) }).ok);
  }
  assert.is(rx.requests.length, 2, 'nothing else was sent');
  assert.equal(await statuses(hook.id), ['failed', 'delivered', 'delivered']);
  const log = await attempts(db, recent[0].id);
  assert.equal(log.map((a) => [a.attempt, a.outcome]), [[1, 'failure'], [2, 'success']], 'each attempt its own row, numbered on');

  assert.equal(await recoverFailed(db, hook.id, since, new Date(clock.now())), [], 'recovering again queues nothing');
});

test('a recovered delivery gets a new series: retries restart at 30 s, and once it failed again it can be recovered again', async () => {
  const clock = fakeClock();
  const w = worker(db, { clock });
  const hook = await addWebhook(db, { url: `${rx.url}/series`, events: ['pr.opened'] });
  failing();
  await oneShotDeliveries(hook.id, 'pr.opened', 1, w);
  await w.tick();
  const since = new Date(Date.now() - HOUR);
  const [id] = await recoverFailed(db, hook.id, since, new Date(clock.now()));
  await w.tick();
  const [d] = await deliveries(db, hook.id);
  const row = (await db.query<{ attempts_allowed: number }>(sql`select attempts_allowed from outbound_deliveries where id = ${id}`))[0];
  assert.equal([d.status, d.attempts, row.attempts_allowed], ['pending', 2, 9]);
  assert.is(new Date(d.next_attempt_at!).getTime() - clock.now(), 30_000, 'the first retry of the series, not the 2nd attempt’s of the first');
  assert.equal(await recoverFailed(db, hook.id, since, new Date(clock.now())), [], 'pending: not queued twice');
  await db.query(sql`update outbound_deliveries set status = 'failed', next_attempt_at = null where id = ${id}`); // the series ran out
  assert.equal(await recoverFailed(db, hook.id, since, new Date(clock.now())), [id], 'failed again: recovered again');
});

test('two recoveries at once queue each delivery once', async () => {
  const clock = fakeClock();
  const w = worker(db, { clock });
  const hook = await addWebhook(db, { url: `${rx.url}/race`, events: ['slot.stopped'] });
  failing();
  await oneShotDeliveries(hook.id, 'slot.stopped', 8, w);
  await w.tick();
  const since = new Date(Date.now() - HOUR);
  const now = new Date(clock.now());
  let both: string[][];
  if (TEST_DB === 'postgres') {
    // The first holds its row locks until the second is seen waiting for them, then commits.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let taken!: () => void;
    const locked = new Promise<void>((r) => (taken = r));
    const first = db.transaction(async (tx) => {
      const ids = await recoverFailed(tx, hook.id, since, now);
      taken();
      await held;
      return ids;
    });
    await locked;
    const second = recoverFailed(db, hook.id, since, now);
    for (let i = 0; ; i++) {
      const [waiting] = await db.query<{ n: number }>(sql`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%outbound_deliveries%'`);
      if (waiting.n > 0) break;
      if (i > 400) throw new Error('the second recovery never waited for the first');
      await sleep(25);
    }
    release();
    both = await Promise.all([first, second]);
  } else {
    both = await Promise.all([recoverFailed(db, hook.id, since, now), recoverFailed(db, hook.id, since, now)]);
  }
  const all = both.flat();
  assert.is(all.length, 8, `queued ${both.map((b) => b.length).join(' + ')}`);
  assert.is(new Set(all).size, 8);
  assert.equal(both.map((b) => b.length).sort(), [0, 8]);
});

test('deliveries failed while the circuit opened come back with their ids once it closes; those it held pending were never skipped', async () => {
  const clock = fakeClock();
  const w = worker(db, { clock });
  const hook = await addWebhook(db, { url: `${rx.url}/circuit`, events: ['pane.quota_hit'] });
  failing();
  await oneShotDeliveries(hook.id, 'pane.quota_hit', 12, w);
  await w.tick();
  const circuit = async () => (await db.query<{ circuit_state: string }>(sql`select circuit_state from webhooks where id = ${hook.id}`))[0].circuit_state;
  assert.is(await circuit(), 'open');
  const failedIds = (await deliveries(db, hook.id)).map((d) => d.id);
  for (let i = 0; i < 2; i++) await emit(db, 'pane.quota_hit', project); // while open: held pending
  await w.tick();
  assert.equal((await statuses(hook.id)).filter((s) => s === 'pending').length, 2);

  rx.requests.length = 0;
  working();
  const ids = await recoverFailed(db, hook.id, new Date(Date.now() - HOUR), new Date(clock.now()));
  assert.equal(ids.sort(), [...failedIds].sort(), 'the 12 failed ones; the held ones are still queued');
  await w.tick();
  assert.is(rx.requests.length, 0, 'recovered deliveries wait behind the open circuit like the rest');
  await resumeCircuit(db, hook.id);
  await w.tick();
  const got = rx.requests.map((r) => String(r.headers['x-svc-delivery']));
  assert.is(got.length, 14);
  for (const id of failedIds) assert.ok(got.includes(id), `recovered ${id} sent with its original id`);
  assert.ok((await statuses(hook.id)).every((s) => s === 'delivered'));
});

test('recover reads the webhook’s failed deliveries only, not its delivered history (sql/0035)', async () => {
  const hook = await addWebhook(db, { url: `${rx.url}/busy`, events: ['pr.merged'] });
  await db.query(sql`
    insert into outbound_deliveries (id, webhook_id, event_id, event_type, body, status, attempts, delivered_at)
    select 'busy-' || i, ${hook.id}, 'busy-evt-' || i, 'pr.merged', '{}', case when i % 5000 = 0 then 'failed' else 'delivered' end, 1, now()
      from generate_series(1, 20000) i`);
  await db.query(sql`analyze outbound_deliveries`);
  const touched = rowsTouched(await explainAnalyze(db, recoverStatement(hook.id, new Date(Date.now() - HOUR), new Date())));
  assert.ok(touched < 100, `rows read: ${touched} (4 failed among 20,000)`);
  assert.is((await recoverFailed(db, hook.id, new Date(Date.now() - HOUR), new Date())).length, 4);
});

test.run();
