// Ingest end to end with the REAL server (PGlite or PostgreSQL per SVC_TEST_DB) and the real runner
// bundle paired with it: the generated transcripts with every counting trap (test/usage/_fixtures.ts)
// are ingested, and the llm.request events the server stored for the runner (runner_events; the
// latest event per request key, as the server applies them) sum, per day, runtime and model, to exactly
// what `svc-runner usage daily --json` reports for the same files. A restart in the middle sends nothing again.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { writeFixtures } from '../usage/_fixtures.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let server: RunningServer;
let sb: Sandbox;

test.before(async () => {
  dbEnv = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: dbEnv.env });
  sb = sandbox();
});
test.after(async () => {
  await killDaemons();
  await server?.cleanup();
  await dbEnv?.cleanup();
  sb?.cleanup();
});

interface Row { date: string; runtime: string; model: string; inputTokens: number; outputTokens: number; cacheCreationTokens: number; cacheReadTokens: number }

test('runner_events hold exactly the requests `usage daily --json` reports, after ingest and a restart', async () => {
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'ingest-e2e' } })).json();
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  assert.ok(sb.readConfig().sessions?.ingestSince, 'pair sets sessions.ingestSince');
  // Written after pairing, so none is older than ingestSince.
  const fx = writeFixtures(join(sb.dir, 'fx'));
  const env = { CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome, SVC_INGEST_NO_WATCHER: '1', SVC_INGEST_POLL_MS: '200', SVC_INGEST_HOLD_MS: '300' };
  const offsets = () => {
    try {
      return JSON.parse(readFileSync(join(sb.env.XDG_STATE_HOME, 'svc', 'offsets.json'), 'utf8'));
    } catch {
      return null;
    }
  };
  const allRead = () => {
    const o = offsets();
    if (!o) return false;
    const files = Object.entries(o.files) as [string, any][];
    return files.length >= 8 && files.every(([p, r]) => r.offset === statSync(p).size);
  };
  let daemon = startDaemon(sb, env);
  await waitUntil(allRead, 30_000, () => `every transcript read\n${daemon.output().slice(-2000)}`);
  await waitUntil(() => sb.spoolFiles().length === 0, 30_000, 'the spool drained');
  assert.is((await daemon.kill()).code, 0);
  daemon = startDaemon(sb, env);
  await daemon.waitFor(/session ingest: /);
  await waitUntil(allRead, 30_000, 'offsets after the restart');
  await waitUntil(() => sb.spoolFiles().length === 0, 30_000, 'the spool drained');
  assert.is((await daemon.kill()).code, 0);

  const local = await runCli(sb, ['usage', 'daily', '--json'], { CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome });
  assert.is(local.status, 0, local.stderr);
  const days: Row[] = JSON.parse(local.stdout).days.map(({ costUSD: _c, ...r }: Row & { costUSD: unknown }) => r);

  // The server's own tables agree with the local command (issue #14 item 5): per day in UTC, every
  // token kind exactly and the cost to a millionth of a dollar.
  const utc = await runCli(sb, ['usage', 'daily', '--json', '--tz', 'UTC'], { CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome });
  assert.is(utc.status, 0, utc.stderr);
  type Day = { input: number; output: number; cacheCreation: number; cacheRead: number; cost: number };
  const localDays = new Map<string, Day>();
  for (const r of JSON.parse(utc.stdout).days) {
    const d = localDays.get(r.date) ?? { input: 0, output: 0, cacheCreation: 0, cacheRead: 0, cost: 0 };
    d.input += r.inputTokens;
    d.output += r.outputTokens;
    d.cacheCreation += r.cacheCreationTokens;
    d.cacheRead += r.cacheReadTokens;
    d.cost += r.costUSD ?? 0;
    localDays.set(r.date, d);
  }
  const cost = await (await server.api('/api/cost?groupBy=day&tz=UTC')).json();
  const serverDays = new Map<string, Day>(
    cost.groups.map((g: any) => [g.key, { input: g.inputTokens, output: g.outputTokens, cacheCreation: g.cacheWrite5mTokens + g.cacheWrite1hTokens, cacheRead: g.cacheReadTokens, cost: g.costUsd }]),
  );
  assert.equal([...serverDays.keys()].sort(), [...localDays.keys()].sort(), 'the same days');
  for (const [date, d] of localDays) {
    const s = serverDays.get(date)!;
    assert.equal([s.input, s.output, s.cacheCreation, s.cacheRead], [d.input, d.output, d.cacheCreation, d.cacheRead], `${date}: tokens`);
    assert.ok(Math.abs(s.cost - d.cost) < 1e-6, `${date}: cost ${s.cost} on the server, ${d.cost} locally`);
  }

  await server.stop('SIGTERM');
  const db = dbEnv.env.DATABASE_URL ? await openPostgres(dbEnv.env.DATABASE_URL, 2) : await openPglite(dbEnv.env.PGLITE_DATA_DIR);
  let events: { event_id: string; kind: string; payload: any }[];
  try {
    events = await db.query(sql`select event_id, kind, payload from runner_events where runner_id = ${made.runner.id} and kind in ('llm.request', 'session.meta') order by received_at, event_id`);
  } finally {
    await db.close();
  }
  const latest = new Map<string, any>();
  // A key sent twice is a dedup replacement: the server applies them in spool order (one batch in
  // flight), and a replacement is always the better line — more tokens (docs/cost.md) — so take that.
  const total = (p: any) => p.inputTokens + p.outputTokens + p.cacheWrite5mTokens + p.cacheWrite1hTokens + p.cacheReadTokens;
  for (const e of events.filter((x) => x.kind === 'llm.request')) {
    const k = `${e.payload.runtime}\u0000${e.payload.key}`;
    if (!latest.has(k) || total(e.payload) > total(latest.get(k))) latest.set(k, e.payload);
  }
  const rows = new Map<string, Row>();
  for (const p of latest.values()) {
    const model = p.runtime === 'claude' && p.speed === 'fast' ? `${p.model}-fast` : p.model;
    const date = p.at.slice(0, 10);
    const k = `${date}\u0000${p.runtime}\u0000${model}`;
    const r = rows.get(k) ?? { date, runtime: p.runtime, model, inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 };
    r.inputTokens += p.inputTokens;
    r.outputTokens += p.outputTokens;
    r.cacheCreationTokens += p.cacheWrite5mTokens + p.cacheWrite1hTokens;
    r.cacheReadTokens += p.cacheReadTokens;
    rows.set(k, r);
  }
  const cmp = (a: Row, b: Row) => `${a.date}\u0000${a.runtime}\u0000${a.model}`.localeCompare(`${b.date}\u0000${b.runtime}\u0000${b.model}`);
  assert.equal([...rows.values()].sort(cmp), [...days].sort(cmp));
  // Sessions arrived too, with their models, and nothing private.
  const metas = events.filter((e) => e.kind === 'session.meta').map((e) => e.payload);
  assert.ok(metas.some((m) => m.runtime === 'codex' && m.branch === 'feature-x'));
  assert.ok(metas.some((m) => m.runtime === 'claude' && m.models.includes('claude-opus-4-5-20251101')));
  assert.not.ok(JSON.stringify(events).includes('answer 1'), 'no response text is sent');
});

