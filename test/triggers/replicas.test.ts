// Three real server processes on one PostgreSQL behind "one address" (spec: replay memory, the rate
// bucket and one live run per trigger hold across processes): concurrent POSTs of one delivery id → one
// 202; the bucket is shared; concurrent deliveries of one trigger start one run; a delivery accepted but
// never fired (its process died) is fired by another process; one whose sender died is never sent twice.
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signTrigger } from '../../docs/examples/sign-trigger.ts';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, createTrigger, deliveries, makeProject, skillTrigger, waitFor } from './_harness.ts';

onlyOn('postgres', test, 6, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let servers: RunningServer[] = [];
  let sql: postgres.Sql;
  let ws: Client;
  let projectId = '';
  let quietProject = ''; // served by a runner that never connects: its deliveries fail at once, no command frames
  const env = { APP_ENCRYPTION_KEY: KEY, TRIGGER_RATE_PER_HOUR: '5', TRIGGER_LEASE_SECONDS: '35' };

  test.before(async () => {
    pg = await freshPostgres();
    const a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url } });
    servers = [a, ...(await Promise.all([1, 2].map(() => startServer({ env, dbEnv: { DATABASE_URL: pg.url } }))))];
    sql = postgres(pg.url, { max: 2, onnotice: () => {} });
    const runner = await pairRunner(a.api, a.url, 'replica-runner');
    projectId = await makeProject(a, runner.runnerId);
    quietProject = await makeProject(a, (await a.api('/api/runners', { method: 'POST', json: { name: 'never' } }).then((r) => r.json())).runner.id);
    ws = connect(servers[2].url, runner.token); // the runner's socket is held by the third process
    await ws.next('welcome');
  });
  test.after(async () => {
    ws?.ws.close();
    await sql?.end();
    await Promise.all(servers.map((s) => s.cleanup()));
    await pg?.drop();
  });

  /** The same signed request to every process in turn, all at once. */
  const spray = (url: string, n: number, signed: (i: number) => { headers: Record<string, string>; body: string }) =>
    Promise.all(
      Array.from({ length: n }, (_, i) => {
        const { headers, body } = signed(i);
        const path = new URL(url).pathname;
        return fetch(servers[i % 3].url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }).then(async (r) => (await r.arrayBuffer(), r.status));
      }),
    );

  test('concurrent POSTs of one delivery id to 3 processes → exactly one 202, the rest 409', async () => {
    const t = await createTrigger(servers[0], quietProject, { name: 'round', action: 'next_round' });
    const body = JSON.stringify({ x: 'y' });
    const headers = signTrigger(t.secret, body, { delivery: 'one-id' });
    const statuses = await spray(t.url, 60, () => ({ headers, body }));
    assert.is(statuses.filter((s) => s === 202).length, 1, statuses.join(','));
    assert.is(statuses.filter((s) => s === 409).length, 59);
    const [row] = await sql`select count(*)::int as n from inbound_deliveries where trigger_id = ${t.id}`;
    assert.is(row.n, 1);
  });

  test('the rate bucket is shared: TRIGGER_RATE_PER_HOUR=5 across 3 processes → exactly 5 accepted, the rest 429 and unrecorded', async () => {
    const t = await createTrigger(servers[0], quietProject, { name: 'round', action: 'next_round' });
    const body = JSON.stringify({ x: 'y' });
    const statuses = await spray(t.url, 15, (i) => ({ headers: signTrigger(t.secret, body, { delivery: `rate-${i}` }), body }));
    assert.is(statuses.filter((s) => s === 202).length, 5, statuses.join(','));
    assert.is(statuses.filter((s) => s === 429).length, 10);
    const [row] = await sql`select count(*)::int as n from inbound_deliveries where trigger_id = ${t.id}`;
    assert.is(row.n, 5);
  });

  test('deleting a trigger while the firer holds its deliveries does not deadlock: the delete waits, both finish', async () => {
    const t = await createTrigger(servers[0], quietProject, { name: 'doomed', action: 'next_round' });
    const body = JSON.stringify({ x: 'y' });
    const statuses = await spray(t.url, 2, (i) => ({ headers: signTrigger(t.secret, body, { delivery: `doomed-${i}` }), body }));
    assert.equal(statuses, [202, 202]);
    await waitFor('both decided', async () => {
      const [{ n }] = await sql`select count(*)::int as n from inbound_deliveries where trigger_id = ${t.id} and status not in ('accepted', 'firing')`;
      return n === 2;
    });
    // What the firer's claim does, by hand: the deliveries locked first, then (below) the trigger row.
    let deleted: Promise<number> | undefined;
    await sql.begin(async (tx) => {
      await tx`select id from inbound_deliveries where trigger_id = ${t.id} for update`;
      deleted = servers[0].api(`/api/projects/${quietProject}/triggers/${t.id}`, { method: 'DELETE' }).then(async (r) => (await r.arrayBuffer(), r.status));
      await waitFor('the delete to wait for a lock', async () => {
        const [{ n }] = await sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
        return n > 0;
      });
      // The firer's next step. Before the fix the delete held the trigger row while it waited for the
      // deliveries: this waited for the delete, and PostgreSQL aborted one of the two after a second.
      const [row] = await tx`select id from triggers where id = ${t.id} for no key update`;
      assert.is(row.id, t.id);
    });
    assert.is(await deleted, 204);
    const [{ n }] = await sql`select count(*)::int as n from inbound_deliveries where trigger_id = ${t.id}`;
    assert.is(n, 0);
  });

  test('concurrent deliveries of one skill trigger through 3 processes start ONE run; the others are skipped previous_still_running', async () => {
    const t = await createTrigger(servers[0], projectId, skillTrigger());
    const before = ws.frames.filter((f) => f.type === 'command').length;
    const body = JSON.stringify({ ref: 'main' });
    const statuses = await spray(t.url, 5, (i) => ({ headers: signTrigger(t.secret, body, { delivery: `live-${i}` }), body }));
    assert.equal(statuses, [202, 202, 202, 202, 202]);
    const cmd = await ws.next('command');
    ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { runId: `run-${randomUUID()}`, state: 'running' } });
    const rows = await waitFor('all settled', async () => {
      const all = await deliveries(servers[0], projectId, t.id);
      return all.length === 5 && all.every((d) => !['accepted', 'firing'].includes(d.status)) && all;
    });
    assert.equal(rows.map((d) => d.status).sort(), ['fired', 'skipped', 'skipped', 'skipped', 'skipped']);
    assert.ok(rows.filter((d) => d.status === 'skipped').every((d) => d.reason === 'previous_still_running'));
    assert.is(ws.frames.filter((f) => f.type === 'command').length, before + 1, 'one command only');
  });

  test('a delivery accepted but never fired (its process died after the 202) is fired by another process', async () => {
    const t = await createTrigger(servers[0], projectId, skillTrigger());
    // What a process leaves behind when it dies between the commit and the firing.
    await sql`insert into inbound_deliveries (id, trigger_id, delivery_id, status, args) values (${randomUUID()}, ${t.id}, 'orphan-1', 'accepted', ${sql.json(['--ref', 'orphan'])})`;
    const cmd = await ws.next('command', 15_000);
    assert.equal(cmd.args.args, ['--ref', 'orphan']);
    ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { runId: 'run-orphan', state: 'running' } });
    const row = await waitFor('fired', async () => (await deliveries(servers[0], projectId, t.id)).find((d) => d.status === 'fired'));
    assert.is(row.runId, 'run-orphan');
  });

  test('a delivery whose sender died mid-command is marked failed interrupted once its lease expires, and never sent again', async () => {
    const t = await createTrigger(servers[0], projectId, skillTrigger());
    const before = ws.frames.filter((f) => f.type === 'command').length;
    await sql`insert into inbound_deliveries (id, trigger_id, delivery_id, status, args, lease_owner, lease_expires_at)
              values (${randomUUID()}, ${t.id}, 'dead-1', 'firing', ${sql.json(['--ref', 'x'])}, 'gone-process', now() - interval '1 second')`;
    const row = await waitFor('interrupted', async () => (await deliveries(servers[0], projectId, t.id)).find((d) => d.status === 'failed'));
    assert.is(row.reason, 'interrupted');
    assert.is(ws.frames.filter((f) => f.type === 'command').length, before, 'nothing was sent for it');
  });
});

test.run();
