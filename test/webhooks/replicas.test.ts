// Two real server processes on one PostgreSQL deliver together: every delivery attempted once, never
// twice at once; a process killed mid-attempt leaves a lease that expires, the other retries, and the
// dead attempt is counted once (as `lease_expired`); a process stopped with SIGTERM hands its attempt
// over at once.
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildEnvelope, eventId } from '../../functions/webhooks/envelope.ts';
import { DEFAULT_CONCURRENCY } from '../../functions/webhooks/worker.ts';
import { TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { receiver, sleep } from './_harness.ts';
import type { Receiver } from './_harness.ts';

onlyOn('postgres', test, 3, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let a: RunningServer;
  let b: RunningServer;
  let db: postgres.Sql;
  let rx: Receiver;
  const env = { APP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), WEBHOOKS_LEASE_SECONDS: '15', SHUTDOWN_TIMEOUT_SECONDS: '2' };

  test.before(async () => {
    pg = await freshPostgres();
    a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ env, dbEnv: { DATABASE_URL: pg.url } });
    live = [a, b];
    db = postgres(pg.url, { max: 2, onnotice: () => {} });
    rx = await receiver();
    const allow = await a.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } });
    assert.is(allow.status, 200);
  });
  test.after(async () => {
    await db?.end();
    await rx?.close();
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    await pg?.drop();
  });

  let live: RunningServer[] = [];
  /** The admin API on a process still alive (the admin's token works on every process). */
  const createWebhook = async (path: string, events: string[]) => {
    const res = await fetch(`${live[0].url}/api/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${rx.url}${path}`, events }),
    });
    assert.is(res.status, 201);
    return (await res.json()).id as string;
  };
  /** Catalogue events straight into the outbox, as the capture code writes them; then wake the workers. */
  const emit = async (type: string, n: number, projectId: string) => {
    const rows = Array.from({ length: n }, () => {
      const e = buildEnvelope({ id: eventId('replicas', randomUUID()), type: type as never, ts: new Date(), project: { id: projectId, repo: 'acme/r' }, raw: {} });
      return { id: e.id, type, project_id: projectId, body: JSON.stringify(e) };
    });
    await db`insert into webhook_outbox ${db(rows, 'id', 'type', 'project_id', 'body')}`;
    await db`select pg_notify('svc_webhooks', 'outbox')`;
  };

  /** One event whose first POST hangs (later ones succeed); resolves once its first attempt started. */
  const hangingFirstAttempt = async (path: string, type: string) => {
    const webhookId = await createWebhook(path, [type]);
    const state = { calls: 0 };
    rx.handle((_req, res) => {
      if (++state.calls === 1) return; // the first attempt hangs: its process is stopped while waiting
      res.end('second time lucky');
    });
    await emit(type, 1, `p${path.replace('/', '-')}`);
    for (let i = 0; i < 100; i++) {
      const [attempt] = await db`select a.delivery_id, a.owner from outbound_attempts a join outbound_deliveries d on d.id = a.delivery_id where d.webhook_id = ${webhookId}`;
      if (attempt) return { state, deliveryId: attempt.delivery_id as string, ownerPid: Number(String(attempt.owner).split('-')[0]) };
      await sleep(50);
    }
    throw new Error('no attempt started');
  };
  const deliveredRow = async (deliveryId: string) => {
    let d;
    for (let i = 0; i < 300; i++) {
      [d] = await db`select status, attempts from outbound_deliveries where id = ${deliveryId}`;
      if (d.status === 'delivered') break;
      await sleep(100);
    }
    return d!;
  };
  const attemptLog = (deliveryId: string) => db`select attempt, owner, outcome, error from outbound_attempts where delivery_id = ${deliveryId} order by attempt`;

  test('2 processes, 300 deliveries: each attempted exactly once, never twice at once, by both processes', async () => {
    const webhookId = await createWebhook('/many', ['pr.merged']);
    const inFlight = new Set<string>();
    const seen = new Map<string, number>();
    let overlaps = 0;
    // The first answers wait until more attempts are in flight at once than one process makes
    // (DEFAULT_CONCURRENCY): then the other process is delivering too, however late it woke. Without this
    // a process that woke first could deliver all 300 before the other looked (seen on a loaded machine).
    // After 8 s (within the 10 s attempt timeout) they are answered anyway, and the last check says so.
    const held: (() => void)[] = [];
    let holding = true;
    const release = () => {
      holding = false;
      for (const answer of held.splice(0)) answer();
    };
    const fallback = setTimeout(release, 8_000);
    rx.handle((req, res) => {
      const id = String(req.headers['x-svc-delivery']);
      if (inFlight.has(id)) overlaps++;
      inFlight.add(id);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      const answer = () => setTimeout(() => (inFlight.delete(id), res.end('ok')), 15);
      if (!holding) return answer();
      held.push(answer);
      if (inFlight.size > DEFAULT_CONCURRENCY) release();
    });
    await emit('pr.merged', 300, 'p-many');
    for (let i = 0; i < 400; i++) {
      const [{ done }] = await db`select count(*)::int as done from outbound_deliveries where webhook_id = ${webhookId} and status = 'delivered'`;
      if (done === 300) break;
      await sleep(50);
    }
    clearTimeout(fallback);
    const rows = await db`select status, attempts from outbound_deliveries where webhook_id = ${webhookId}`;
    assert.is(rows.length, 300, 'one delivery per event');
    assert.ok(rows.every((r) => r.status === 'delivered' && r.attempts === 1));
    assert.is(seen.size, 300);
    assert.ok([...seen.values()].every((n) => n === 1), 'no delivery was sent twice');
    assert.is(overlaps, 0, 'no delivery was in flight twice at once');
    const owners = await db`
      select split_part(a.owner, '-', 1) as pid, count(*)::int as n from outbound_attempts a
        join outbound_deliveries d on d.id = a.delivery_id where d.webhook_id = ${webhookId} group by 1`;
    assert.equal(owners.map((o) => Number(o.pid)).sort(), [a.proc.pid, b.proc.pid].sort(), `both processes delivered: ${JSON.stringify(owners)}`);
  });

  test('kill -9 of the process mid-attempt: the lease expires, the other retries; the dead attempt is counted once', async () => {
    const { state, deliveryId, ownerPid } = await hangingFirstAttempt('/kill', 'pr.closed');
    const holder = ownerPid === a.proc.pid ? a : b;
    const survivor = holder === a ? b : a;
    await sleep(200);
    assert.is(state.calls, 1);
    await holder.stop('SIGKILL');
    const killedAt = Date.now();
    const d = await deliveredRow(deliveryId);
    const waited = Date.now() - killedAt;
    assert.is(d.status, 'delivered');
    assert.is(d.attempts, 2, 'the dead attempt counts once, the retry once');
    assert.is(state.calls, 2);
    assert.ok(waited >= 10_000, `retried only after the lease (${waited} ms after the kill)`);
    const log = await attemptLog(deliveryId);
    assert.equal(log.map((l) => [l.attempt, l.outcome, l.error]), [[1, 'failure', 'lease_expired'], [2, 'success', null]]);
    assert.is(Number(String(log[1].owner).split('-')[0]), survivor.proc.pid);
    live = [survivor];
  });

  test('SIGTERM mid-attempt: the attempt is stopped after the grace period and another process retries at once', async () => {
    const c = await startServer({ env, dbEnv: { DATABASE_URL: pg.url } });
    live.push(c);
    const { state, deliveryId, ownerPid } = await hangingFirstAttempt('/term', 'pr.checks_changed');
    const holder = live.find((x) => x.proc.pid === ownerPid)!;
    const stoppedAt = Date.now();
    assert.is(await holder.stop('SIGTERM'), 0, 'a clean exit');
    const d = await deliveredRow(deliveryId);
    assert.equal([d.status, d.attempts, state.calls], ['delivered', 2, 2]);
    assert.ok(Date.now() - stoppedAt < 8000, 'well before the 15 s lease would have expired');
    const log = await attemptLog(deliveryId);
    assert.equal(log.map((l) => [l.attempt, l.outcome, l.error]), [[1, 'failure', 'aborted'], [2, 'success', null]]);
    await c.cleanup();
  });
});

test.run();
