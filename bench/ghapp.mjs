#!/usr/bin/env node
// Code-host app webhook → collector.poll figures on PostgreSQL (docs/performance.md, "GitHub App
// webhooks"; issue 15 figures): the time from a signed POST /hooks/github/<appPublicId> leaving the
// sender (on loopback: arriving at the server) to the `collector.poll` command frame arriving at the
// runner's socket, p50/p99 over --deliveries sequential deliveries (unique delivery ids, a push event of
// the project's repository), on one clock (sender and runner socket live in this process).
// Baseline, interleaved with the deliveries (webhook, baseline, webhook, …): an instance admin's
// POST /api/runners/:id/commands `collector.poll` — the admin API's way to the same command — timed
// from the request leaving to the frame arriving. Two placements of the runner's socket:
//   here     held by the server that receives the webhook (sent directly)
//   replica  held by a second server process on the same database (runner_commands row + NOTIFY)
// Also the time to the hook's 202 (the poll goes out right after the answer). A protocol client stands
// in for the runner and answers each collector.poll at once, so every delivery ends `polled` (counted).
// The server is the real dist/server.mjs (two for `replica`) on a fresh database; admin, runner,
// project and app are made through the API. Loopback only; bounded counts; every process and database
// it makes is removed at the end. Output: progress on stderr, a table on stdout, then one JSON line.
//
//   npm run bench:ghapp -- [--deliveries 300] [--warmup 20]
//   node --import tsx bench/ghapp.mjs [--deliveries 300] [--warmup 20]
import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { githubSignature } from '../functions/codehost/verify.ts';
import { freshPostgres } from '../test/helpers/db.ts';
import { connect } from '../test/helpers/wsclient.ts';
import { appOnTwoServers } from './codehost-setup.mjs';
import { distHash, installGuards, machine, percentile, postgresVersion, round, wholeOption } from './lib.mjs';

const { values: opt } = parseArgs({ options: { deliveries: { type: 'string', default: '300' }, warmup: { type: 'string', default: '20' } } });
const N = wholeOption('deliveries', opt.deliveries, 10, 10_000);
const WARMUP = wholeOption('warmup', opt.warmup, 0, 1_000);
const log = (m) => process.stderr.write(`${m}\n`);
installGuards(900);

const KEY = randomBytes(32).toString('base64');
const pg = await freshPostgres();
const cleanups = [() => pg.drop()];
const figures = { ...machine(), postgres: await postgresVersion(pg.url), deliveries: N, warmup: WARMUP };
const stats = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  return { p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), max: round(s[s.length - 1]) };
};
try {
  const { a, b, runner, app } = await appOnTwoServers({ url: pg.url, key: KEY, name: 'bench-ghapp', repo: 'acme/bench', cleanups });
  const body = JSON.stringify({ ref: 'refs/heads/main', after: '1'.repeat(40), repository: { full_name: 'Acme/Bench' }, installation: { id: 1 }, commits: [] });
  const signature = githubSignature(app.webhookSecret, body);
  const webhook = () =>
    fetch(app.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signature },
      body,
    });
  const apiCommand = () =>
    fetch(`${a.url}/api/runners/${runner.runnerId}/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.admin.token}`, 'content-type': 'application/json' },
      body: '{"name":"collector.poll","args":{}}',
    });

  /** One placement: the runner's socket on `holder`; webhooks and API commands to server A. */
  async function phase(name, holder) {
    const ws = connect(holder.url, runner.token);
    await ws.next('welcome');
    let arrived = null;
    ws.ws.on('message', (d) => {
      const f = JSON.parse(d.toString());
      if (f.type !== 'command' || f.name !== 'collector.poll') return;
      arrived?.(performance.now());
      ws.ws.send(JSON.stringify({ type: 'result', requestId: f.requestId, ok: true, data: { polled: true } }));
    });
    /** Time from the request leaving to its answer, and to the command frame arriving. */
    async function timed(send, expect, what) {
      const frame = new Promise((r) => (arrived = r));
      const t0 = performance.now();
      const res = await send();
      await res.arrayBuffer();
      const t1 = performance.now();
      if (res.status !== expect) throw new Error(`${what}: ${res.status}`);
      let timer;
      const t2 = await Promise.race([frame, new Promise((_, rej) => (timer = setTimeout(() => rej(new Error(`${what}: no collector.poll within 30 s`)), 30_000)))]);
      clearTimeout(timer);
      return { answer: t1 - t0, command: t2 - t0 };
    }
    const hook = { command: [], answer: [] };
    const base = { command: [] };
    log(`${name}: ${WARMUP} warm-up + ${N} deliveries, each followed by an API command…`);
    for (let i = 0; i < WARMUP + N; i++) {
      const h = await timed(webhook, 202, `delivery ${i}`);
      const c = await timed(apiCommand, 200, `API command ${i}`);
      if (i < WARMUP) continue;
      hook.command.push(h.command);
      hook.answer.push(h.answer);
      base.command.push(c.command);
    }
    ws.ws.close();
    await ws.closed;
    const r = { webhookToCommand: stats(hook.command), webhookTo202: stats(hook.answer), apiToCommand: stats(base.command) };
    r.ratioP50 = round(r.webhookToCommand.p50 / r.apiToCommand.p50);
    r.ratioP99 = round(r.webhookToCommand.p99 / r.apiToCommand.p99);
    return r;
  }

  figures.here = await phase('here', a);
  figures.replica = await phase('replica', b);
  // Every delivery should end `polled` (its answer recorded): counted, waiting up to 10 s for the last ones.
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    const until = Date.now() + 10_000;
    for (;;) {
      [{ n: figures.polledRecorded }] = await sql`select count(*)::int as n from codehost_deliveries where outcome = 'polled'`;
      if (figures.polledRecorded >= 2 * (N + WARMUP) || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await sql.end();
  }
} finally {
  for (const f of cleanups) await f().catch(() => {});
}
figures.loadavg1End = round(os.loadavg()[0], 2);
figures.distEnd = distHash();

const row = (label, s) => `| ${label} | ${s.p50} ms | ${s.p99} ms | ${s.max} ms |`;
console.log(`
| ${N} sequential deliveries, PostgreSQL | p50 | p99 | max |
|---|---:|---:|---:|
${row("webhook → collector.poll at the runner, socket on the receiving server", figures.here.webhookToCommand)}
${row('… the hook’s 202', figures.here.webhookTo202)}
${row('baseline: admin API command → the same frame', figures.here.apiToCommand)}
| ratio to the baseline | ${figures.here.ratioP50}× | ${figures.here.ratioP99}× | |
${row('webhook → collector.poll at the runner, socket on another server process', figures.replica.webhookToCommand)}
${row('… the hook’s 202', figures.replica.webhookTo202)}
${row('baseline: admin API command → the same frame', figures.replica.apiToCommand)}
| ratio to the baseline | ${figures.replica.ratioP50}× | ${figures.replica.ratioP99}× | |

deliveries recorded \`polled\`: ${figures.polledRecorded} of ${2 * (N + WARMUP)}; load average ${figures.loadavg1} at the start, ${figures.loadavg1End} at the end
`);
console.log(JSON.stringify(figures));
