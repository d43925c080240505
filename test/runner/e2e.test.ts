// The real runner bundle against the real server (PGlite or PostgreSQL per SVC_TEST_DB): pair with a
// code an admin made, connect, answer commands sent through the admin API, deliver spooled events
// into the database exactly once across a kill -9 of the server and of the runner, and stop for good
// (exit 78) when revoked or replaced by a newer pairing.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { BUNDLE, killDaemons, runCli, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

const freePort = () =>
  new Promise<number>((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => ok(port));
    });
  });

/** The internal command that appends events straight to the spool (its name changed once). */
const SPOOL_APPEND = /^\s+spool-append\b/m.test(execFileSync(process.execPath, [BUNDLE, 'help'], { encoding: 'utf8' })) ? 'spool-append' : 'emit';

let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let server: RunningServer;
let port: number;
let token: string;
const sandboxes: Sandbox[] = [];

/** fetch() as the admin, against whichever server process is current. */
const api = (path: string, init: RequestInit & { json?: unknown } = {}) => {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  headers.set('authorization', `Bearer ${token}`);
  if (json !== undefined) headers.set('content-type', 'application/json');
  return fetch(`http://127.0.0.1:${port}${path}`, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
};

async function restartServer(signal: NodeJS.Signals): Promise<void> {
  await server.stop(signal);
  server = await startServer({ dbEnv: dbEnv.env, env: { PORT: String(port) } });
}

/** Runs `fn` against the server's database; PGlite is single-process, so the server stops first. */
async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const stopped = !dbEnv.env.DATABASE_URL;
  if (stopped) await server.stop('SIGTERM');
  const db = stopped ? await openPglite(dbEnv.env.PGLITE_DATA_DIR) : await openPostgres(dbEnv.env.DATABASE_URL, 2);
  try {
    return await fn(db);
  } finally {
    await db.close();
    if (stopped) server = await startServer({ dbEnv: dbEnv.env, env: { PORT: String(port) } });
  }
}

async function newPairedSandbox(name: string): Promise<{ sb: Sandbox; runnerId: string }> {
  const made = await (await api('/api/runners', { method: 'POST', json: { name } })).json();
  const sb = sandbox();
  sandboxes.push(sb);
  const paired = await runCli(sb, ['pair', '--server', `http://127.0.0.1:${port}`, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  assert.is(sb.readConfig().runnerId, made.runner.id);
  return { sb, runnerId: made.runner.id };
}

async function runnerRow(runnerId: string) {
  const { runners } = await (await api('/api/runners')).json();
  return runners.find((r: { id: string }) => r.id === runnerId);
}

test.before(async () => {
  dbEnv = await serverDbEnv();
  port = await freePort();
  server = await startServer({ admin: true, dbEnv: dbEnv.env, env: { PORT: String(port) } });
  token = server.admin.token;
});
test.after.each(async () => {
  await killDaemons();
});
test.after(async () => {
  await server?.cleanup();
  await dbEnv?.cleanup();
  for (const sb of sandboxes) sb.cleanup();
});

test('paired with an admin-made code, the daemon comes online and answers commands sent through the API', async () => {
  const { sb, runnerId } = await newPairedSandbox('e2e-commands');
  sb.writeConfig({ ...sb.readConfig(), disabledCommands: ['pr.approve'] });
  const d = startDaemon(sb);
  await waitUntil(async () => (await runnerRow(runnerId))?.status === 'online', 15_000, () => `the runner online\n${d.output()}`);
  const row = await runnerRow(runnerId);
  assert.match(row.version, /^\d+\.\d+\.\d+/);
  assert.ok(row.hostname.length > 0);

  const ping = await api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'runner.ping', args: {} } });
  assert.is(ping.status, 200);
  const pong = await ping.json();
  assert.equal([pong.name, pong.ok, pong.data.pong], ['runner.ping', true, true]);

  const described = await (await api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'runner.describe', args: {} } })).json();
  assert.is(described.ok, true);
  assert.match(JSON.stringify(described.data), /"node"/);

  // The runner's own refusals come back as 502 with its error code.
  const refused = await api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'runner.describe', args: { extra: 1 } } });
  assert.is(refused.status, 400, 'the server validates arguments before sending');
  const notYet = await api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'skill.list', args: {} } });
  const body = await notYet.json();
  if (notYet.status === 502) assert.ok(['not_implemented', 'failed'].includes(body.error.code), JSON.stringify(body));
  else assert.is(notYet.status, 200, JSON.stringify(body));
  assert.not.match(d.output(), new RegExp(sb.readConfig().token));
  assert.equal(await d.kill('SIGTERM'), { code: 0, signal: null });
  await waitUntil(async () => (await runnerRow(runnerId))?.status === 'offline', 10_000, 'the runner offline after its stop');
});

