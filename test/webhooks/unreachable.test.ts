// Receivers whose name resolves to an address this machine cannot connect to at all (issue 11): the
// attempt fails before any packet leaves, and that must be the attempt's recorded failure — never an
// exception that ends the process. The worker runs in-process with an injected resolver and clock.
// The addresses fail locally on any Linux host, with or without routes: TCP to multicast is
// ENETUNREACH, link-local without an interface is EINVAL. (server-unreachable.test.ts does the same
// with the real server in a network namespace without routes and a name from /etc/hosts.)
// Also the process-level safety net (lib/safety-net.ts), with an error thrown from inside an attempt.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../functions/lib/log.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { containmentTracking, installSafetyNet, runContained, setContainLinger } from '../../functions/lib/safety-net.ts';
import type { Resolver } from '../../functions/webhooks/guard.ts';
import { createTestDelivery } from '../../functions/webhooks/webhooks.ts';
import { addWebhook, attempts, deliveries, fakeClock, migratedDb, receiver, setAllowlist, worker } from './_harness.ts';
import type { Receiver } from './_harness.ts';

const NAME = 'hooks.unreachable.test';
let db: Db;
let cleanup: () => Promise<void>;
let rx: Receiver;
test.before(async () => {
  ({ db, cleanup } = await migratedDb());
  rx = await receiver();
  await setAllowlist(db, [NAME, 'ff00::/8']);
});
test.after(async () => {
  await rx?.close();
  await cleanup?.();
});

/** A resolver that answers `address` for every name and records the names it was asked. */
function answering(address: string) {
  const asked: string[] = [];
  const resolve: Resolver = async (host) => (asked.push(host), [{ address, family: address.includes(':') ? 6 : 4 }]);
  return { asked, resolve };
}

const circuitOf = async (id: string) =>
  (await db.query<{ circuit_state: string; consecutive_failures: number }>(sql`select circuit_state, consecutive_failures from webhooks where id = ${id}`))[0];

/** Wait for a condition (the process keeps running meanwhile); fail after `ms`. */
async function until(what: string, ok: () => boolean, ms = 10_000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a name that resolves to an unreachable address: all 8 attempts are recorded connection failures, the delivery fails, the circuit counts 8', async () => {
  const clock = fakeClock();
  const { asked, resolve } = answering('ff02::1');
  const w = worker(db, { clock, resolve, concurrency: 1 });
  const hook = await addWebhook(db, { url: `http://${NAME}:8080/hook`, events: ['pr.opened'] });
  await createTestDelivery(db, hook.id, new Date(clock.now()));
  await w.tick();
  for (let attempt = 1; attempt < 8; attempt++) {
    const [d] = await deliveries(db, hook.id);
    assert.equal([d.status, d.attempts, d.last_error], ['pending', attempt, 'connection_error'], `after attempt ${attempt}`);
    clock.set(new Date(d.next_attempt_at!).getTime());
    await w.tick();
  }
  const [d] = await deliveries(db, hook.id);
  assert.equal([d.status, d.attempts, d.last_error, d.next_attempt_at], ['failed', 8, 'connection_error', null]);
  const rows = await attempts(db, d.id);
  assert.equal(rows.map((a) => a.attempt), [1, 2, 3, 4, 5, 6, 7, 8]);
  for (const a of rows) {
    assert.equal([a.outcome, a.error, a.address, a.response_code], ['failure', 'connection_error', 'ff02::1', null], `attempt ${a.attempt}`);
    assert.is(a.detail, 'cannot connect to ff02::1: no route to its network (ENETUNREACH)');
  }
  assert.is(asked.length, 8, 'one lookup per attempt');
  assert.equal(await circuitOf(hook.id), { circuit_state: 'closed', consecutive_failures: 8 }, 'every failure counted');
});

