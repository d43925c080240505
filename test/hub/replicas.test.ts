// The hub with PostgreSQL: events stored once, commands across two API processes, offline notices.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256Hex } from '../../functions/lib/crypto.ts';
import { TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';

onlyOn('postgres', test, 10, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let a: RunningServer;
  let b: RunningServer;
  let db: postgres.Sql;
  test.before(async () => {
    pg = await freshPostgres();
    a = await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ dbEnv: { DATABASE_URL: pg.url } });
    db = postgres(pg.url, { max: 2, onnotice: () => {} });
  });
  test.after(async () => {
    await db?.end();
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    await pg?.drop();
  });
  const asAdmin = (s: RunningServer) => (path: string, init: RequestInit & { json?: unknown } = {}) =>
    fetch(s.url + path, {
      ...init,
      headers: { authorization: `Bearer ${a.admin.token}`, 'content-type': 'application/json' },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });

  test('only hashes of runner tokens and pairing codes are stored', async () => {
    const { runnerId, token, code } = await pairRunner(a.api, a.url, 'hashes');
    const [r] = await db`select token_hash from runners where id = ${runnerId}`;
    assert.is(r.token_hash, sha256Hex(token));
    const dump = JSON.stringify(await db`select * from runners`) + JSON.stringify(await db`select * from pairing_codes`);
    assert.not.ok(dump.includes(token));
    assert.not.ok(dump.includes(code));
  });

  test('events re-sent without an ack (or to another replica) are stored exactly once', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'ingest');
    const events = Array.from({ length: 50 }, (_, i) => ({ id: `ev-${i}`, source: 'transcripts', kind: 'session.meta', ts: new Date().toISOString(), payload: { i } }));
    const toA = connect(a.url, token);
    await toA.next('welcome');
    toA.send({ type: 'events', events: events.slice(0, 30) });
    await toA.next('ack');
    toA.ws.close();
    await toA.closed;
    const toB = connect(b.url, token);
    await toB.next('welcome');
    toB.send({ type: 'events', events }); // 20..29 again, plus the rest
    assert.is((await toB.next('ack')).ids.length, 50);
    toB.ws.close();
    const rows = await db`select event_id, payload from runner_events where runner_id = ${runnerId} order by event_id`;
    assert.is(rows.length, 50);
    assert.equal(rows.find((r) => r.event_id === 'ev-7')!.payload, { i: 7 });
  });

  test('a frame is stored from its text as received, and numbers read the same as JSON.parse reads them', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'numbers');
    const c = connect(a.url, token);
    await c.next('welcome');
    const ts = new Date().toISOString();
    const frame = (id: string, payload: string) => `{"type":"events","events":[{"id":"${id}","source":"s","kind":"k","ts":"${ts}","payload":${payload}}]}`;
    const sent: [string, string, unknown][] = [
      // The text as received: nothing re-serialised, non-ASCII and escapes as they were.
      ['plain', String.raw`{"n":1.5e3,"s":"caf\u00e9 ✓ \\ \"q\"","a":[1,{"b":null}],"t":true}`, { n: 1500, s: 'café ✓ \\ "q"', a: [1, { b: null }], t: true }],
      // Beyond a double: Infinity and 0 here, so null (as JSON.stringify writes Infinity) and 0 there too.
      ['huge-exponent', '{"big":1e400,"tiny":1e-400,"neg":-2e999}', { big: null, tiny: 0, neg: null }],
      // Wherever JSON puts a number: in an array, after white space, with a fraction.
      ['huge-exponent-elsewhere', '{"arr":[1e400, 2E+999],"sp": \t1.25e-999,"x":[0,-7.5e400]}', { arr: [null, null], sp: 0, x: [0, null] }],
      // No big exponent, but more digits than numeric holds: the database refuses the text (22003) and
      // the parsed copy is stored instead.
      ['long-fraction', `{"f":0.${'0'.repeat(20_000)}1}`, { f: 0 }],
      ['long-integer', `{"i":1${'0'.repeat(140_000)}}`, { i: null }],
      // An "e" and three digits inside a string only takes the parsed copy's way: the same result.
      ['sha', '{"sha":"3e1234abcdef","x":2}', { sha: '3e1234abcdef', x: 2 }],
    ];
    for (const [id, payload] of sent) {
      c.send(frame(id, payload));
      assert.equal((await c.next('ack')).ids, [id], id);
    }
    c.ws.close();
    const rows = await db`select event_id, payload, ts from runner_events where runner_id = ${runnerId}`;
    assert.is(rows.length, sent.length);
    for (const [id, , expected] of sent) {
      const row = rows.find((r) => r.event_id === id)!;
      assert.equal(row.payload, expected, id);
      assert.is(new Date(row.ts).toISOString(), ts);
    }
  });

  test('a command asked on replica B reaches the runner connected to replica A, and back', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'cross');
    const c = connect(a.url, token);
    await c.next('welcome');
    const answer = asAdmin(b)(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'runner.describe' } });
    const frame = await c.next('command');
    c.send({ type: 'result', requestId: frame.requestId, ok: true, data: { hostname: 'far-away' } });
    const res = await answer;
    assert.is(res.status, 200);
    assert.equal((await res.json()).data, { hostname: 'far-away' });
    const [row] = await db`select status, name from runner_commands where request_id = ${frame.requestId}`;
    assert.equal([row.status, row.name], ['done', 'runner.describe']);
    c.ws.close();
  });

  // A process of another build (a rolling upgrade) may hold the runner's new socket and never send what
  // is still unanswered on hello: the process whose request waits sees the runner moved and announces the
  // command again. The runner here sends no hello, so only that path can deliver it a second time.
  test('a read-only command lost with a socket is sent again once the runner is connected to another process', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'moved');
    const first = connect(a.url, token);
    await first.next('welcome');
    const answer = asAdmin(b)(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'runner.describe' } });
    const lost = await first.next('command');
    first.ws.close(); // the socket goes before the answer
    await first.closed;
    const second = connect(b.url, token);
    await second.next('welcome');
    const again = await second.next('command', 10_000);
    assert.is(again.requestId, lost.requestId, 'the same request, sent again');
    second.send({ type: 'result', requestId: again.requestId, ok: true, data: { hostname: 'moved-host' } });
    const res = await answer;
    assert.is(res.status, 200);
    assert.equal((await res.json()).data, { hostname: 'moved-host' });
    second.ws.close();
  });

  test('a command that is not read-only is never sent twice, even when its socket went away', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'moved-write');
    const project = await (await a.api('/api/projects', { method: 'POST', json: { name: 'moved-write', repo: 'acme/moved-write', runnerId, rootPath: '/srv/moved-write' } })).json();
    const first = connect(a.url, token);
    await first.next('welcome');
    const answer = asAdmin(b)(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'orchestrator.stop', args: { projectId: project.id } } });
    const sent = await first.next('command');
    first.ws.close();
    await first.closed;
    const second = connect(b.url, token);
    await second.next('welcome');
    // It may have run: the requester gets its timeout (after redelivery checks every second), never a second send.
    assert.is((await answer).status, 504);
    assert.is(second.frames.filter((f) => f.type === 'command' && f.requestId === sent.requestId).length, 0);
    second.ws.close();
  });

  test('a newer connection on replica B closes the older one on replica A with 4409', async () => {
    const { token } = await pairRunner(a.api, a.url, 'roaming');
    const onA = connect(a.url, token);
    await onA.next('welcome');
    const onB = connect(b.url, token);
    await onB.next('welcome');
    assert.is(await onA.closed, 4409);
    onB.ws.close();
  });

  // Notices between processes come late on a loaded machine: the "close the others" notice of the older
  // connection may reach replica B after B accepted the newer one; B must keep the newer socket.
  test('a late "replaced" notice of an older connection does not close the newer one', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'late-notice');
    const onA = connect(a.url, token);
    await onA.next('welcome');
    const [{ since: olderSince }] = await db`select (extract(epoch from clock_timestamp()) * 1000000)::bigint::text as since`;
    const onB = connect(b.url, token);
    await onB.next('welcome');
    assert.is(await onA.closed, 4409);
    const notice = (since: string) => JSON.stringify({ action: 'close', runnerId, except: 'an-older-socket', since, code: 4409 });
    // Notices of one session arrive in order: once B answers the "projects" notice, it has read the stale one.
    await db.begin(async (tx) => {
      await tx`select pg_notify('svc_runner_ctl', ${notice(olderSince)})`;
      await tx`select pg_notify('svc_runner_ctl', ${JSON.stringify({ action: 'projects', runnerId })})`;
    });
    await onB.next('projects');
    assert.is(onB.ws.readyState, onB.ws.OPEN, 'the newer socket is kept');
    // A notice from a connection newer than B's closes it.
    await db`select pg_notify('svc_runner_ctl', ${notice(String(BigInt(olderSince) + 3_600_000_000n))})`;
    assert.is(await onB.closed, 4409);
  });

  test('runner.offline: once per outage after more than 5 minutes, listed for admins', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'flaky');
    const c = connect(a.url, token);
    await c.next('welcome');
    c.ws.close();
    await c.closed;
    const runNow = async () => {
      const run = await a.api('/api/schedules/runners.offline/run', { method: 'POST' });
      assert.is(run.status, 202);
      await new Promise((r) => setTimeout(r, 300));
    };
    const disconnected = async () => {
      for (let i = 0; i < 100; i++) {
        const [r] = await db`select connected_instance from runners where id = ${runnerId}`;
        if (r.connected_instance === null) return;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error('the server never recorded the disconnect');
    };
    const notices = async () =>
      (await (await a.api('/api/notifications')).json()).notifications.filter((n: { runnerId: string }) => n.runnerId === runnerId);
    await disconnected();
    await runNow();
    assert.is((await notices()).length, 0, 'not after seconds');
    await db`update runners set last_seen_at = now() - interval '4 minutes' where id = ${runnerId}`;
    await runNow();
    assert.is((await notices()).length, 0, 'not at 4 minutes');
    await db`update runners set last_seen_at = now() - interval '6 minutes' where id = ${runnerId}`;
    await runNow();
    await runNow();
    const first = await notices();
    assert.is(first.length, 1, 'once for this outage');
    assert.is(first[0].kind, 'runner.offline');
    assert.is(first[0].data.name, 'flaky');
    // Back online, then gone again: a new outage, a new notice.
    const again = connect(a.url, token);
    await again.next('welcome');
    again.ws.close();
    await again.closed;
    await disconnected();
    // As if the first notice was 20 minutes ago and this outage began 6 minutes ago.
    await db`update runners set offline_notified_at = now() - interval '20 minutes', last_seen_at = now() - interval '6 minutes' where id = ${runnerId}`;
    await runNow();
    assert.is((await notices()).length, 2);
  });

  test('a server process that dies holding sockets: its runners read as offline once they go quiet', async () => {
    const { runnerId, token } = await pairRunner(a.api, a.url, 'orphaned');
    const extra = await startServer({ dbEnv: { DATABASE_URL: pg.url } });
    const c = connect(extra.url, token);
    await c.next('welcome');
    await extra.stop('SIGKILL');
    await extra.cleanup();
    await db`update runners set last_seen_at = now() - interval '2 minutes' where id = ${runnerId}`;
    const r = (await (await a.api('/api/runners')).json()).runners.find((x: { id: string }) => x.id === runnerId);
    assert.is(r.status, 'offline');
    const res = await a.api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'runner.ping' } });
    assert.is(res.status, 503);
  });
});

test.run();
