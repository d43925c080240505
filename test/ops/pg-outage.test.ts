// PostgreSQL stopped (`-m immediate`, as in a crash, and `-m fast`) in the middle of traffic on two
// replicas (issue #33, item 2; docs/operations.md "When PostgreSQL goes away"): API reads and signed
// trigger calls on both replicas, and a runner on B sending events and answering commands. A private
// cluster of this test's own (test/helpers/pgcluster.ts), never the shared server.
// While the database is down every request is answered within a few seconds (most 503; before the fix
// each replica held a request for 6–17 s); once it is back both replicas answer 200 within seconds
// (printed). And what waited on a notification lost meanwhile does not wait for a timeout: a trigger
// delivery and an API command (through A, to the runner held by B) whose runner answers only after the
// restart finish at once, no delivery is left `firing`, every accepted call and acked event is stored.
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signTrigger } from '../../docs/examples/sign-trigger.ts';
import { onlyOn } from '../helpers/db.ts';
import { PG_BIN, privateCluster } from '../helpers/pgcluster.ts';
import type { PrivateCluster } from '../helpers/pgcluster.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { waitUntil } from '../runner/_harness.ts';
import { KEY, createTrigger, makeProject } from '../triggers/_harness.ts';
import type { Made } from '../triggers/_harness.ts';

/** Every request must be answered within this (the issue asks 1 s; generous for a loaded machine). */
const ANSWER_MS = 3_000;
/** Both replicas answer 200 again within this of PostgreSQL accepting connections (the issue asks 2 s). */
const BACK_MS = 5_000;
/** How long the database stays down: the length of the fault, not a wait for a condition. */
const DOWN_MS = 3_000;

interface Answered {
  at: number;
  ms: number;
  status: number;
  server: 'A' | 'B';
}

/**
 * The runner held by B, as the protocol client of test/helpers/wsclient.ts: answers every command (held
 * back while `hold` is set, to answer only after the restart), and sends one event every 100 ms, sending
 * again every event not acked within a second (what the real runner's spool does).
 */
function fakeRunner(url: string, token: string) {
  const c: Client = connect(url, token);
  const held: unknown[] = [];
  const events = new Map<string, { sentAt: number; event: Record<string, unknown> }>();
  const acked = new Set<string>();
  let hold = false;
  let sending = true;
  let n = 0;
  c.ws.on('message', (data) => {
    const f = JSON.parse(data.toString());
    if (f.type === 'command') {
      const result = { type: 'result', requestId: f.requestId, ok: true, data: {} };
      if (hold) held.push(result);
      else c.send(result);
    }
    if (f.type === 'ack') for (const id of f.ids) (acked.add(id), events.delete(id));
  });
  const timer = setInterval(() => {
    if (c.ws.readyState !== c.ws.OPEN) return;
    if (sending) {
      const id = `ev-${n++}`;
      events.set(id, { sentAt: 0, event: { id, source: 'test', kind: 'runner.test', ts: new Date().toISOString(), payload: { n } } });
    }
    const due = [...events.values()].filter((e) => Date.now() - e.sentAt > 1000).slice(0, 50);
    if (!due.length) return;
    for (const e of due) e.sentAt = Date.now();
    c.send({ type: 'events', events: due.map((e) => e.event) });
  }, 100);
  return {
    c,
    held,
    acked,
    sent: () => n,
    unacked: () => events.size,
    hold: () => (hold = true),
    release: () => {
      hold = false;
      for (const r of held.splice(0)) c.send(r);
    },
    /** Stop making new events (what is not acked yet is still sent again). */
    pause: () => (sending = false),
    resume: () => (sending = true),
    close: () => (clearInterval(timer), c.ws.close()),
  };
}