test('a runner offline while its agents work catches up from the spool once the server is back: nothing lost, nothing counted twice', async () => {
  const db2 = await serverDbEnv();
  const sb2 = sandbox();
  let second: RunningServer | null = null;
  const first = await startServer({ admin: true, dbEnv: db2.env });
  try {
    const made = await (await first.api('/api/runners', { method: 'POST', json: { name: 'ingest-offline' } })).json();
    const paired = await runCli(sb2, ['pair', '--server', first.url, '--code', made.code, '--no-detect']);
    assert.is(paired.status, 0, paired.stderr);
    const { token } = first.admin;
    await first.stop('SIGTERM'); // the server is gone before the daemon ever connects
    const fx = writeFixtures(join(sb2.dir, 'fx'));
    const env = { CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome, SVC_INGEST_NO_WATCHER: '1', SVC_INGEST_POLL_MS: '200', SVC_INGEST_HOLD_MS: '300' };
    let daemon = startDaemon(sb2, env);
    const offsetsPath = join(sb2.env.XDG_STATE_HOME, 'svc', 'offsets.json');
    const allRead = () => {
      try {
        const files = Object.entries(JSON.parse(readFileSync(offsetsPath, 'utf8')).files) as [string, any][];
        return files.length >= 8 && files.every(([f, r]) => r.offset === statSync(f).size);
      } catch {
        return false;
      }
    };
    await waitUntil(allRead, 30_000, () => `every transcript read while offline\n${daemon.output().slice(-2000)}`);
    const spooled = sb2.spoolFiles().length;
    assert.ok(spooled > 0, 'the events wait in the spool');
    // The machine restarts the runner (its reconnect backoff may by now be up to a minute), and the
    // server is back on the same address: what waited in the spool is sent, and only once.
    assert.is((await daemon.kill()).code, 0);
    second = await startServer({ dbEnv: db2.env, env: { PORT: String(first.port) } });
    daemon = startDaemon(sb2, env);
    await waitUntil(() => sb2.spoolFiles().length === 0, 60_000, () => `the spool drained (${sb2.spoolFiles().length} of ${spooled} left)\n${daemon.output().slice(-2000)}`);
    assert.is((await daemon.kill()).code, 0);
    const local = await runCli(sb2, ['usage', 'daily', '--json', '--tz', 'UTC'], { CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome });
    assert.is(local.status, 0, local.stderr);
    const sum = (rows: any[], f: (r: any) => number) => rows.reduce((a, r) => a + f(r), 0);
    const days = JSON.parse(local.stdout).days;
    const cost = await (await fetch(`${second.url}/api/cost?groupBy=day&tz=UTC`, { headers: { authorization: `Bearer ${token}` } })).json();
    const t = cost.totals;
    assert.equal(
      [t.inputTokens, t.outputTokens, t.cacheWrite5mTokens + t.cacheWrite1hTokens, t.cacheReadTokens],
      [sum(days, (r) => r.inputTokens), sum(days, (r) => r.outputTokens), sum(days, (r) => r.cacheCreationTokens), sum(days, (r) => r.cacheReadTokens)],
    );
    assert.ok(Math.abs(t.costUsd - sum(days, (r) => r.costUSD ?? 0)) < 1e-6, `cost ${t.costUsd} on the server`);
  } finally {
    await killDaemons();
    await second?.cleanup();
    await first.cleanup();
    await db2.cleanup();
    sb2.cleanup();
  }
});

test.run();