test('ten deliveries to an unreachable receiver open its circuit; the eleventh waits', async () => {
  const { resolve } = answering('224.0.0.1');
  await setAllowlist(db, [NAME, 'ff00::/8', '224.0.0.0/4']);
  const hook = await addWebhook(db, { url: `http://${NAME}:8080/circuit`, events: ['pr.opened'] });
  for (let i = 0; i < 11; i++) await createTestDelivery(db, hook.id, new Date());
  await worker(db, { resolve, concurrency: 1 }).tick();
  assert.equal(await circuitOf(hook.id), { circuit_state: 'open', consecutive_failures: 10 });
  const all = await deliveries(db, hook.id);
  assert.equal(all.map((d) => d.attempts).sort(), [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
  assert.ok(all.filter((d) => d.attempts).every((d) => d.last_error === 'connection_error'));
});

test('a link-local answer (EINVAL) and an unreachable literal are connection failures too', async () => {
  const linkLocal = await addWebhook(db, { url: `http://${NAME}:8080/ll`, events: ['pr.opened'] });
  await createTestDelivery(db, linkLocal.id, new Date());
  await setAllowlist(db, [NAME, 'ff00::/8', 'fe80::/10']);
  await worker(db, { resolve: answering('fe80::1').resolve }).tick();
  const [d] = await deliveries(db, linkLocal.id);
  const [a] = await attempts(db, d.id);
  assert.equal([d.status, a.error, a.detail], ['pending', 'connection_error', 'cannot connect to fe80::1: the address cannot be connected to from here (EINVAL)']);
  const literal = await addWebhook(db, { url: 'http://[ff02::1]:8080/literal', events: ['pr.opened'] });
  await createTestDelivery(db, literal.id, new Date());
  await worker(db).tick();
  const [l] = await deliveries(db, literal.id);
  assert.equal([l.status, l.last_error], ['pending', 'connection_error']);
});

test('safety net: an error thrown asynchronously inside an attempt is logged at ERROR with its stack, masked; the process keeps delivering', async () => {
  const lines: string[] = [];
  const exits: number[] = [];
  const remove = installSafetyNet(createLogger('debug', {}, (l) => lines.push(l)), (code) => exits.push(code));
  try {
    await setAllowlist(db, [NAME]);
    let n = 0;
    const throwing: Resolver = async () => {
      const which = ++n;
      setImmediate(() => {
        throw new Error(`boom ${which} at https://user:hunter2@${NAME}/hook?token=s3cret`);
      });
      if (which === 2) void Promise.reject(new Error('rejected inside an attempt'));
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const hook = await addWebhook(db, { url: `http://${NAME}:${rx.port}/net`, events: ['pr.opened'] });
    const first = await createTestDelivery(db, hook.id, new Date());
    await worker(db, { resolve: throwing }).tick();
    await until('the escaped error to be logged', () => lines.some((l) => l.includes('boom 1')));
    const second = await createTestDelivery(db, hook.id, new Date());
    await worker(db, { resolve: throwing }).tick();
    await until('the second escaped error and the rejection', () => lines.some((l) => l.includes('boom 2')) && lines.some((l) => l.includes('rejected inside')));
    const escaped = lines.filter((l) => l.includes('boom 1'));
    assert.is(escaped.length, 1);
    assert.match(escaped[0], /^\S+ ERROR an error escaped from a webhook delivery; the server keeps running /);
    assert.ok(escaped[0].includes(`deliveryId=${first.deliveryId}`), escaped[0]);
    assert.match(escaped[0], /origin=uncaughtException/);
    assert.match(escaped[0], /stack=".*unreachable\.test\.ts/, 'the stack names where it was thrown');
    assert.not.ok(/hunter2|s3cret/.test(lines.join('\n')), 'no credential or query string in the log');
    assert.ok(lines.some((l) => l.includes('origin=unhandledRejection') && l.includes(`deliveryId=${second.deliveryId}`)));
    assert.equal(exits, [], 'nothing asked the process to exit');
    const rows = await deliveries(db, hook.id);
    assert.equal(rows.map((d) => d.status), ['delivered', 'delivered'], 'both attempts finished and were recorded');
  } finally {
    remove();
  }
});

test('safety net: an error escaping from anything else is logged and still ends the process (exit 1)', async () => {
  const lines: string[] = [];
  const exits: number[] = [];
  const remove = installSafetyNet(createLogger('debug', {}, (l) => lines.push(l)), (code) => exits.push(code));
  try {
    setImmediate(() => {
      throw new Error('not webhook work');
    });
    await until('the exit', () => exits.length > 0);
    assert.equal(exits, [1]);
    assert.match(lines.join('\n'), /ERROR an error escaped and nothing contains it; the process exits origin=uncaughtException error="Error: not webhook work" stack=/);
    // Work marked as contained after the fact survives, whatever it is called.
    runContained({ area: 'test work' }, () => setImmediate(() => {
      throw new Error('contained');
    }));
    await until('the contained error', () => lines.some((l) => l.includes('escaped from test work')));
    assert.equal(exits, [1]);
  } finally {
    remove();
  }
});

test('safety net: the tracking is on while contained work runs and for the linger after, then off and on again with new work', async () => {
  const lines: string[] = [];
  const exits: number[] = [];
  const remove = installSafetyNet(createLogger('debug', {}, (l) => lines.push(l)), (code) => exits.push(code));
  setContainLinger(300);
  try {
    await until('the earlier tests\' tracking to end', () => !containmentTracking());
    let finish!: () => void;
    const work = runContained({ area: 'slow work' }, () => new Promise<void>((r) => (finish = r)));
    assert.ok(containmentTracking(), 'on while the work runs');
    await new Promise((r) => setTimeout(r, 400));
    assert.ok(containmentTracking(), 'still on: the work has not settled, whatever the linger');
    // A callback the work scheduled runs after the work settled, within the linger: still contained.
    runContained({ area: 'late work' }, () => setTimeout(() => {
      throw new Error('late but contained');
    }, 100));
    finish();
    await work;
    await until('the late error', () => lines.some((l) => l.includes('escaped from late work')));
    assert.equal(exits, [], 'contained within the linger');
    await until('the tracking to end after the linger', () => !containmentTracking());
    // Off: an error from anywhere is uncontained (here: nothing is running).
    setImmediate(() => {
      throw new Error('after the linger');
    });
    await until('the exit', () => exits.length > 0);
    assert.match(lines.join('\n'), /nothing contains it; the process exits origin=uncaughtException error="Error: after the linger"/);
    // New work turns it on again, and is contained.
    runContained({ area: 'new work' }, () => setImmediate(() => {
      throw new Error('again');
    }));
    assert.ok(containmentTracking());
    await until('the new contained error', () => lines.some((l) => l.includes('escaped from new work')));
    assert.equal(exits, [1]);
    // Work that throws at once still ends its share of the tracking.
    assert.throws(() => runContained({ area: 'failing work' }, () => {
      throw new Error('sync');
    }), /sync/);
    await until('the tracking to end again', () => !containmentTracking());
  } finally {
    setContainLinger(30_000);
    remove();
  }
});

test('no attempt row is left without an outcome', async () => {
  const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from outbound_attempts where outcome is null`);
  assert.is(n, 0);
});

test.run();
