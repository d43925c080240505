// PostgreSQL going away for 10 s under two replicas and a runner (docs/operations.md "When PostgreSQL
// goes away"). The database is a private cluster this test makes with initdb and pg_ctl on its own port
// and directory, never the shared server other tests use. While it is down: both replicas stay up,
// /health answers 200, a request that needs the database answers 503 database_unavailable with
// Retry-After at once (no hang), and the runner keeps its events. After it is back: the API works by
// itself, the runner's spool catches up (every event stored once), and commands cross replicas again
// (the LISTEN connections came back).
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gitWorkTree } from '../helpers/git.ts';
import { onlyOn } from '../helpers/db.ts';
import { PG_BIN, privateCluster } from '../helpers/pgcluster.ts';
import type { PrivateCluster } from '../helpers/pgcluster.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

onlyOn('postgres', test, 1, () => {
  let pg: PrivateCluster;
  let a: RunningServer;
  let b: RunningServer;
  let sb: Sandbox;
  test.after(async () => {
    await killDaemons();
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    pg?.remove();
    sb?.cleanup();
  });

  test('PostgreSQL stopped for 10 s: replicas stay up, /health 200, 503 with Retry-After at once; afterwards work resumes and the runner catches up', async () => {
    assert.ok(PG_BIN, 'PostgreSQL server binaries (initdb, pg_ctl) are installed');
    pg = await privateCluster();
    a = await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ dbEnv: { DATABASE_URL: pg.url } });
    const viaB = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      fetch(b.url + path, { ...init, headers: { authorization: `Bearer ${a.admin.token}`, 'content-type': 'application/json' }, body: init.json === undefined ? undefined : JSON.stringify(init.json) });

    // A runner connected to A, watching a project whose events file the test writes to.
    sb = sandbox();
    const root = join(sb.dir, 'widgets');
    mkdirSync(join(gitWorkTree(root), '.svc'), { recursive: true });
    const made = await (await a.api('/api/runners', { method: 'POST', json: { name: 'pg-restart' } })).json();
    const paired = await runCli(sb, ['pair', '--server', a.url, '--code', made.code, '--no-detect']);
    assert.is(paired.status, 0, paired.stderr);
    const project = await (await a.api('/api/projects', { method: 'POST', json: { name: 'widgets', repo: 'acme/widgets', runnerId: made.runner.id, rootPath: root } })).json();
    const daemon = startDaemon(sb);
    await daemon.waitFor(/connected to/, 20_000);
    await waitUntil(() => (sb.readConfig().projects ?? []).some((p: { id: string }) => p.id === project.id), 20_000, 'the watch list');
    const note = (n: number) => appendFileSync(join(root, '.svc', 'events.jsonl'), `${JSON.stringify({ v: 1, time: new Date().toISOString(), type: 'round.note', data: { n } })}\n`);
    for (let n = 0; n < 5; n++) note(n);
    const db = () => postgres(pg.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    const stored = async () => {
      const sql = db();
      try {
        return (await sql`select payload->'data'->>'n' as n from runner_events where runner_id = ${made.runner.id} and kind = 'fleet.round.note'`).map((r) => Number(r.n)).sort((x, y) => x - y);
      } finally {
        await sql.end();
      }
    };
    await waitUntil(async () => (await stored()).length === 5, 30_000, 'the first events stored');

    // Down for 10 s (the length of the fault, not a wait for a condition).
    await pg.stop();
    const downAt = Date.now();
    for (const s of [a, b]) assert.is((await fetch(`${s.url}/health`)).status, 200, '/health does not need the database');
    for (const s of [a, b]) {
      const t0 = Date.now();
      const r = await fetch(`${s.url}/api/runners`, { headers: { authorization: `Bearer ${a.admin.token}` } });
      assert.is(r.status, 503, await r.clone().text());
      assert.is(r.headers.get('retry-after'), '5');
      assert.is((await r.json()).error.code, 'database_unavailable');
      assert.ok(Date.now() - t0 < 5000, `answered in ${Date.now() - t0} ms, not after a hang`);
    }
    for (let n = 5; n < 20; n++) note(n);
    while (Date.now() - downAt < 10_000) await new Promise((r) => setTimeout(r, 250));
    for (const s of [a, b]) assert.is(s.proc.exitCode, null, 'the replica is still running');
    await pg.start();

    // Back: the API works again by itself, on both replicas.
    await waitUntil(async () => (await a.api('/api/runners')).status === 200 && (await viaB('/api/runners')).status === 200, 60_000, 'the API to answer 200 again');
    // The runner's spool catches up: every event, once.
    let have: number[] = [];
    await waitUntil(async () => (have = await stored()).length >= 20, 90_000, () => `20 events stored; have ${have.length}`);
    assert.equal(have, Array.from({ length: 20 }, (_, i) => i), '0 lost, 0 stored twice');
    // A command sent through B reaches the runner held by A: both LISTEN connections are back.
    let status = 0;
    await waitUntil(async () => (status = (await viaB(`/api/runners/${made.runner.id}/commands`, { method: 'POST', json: { name: 'runner.ping', args: {} } })).status) === 200, 60_000, () => `runner.ping through B; last status ${status}`);
    assert.not.match(a.output() + b.output(), /unhandled error/);
  });
});

test.run();
