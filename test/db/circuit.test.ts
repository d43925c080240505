// The circuit in front of the PostgreSQL pool (functions/lib/db/circuit.ts): once a query found the
// database unreachable, the next ones fail at once (no queueing behind connection attempts) until a
// probe answers; other errors leave it closed. Pure logic, no database.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Circuit } from '../../functions/lib/db/circuit.ts';
import { isDatabaseUnavailable } from '../../functions/lib/db/unavailable.ts';
import { waitUntil } from '../runner/_harness.ts';

const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

test('an unreachable database opens the circuit: the next query fails at once, without running, as database-unavailable', async () => {
  let up = false;
  const changes: boolean[] = [];
  const c = new Circuit({ probe: async () => (up ? undefined : Promise.reject(refused())), probeEveryMs: 10, onChange: (open) => changes.push(open) });
  assert.is((await c.run(() => Promise.reject(refused())).catch((e) => e)).code, 'ECONNREFUSED');
  assert.ok(c.isOpen);
  let ran = false;
  const t0 = Date.now();
  const err = await c.run(async () => (ran = true)).catch((e) => e);
  assert.ok(Date.now() - t0 < 50, 'refused at once');
  assert.not.ok(ran, 'the query was not run');
  assert.ok(isDatabaseUnavailable(err), 'answered as database_unavailable (503)');
  up = true;
  await waitUntil(() => !c.isOpen, 5000, 'the probe to close the circuit');
  assert.is(await c.run(async () => 42), 42);
  assert.equal(changes, [true, false]);
  c.stop();
});

test('a query error that is not about reaching the database leaves the circuit closed', async () => {
  let probes = 0;
  const c = new Circuit({ probe: async () => void probes++ });
  assert.is((await c.run(() => Promise.reject(Object.assign(new Error('duplicate key'), { code: '23505' }))).catch((e) => e)).code, '23505');
  assert.not.ok(c.isOpen);
  assert.is(probes, 0);
  assert.is(await c.run(async () => 'ok'), 'ok');
});

test('a probe that never answers (a server that drops packets) is given up after its timeout and tried again', async () => {
  let calls = 0;
  const c = new Circuit({ probe: () => (++calls === 1 ? new Promise(() => {}) : Promise.resolve()), probeTimeoutMs: 50, probeEveryMs: 10 });
  c.trip();
  await waitUntil(() => !c.isOpen, 5000, 'the second probe to close the circuit');
  assert.is(calls, 2);
});


test('a connection attempt to a server that accepts and never answers fails after DATABASE_CONNECT_ATTEMPT_SECONDS, as database-unavailable', async () => {
  // What held one request for 10.0 s while PostgreSQL shut down (test/ops/pg-outage.test.ts, `-m fast`):
  // a query waiting behind a connection attempt waits that attempt's timeout. A TCP listener that never
  // speaks is the worst case of it.
  const { createServer } = await import('node:net');
  const { openPostgres } = await import('../../functions/lib/db/postgres.ts');
  const sockets: import('node:net').Socket[] = [];
  const silent = createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as import('node:net').AddressInfo).port;
  const t0 = Date.now();
  const err = await openPostgres(`postgres://svc@127.0.0.1:${port}/none`, 1, undefined, 1).catch((e) => e);
  const ms = Date.now() - t0;
  for (const s of sockets) s.destroy();
  silent.close();
  assert.ok(isDatabaseUnavailable(err), `database-unavailable, got ${err?.code}`);
  assert.ok(ms >= 900 && ms < 4000, `given up after the 1 s attempt timeout, took ${ms} ms`);
});
test.run();