test('spooled events reach the database exactly once across a kill -9 of the server and of the runner', async () => {
  const { sb, runnerId } = await newPairedSandbox('e2e-events');
  const total = 3000;
  const pad = 'x'.repeat(900);
  const filled = await runCli(sb, [SPOOL_APPEND, 'test.e2e', '--source', 'tests/e2e', '--count', String(total), '--payload', JSON.stringify({ pad })], {}, 60_000);
  assert.is(filled.status, 0, filled.stderr);
  assert.is(sb.spoolEvents().length, total);

  let d = startDaemon(sb);
  // Kill the server while the spool drains, then bring it back on the same port and database.
  await waitUntil(() => sb.spoolEvents().length < total - 200, 30_000, () => `the spool to start draining\n${d.output()}`);
  await restartServer('SIGKILL');
  // Kill the runner while it drains again, then start a new one (the stale lock is taken over).
  await waitUntil(() => sb.spoolEvents().length < total / 2, 60_000, () => `the spool to drain after the server came back; left ${sb.spoolEvents().length}\n${d.output()}`);
  assert.is((await d.kill('SIGKILL')).signal, 'SIGKILL');
  d = startDaemon(sb);
  await waitUntil(() => sb.spoolEvents().length === 0, 90_000, () => `the spool to empty; left ${sb.spoolEvents().length}\n${d.output()}`);
  assert.match(d.output(), /connected to/);
  assert.equal(await d.kill('SIGTERM'), { code: 0, signal: null });

  const stored = await withDb((db) =>
    db.query<{ n: number; distinct_seq: number; min: number; max: number }>(sql`
      select count(*)::int as n, count(distinct (payload->>'seq')::int)::int as distinct_seq,
             min((payload->>'seq')::int) as min, max((payload->>'seq')::int) as max
        from runner_events where runner_id = ${runnerId} and kind = 'test.e2e'`),
  );
  assert.equal(stored[0], { n: total, distinct_seq: total, min: 0, max: total - 1 });
  const started = await withDb((db) => db.query<{ n: number }>(sql`select count(*)::int as n from runner_events where runner_id = ${runnerId} and kind = 'runner.started'`));
  assert.is(started[0].n, 2, 'one runner.started per daemon start');
});

