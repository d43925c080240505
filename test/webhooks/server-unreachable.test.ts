// Issue 11 end to end: the real server (dist/server.mjs) in a network namespace that has only loopback
// and its own /etc/hosts, so receiver names resolve through the system resolver to addresses the
// namespace has no route to: an IPv6-only receiver (2001:db8::5) and an IPv4 one (198.51.100.7), both
// ENETUNREACH. Nothing leaves the machine: the connects fail in the kernel. Before the fix the first
// attempt killed the process. The database is prepared before the server starts and read after it
// stopped (PGlite), or reached over PostgreSQL's Unix socket, which a network namespace does not hide.
// Needs `unshare` (root); says so and skips without it.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import { createTestDelivery } from '../../functions/webhooks/webhooks.ts';
import { tempDir } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { KEY, addWebhook, attempts, deliveries, serverDatabase, setAllowlist } from './_harness.ts';

const unshare = spawnSync('unshare', ['--net', '--mount', 'true']).status === 0;

test('the server in a namespace without routes: every attempt to receivers named in /etc/hosts is a recorded connection failure, the circuit counts them, the server stays up', async () => {
  const data = unshare ? await serverDatabase() : null;
  if (!data) return void console.log('  skipped: cannot make a network namespace here (needs root and unshare), or PostgreSQL has no Unix socket');
  const dir = tempDir('netns-');
  const hosts = join(dir, 'hosts');
  writeFileSync(hosts, '127.0.0.1 localhost\n::1 localhost\n2001:db8::5 v6only.receiver.test\n198.51.100.7 v4.receiver.test\n');
  let db = await data.open();
  await setAllowlist(db, ['v6only.receiver.test', 'v4.receiver.test']);
  const v6 = await addWebhook(db, { url: 'http://v6only.receiver.test:8080/hook', events: ['pr.opened'] });
  const v4 = await addWebhook(db, { url: 'http://v4.receiver.test:8080/hook', events: ['pr.opened'] });
  for (let i = 0; i < 10; i++) await createTestDelivery(db, v6.id, new Date());
  for (let i = 0; i < 2; i++) await createTestDelivery(db, v4.id, new Date());
  await db.close();

  // Loopback up, this test's hosts file over /etc/hosts (private to the namespace), then the server.
  const wrap = ['unshare', '--net', '--mount', '--', 'sh', '-c', 'ip link set lo up && mount --bind "$0" /etc/hosts && exec "$@"', hosts];
  const srv = await startServer({ dbEnv: data.env, env: { APP_ENCRYPTION_KEY: KEY.toString('base64') }, wrap });
  try {
    const failedLines = () => srv.output().split('\n').filter((l) => l.includes(' webhook attempt failed '));
    const end = Date.now() + 30_000;
    while (srv.proc.exitCode === null && !(failedLines().length >= 12 && /WARN webhook circuit open/.test(srv.output()))) {
      if (Date.now() > end) throw new Error(`12 failed attempts and an open circuit were not logged:\n${srv.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.is(srv.proc.exitCode, null, `the server is still running:\n${srv.output()}`);
    assert.is(failedLines().length, 12);
    assert.ok(failedLines().every((l) => l.includes('error=connection_error')), failedLines().join('\n'));
    assert.not.match(srv.output(), /escaped/, 'nothing needed the safety net');
    assert.is(await srv.stop('SIGTERM'), 0, 'and it shuts down normally');
  } finally {
    await srv.cleanup();
  }

  db = await data.open();
  try {
    const check = async (hookId: string, n: number, address: string, reason: RegExp) => {
      const rows = await deliveries(db, hookId);
      assert.is(rows.length, n);
      for (const d of rows) {
        assert.equal([d.status, d.attempts, d.last_error], ['pending', 1, 'connection_error']);
        const [a] = await attempts(db, d.id);
        assert.equal([a.outcome, a.error, a.address], ['failure', 'connection_error', address]);
        assert.match(a.detail!, reason);
      }
    };
    await check(v6.id, 10, '2001:db8::5', /^cannot connect to 2001:db8::5: no route to its network \(ENETUNREACH\)$/);
    await check(v4.id, 2, '198.51.100.7', /^cannot connect to 198\.51\.100\.7: no route to its network \(ENETUNREACH\)$/);
    const circuits = await db.query<{ id: string; circuit_state: string; consecutive_failures: number }>(sql`select id, circuit_state, consecutive_failures from webhooks`);
    const of = (id: string) => circuits.find((c) => c.id === id)!;
    assert.equal([of(v6.id).circuit_state, of(v6.id).consecutive_failures], ['open', 10], 'the 10 failures opened the circuit');
    assert.equal([of(v4.id).circuit_state, of(v4.id).consecutive_failures], ['closed', 2]);
  } finally {
    await db.close();
    await data.drop();
  }
});

test.run();
