// Gemini CLI ingest end to end (issue #43): the real runner bundle paired with the real server ingests the
// generated chat files with every trap (test/usage/_gemini-fixtures.ts) through its RecordReader, and the
// server's cost per day for runtime gemini equals `svc-runner usage daily --json --runtime gemini` for the
// same files, token for token and to a millionth of a dollar; a restart of the daemon counts nothing twice.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { writeGeminiFixtures } from '../usage/_gemini-fixtures.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';

let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let server: RunningServer;
const sb = sandbox();

test.before(async () => {
  dbEnv = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: dbEnv.env });
});
test.after(async () => {
  await killDaemons();
  await server?.cleanup();
  await dbEnv?.cleanup();
  sb.cleanup();
});

type Day = { input: number; output: number; cacheRead: number; cost: number };

test('the server holds exactly what `usage daily --runtime gemini` reports, after ingest and a restart', async () => {
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'gemini-ingest' } })).json();
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  const fx = writeGeminiFixtures(join(sb.dir, 'fx')); // written after pairing: newer than ingestSince
  const env = { GEMINI_DATA_DIR: fx.roots.join(','), SVC_INGEST_NO_WATCHER: '1', SVC_INGEST_POLL_MS: '200', SVC_INGEST_HOLD_MS: '300' };
  const local = await runCli(sb, ['usage', 'daily', '--json', '--tz', 'UTC', '--runtime', 'gemini'], env);
  assert.is(local.status, 0, local.stderr);
  const want = new Map<string, Day>();
  for (const r of JSON.parse(local.stdout).days) {
    const d = want.get(r.date) ?? { input: 0, output: 0, cacheRead: 0, cost: 0 };
    want.set(r.date, { input: d.input + r.inputTokens, output: d.output + r.outputTokens, cacheRead: d.cacheRead + r.cacheReadTokens, cost: d.cost + r.costUSD });
  }
  assert.ok(want.size >= 3);
  const serverDays = async () => {
    const cost = await (await server.api('/api/cost?groupBy=day&tz=UTC&runtime=gemini&from=2026-05-01&to=2026-07-01')).json();
    return new Map<string, Day>(cost.groups.map((g: any) => [g.key, { input: g.inputTokens, output: g.outputTokens, cacheRead: g.cacheReadTokens, cost: g.costUsd }]));
  };
  const same = (a: Map<string, Day>) =>
    [...want].every(([k, d]) => {
      const s = a.get(k);
      return s && s.input === d.input && s.output === d.output && s.cacheRead === d.cacheRead && Math.abs(s.cost - d.cost) < 1e-6;
    }) && a.size === want.size;
  let daemon = startDaemon(sb, env);
  await waitUntil(async () => same(await serverDays()), 30_000, () => `the server has every request\n${daemon.output().slice(-1500)}`);
  assert.is((await daemon.kill()).code, 0);
  daemon = startDaemon(sb, env);
  await daemon.waitFor(/session ingest: /);
  await waitUntil(() => sb.spoolFiles().length === 0, 30_000, 'the spool drained after the restart');
  assert.is((await daemon.kill()).code, 0);
  const after = await serverDays();
  assert.ok(same(after), `nothing counted twice: ${JSON.stringify([...after])}`);
  const sessions = (await (await server.api('/api/sessions?runtime=gemini&limit=50&from=2026-05-01&to=2026-07-01')).json()).sessions;
  assert.is(sessions.length, fx.cwd.size, 'one session per chat session id');
});

test.run();