test('a graceful server restart (SIGTERM) closes the runner socket with 1012 and the runner comes back from the first backoff step; a kill -9 keeps growing the backoff', async () => {
  const { sb, runnerId } = await newPairedSandbox('e2e-restart');
  const d = startDaemon(sb);
  const downs = () => [...d.output().matchAll(/connection down \((\d+)[^)]*\); reconnecting in ([\d.]+) s/g)].map((m) => ({ code: Number(m[1]), s: Number(m[2]) }));
  const connects = () => d.output().match(/connected to /g)?.length ?? 0;
  await waitUntil(async () => connects() === 1 && (await runnerRow(runnerId))?.status === 'online', 15_000, () => `the runner online\n${d.output()}`);
  // Two kills -9, the second within the stability window of the reconnect: a lost socket (1006), and
  // the backoff goes on growing (≥ the 2 s step; more when dials failed while the server started).
  for (const [n, lo, hi] of [[1, 0.8, 1.2], [2, 1.6, 60]]) {
    const k = downs().length;
    await restartServer('SIGKILL');
    await waitUntil(() => connects() === n + 1, 30_000, () => `reconnect ${n}\n${d.output()}`);
    const down = downs()[k];
    assert.is(down.code, 1006);
    assert.ok(down.s >= lo && down.s <= hi, `kill -9 #${n}: reconnecting in ${down.s} s, expected ${lo}–${hi}`);
  }
  // SIGTERM: the server says 1012 and the runner waits the first step (1 s ± 20 %), not 4 s.
  const before = downs().length;
  const t0 = Date.now();
  await restartServer('SIGTERM');
  await waitUntil(() => connects() === 4, 30_000, () => `reconnect after SIGTERM\n${d.output()}`);
  const graceful = downs()[before];
  assert.is(graceful.code, 1012, d.output());
  assert.ok(graceful.s >= 0.8 && graceful.s <= 1.2, `after 1012: reconnecting in ${graceful.s} s`);
  assert.match(d.output(), /connection down \(1012: server restarting\)/);
  process.stderr.write(`  graceful restart: runner back ${((Date.now() - t0) / 1000).toFixed(1)} s after SIGTERM (server restart included)\n`);
  await d.kill();
});

test('revoked: the daemon exits 78; replaced by a newer pairing: the old daemon exits 78 and the new one connects', async () => {
  const first = await newPairedSandbox('e2e-revoke');
  const d1 = startDaemon(first.sb);
  await waitUntil(async () => (await runnerRow(first.runnerId))?.status === 'online', 15_000, () => `online\n${d1.output()}`);
  assert.is((await api(`/api/runners/${first.runnerId}`, { method: 'DELETE' })).status, 204);
  assert.equal(await d1.exited, { code: 78, signal: null });
  assert.match(d1.output(), /revoked|invalid/);

  const second = await newPairedSandbox('e2e-replace');
  const old = startDaemon(second.sb);
  await waitUntil(async () => (await runnerRow(second.runnerId))?.status === 'online', 15_000, () => `online\n${old.output()}`);
  // The same runner paired again from another machine: the old connection is replaced (4409).
  const { code } = await (await api(`/api/runners/${second.runnerId}/pairing-code`, { method: 'POST' })).json();
  const other = sandbox();
  sandboxes.push(other);
  const repaired = await runCli(other, ['pair', '--server', `http://127.0.0.1:${port}`, '--code', code, '--no-detect']);
  assert.is(repaired.status, 0, repaired.stderr);
  assert.equal(await old.exited, { code: 78, signal: null });
  assert.match(old.output(), /4409|newer pairing/);
  const fresh = startDaemon(other);
  await fresh.waitFor(/connected to/, 15_000);
  assert.is((await runnerRow(second.runnerId)).status, 'online');
  await fresh.kill('SIGTERM');
});

test('the server hands out the runner: GET /svc-runner.mjs is the bundle, and it runs as downloaded', async () => {
  const res = await fetch(`http://127.0.0.1:${port}/svc-runner.mjs`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /javascript/);
  const body = Buffer.from(await res.arrayBuffer());
  assert.ok(body.equals(readFileSync(BUNDLE)), 'the same bytes as dist/svc-runner.mjs');
  const sb = sandbox();
  sandboxes.push(sb);
  const file = join(sb.bin, 'svc-runner');
  writeFileSync(file, body, { mode: 0o755 });
  const out = execFileSync(file, ['version'], { env: sb.env, encoding: 'utf8' });
  assert.match(out, /^\d+\.\d+\.\d+ linux-(amd64|arm64)\n$/);
});

test.run();