onlyOn('postgres', test, 2, () => {
  let pg: PrivateCluster;
  let a: RunningServer;
  let b: RunningServer;
  let db: postgres.Sql;
  let runner: ReturnType<typeof fakeRunner>;
  let runnerId = '';
  let trigger: Made;

  test.before(async () => {
    assert.ok(PG_BIN, 'PostgreSQL server binaries (initdb, pg_ctl) are installed');
    pg = await privateCluster();
    const env = { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', TRIGGER_RATE_PER_HOUR: '1000000' };
    a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ env, dbEnv: { DATABASE_URL: pg.url } });
    const paired = await pairRunner(a.api, a.url, 'outage');
    runnerId = paired.runnerId;
    trigger = await createTrigger(a, await makeProject(a, runnerId), { name: 'round', action: 'next_round' });
    runner = fakeRunner(b.url, paired.token);
    await runner.c.next('welcome');
    db = postgres(pg.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  });
  test.after(async () => {
    runner?.close();
    await db?.end({ timeout: 1 }).catch(() => {});
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    pg?.remove();
  });

  /** Requests in a loop on one replica until stopped: each one's start, duration and status (0: no answer within 15 s). */
  function load(server: RunningServer, name: 'A' | 'B', request: (base: string) => Promise<Response>, out: Answered[], every: number, accepted?: string[]) {
    let running = true;
    const done = (async () => {
      while (running) {
        const at = Date.now();
        const status = await request(server.url).then(
          async (r) => {
            if (r.status === 202 && accepted) accepted.push((await r.json()).deliveryId);
            else await r.arrayBuffer();
            return r.status;
          },
          () => 0,
        );
        out.push({ at, ms: Date.now() - at, status, server: name });
        await new Promise((r) => setTimeout(r, every));
      }
    })();
    return async () => ((running = false), await done);
  }

  const read = (base: string) => fetch(`${base}/api/runners`, { headers: { authorization: `Bearer ${a.admin.token}` }, signal: AbortSignal.timeout(15_000) });
  const call = (base: string) => {
    const body = JSON.stringify({ ref: 'main' });
    const delivery = `call-${randomUUID()}`;
    return fetch(base + new URL(trigger.url).pathname, { method: 'POST', headers: { 'content-type': 'application/json', ...signTrigger(trigger.secret, body, { delivery }) }, body, signal: AbortSignal.timeout(15_000) });
  };

  async function outage(mode: 'immediate' | 'fast') {
    runner.resume();
    const reads: Answered[] = [];
    const calls: Answered[] = [];
    const accepted: string[] = [];
    const stops = [
      load(a, 'A', read, reads, 50),
      load(b, 'B', read, reads, 50),
      load(a, 'A', call, calls, 100, accepted),
      load(b, 'B', call, calls, 100, accepted),
    ];
    await waitUntil(() => reads.filter((r) => r.status === 200).length >= 10 && calls.filter((c) => c.status === 202).length >= 4, 30_000, 'traffic under way');

    // In flight at the stop: a trigger delivery and an API command through A, both waiting on the runner
    // held by B, which answers only once the database is back.
    const firstHeld = runner.held.length;
    runner.hold();
    await waitUntil(() => runner.held.length > firstHeld, 30_000, 'a trigger delivery waiting on the runner').catch(async (err) => {
      const states = await db`select status, reason, count(*)::int as n from inbound_deliveries where trigger_id = ${trigger.id} group by 1, 2`;
      throw new Error(`${err.message}; runner socket state ${runner.c.ws.readyState}; deliveries ${JSON.stringify(states)}\n${a.output().slice(-3000)}\n${b.output().slice(-3000)}`);
    });
    const ping = fetch(`${a.url}/api/runners/${runnerId}/commands`, { method: 'POST', headers: { authorization: `Bearer ${a.admin.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'runner.ping', args: {} }) });
    const pingAnswered = ping.then(
      async (r) => ({ status: r.status, at: Date.now(), body: await r.text() }),
      (err: Error) => ({ status: 0, at: Date.now(), body: `${err.message}; A exited ${a.proc.exitCode}: ${a.output().slice(-3000)}` }),
    );
    await waitUntil(() => runner.held.length > firstHeld + 1, 30_000, 'the API command waiting on the runner');

    await pg.stop(mode);
    const downAt = Date.now();
    while (Date.now() - downAt < DOWN_MS) await new Promise((r) => setTimeout(r, 100));
    const startAt = Date.now();
    await pg.start();
    const upAt = Date.now();
    runner.release();
    for (const [name, s] of [['A', a], ['B', b]] as const) assert.is(s.proc.exitCode, null, `replica ${name} is still running: ${s.output().slice(-2000)}`);

    // Back: the first moment from which every read of each replica succeeds.
    const backOf = (s: 'A' | 'B') => {
      const mine = reads.filter((r) => r.server === s && r.at >= upAt);
      const lastBad = mine.findLastIndex((r) => r.status !== 200);
      return lastBad + 1 < mine.length ? mine[lastBad + 1].at + mine[lastBad + 1].ms : undefined;
    };
    await waitUntil(() => backOf('A') !== undefined && backOf('B') !== undefined && Date.now() - Math.max(backOf('A')!, backOf('B')!) > 1000, 30_000, 'both replicas answering 200 again for a second').catch((err) => {
      throw new Error(`${err.message}: ${JSON.stringify(reads.slice(-6))}\n${a.output().slice(-4000)}\n${b.output().slice(-4000)}`);
    });
    await Promise.all(stops.map((s) => s()));
    const backMs = Math.max(backOf('A')!, backOf('B')!) - upAt;

    const down = [...reads, ...calls].filter((r) => r.at >= downAt && r.at + r.ms <= startAt);
    const all = [...reads, ...calls];
    const slowest = Math.max(...all.map((r) => r.ms));
    const share503 = down.filter((r) => r.status === 503).length / down.length;
    const pingResult = await pingAnswered;
    console.log(
      `  -m ${mode}: ${all.length} requests; while down ${down.length}, ${Math.round(share503 * 100)}% 503, slowest answer ${slowest} ms; ` +
        `PostgreSQL ready ${upAt - startAt} ms after pg_ctl start; both replicas 200 again ${backMs} ms after that; the held API command answered ${pingResult.at - upAt} ms after`,
    );

    assert.is(all.filter((r) => r.status === 0).length, 0, 'every request got an answer');
    assert.ok(slowest < ANSWER_MS, `every request answered within ${ANSWER_MS} ms; slowest ${slowest} ms: ${JSON.stringify(all.filter((r) => r.ms >= ANSWER_MS).slice(0, 5))}`);
    assert.ok(down.length >= 10 && share503 >= 0.8, `most requests while down answered 503: ${down.length} requests, statuses ${[...new Set(down.map((r) => r.status))].join(',')}`);
    assert.ok(backMs < BACK_MS, `both replicas answer 200 again ${backMs} ms after PostgreSQL is back`);
    // The command through A to the runner held by B: its answer's NOTIFY may have been missed while A's
    // LISTEN connection came back; A finds it in the row instead of waiting for the 30 s timeout.
    assert.is(pingResult.status, 200, pingResult.body);
    assert.ok(pingResult.at - upAt < BACK_MS, `the held command answered ${pingResult.at - upAt} ms after PostgreSQL is back`);

    // Every accepted call has its delivery, and none is left accepted or firing.
    await waitUntil(
      async () => (await db`select count(*)::int as n from inbound_deliveries where trigger_id = ${trigger.id} and status in ('accepted', 'firing')`)[0].n === 0,
      BACK_MS * 2,
      'no delivery left accepted or firing',
    );
    const stored = await db`select delivery_id, status, reason from inbound_deliveries where trigger_id = ${trigger.id} and delivery_id = any(${accepted})`;
    assert.is(stored.length, accepted.length, `every accepted call stored (${accepted.length})`);
    assert.is(stored.filter((d) => d.reason === 'command_timeout').length, 0, 'no delivery waited for the command timeout');

    // Every event the runner sent is acked once the database is back, and stored once.
    runner.pause();
    await waitUntil(() => runner.unacked() === 0, 30_000, () => `every event acked (${runner.unacked()} not yet)`);
    const [{ n }] = await db`select count(*)::int as n from runner_events where runner_id = ${runnerId} and kind = 'runner.test'`;
    assert.is(n, runner.sent(), 'every event stored once');
    assert.not.match(a.output() + b.output(), /unhandled error/);
  }

  test('PostgreSQL stopped -m immediate mid-traffic: 503 at once, both replicas back within seconds, nothing lost, nothing left firing', async () => {
    await outage('immediate');
  });

  test('PostgreSQL stopped -m fast mid-traffic: the same', async () => {
    await outage('fast');
  });
});

test.run();
