#!/usr/bin/env node
// GET /api/live fan-out figures: notices/s delivered to 200 connected live sockets (pages).
//   1. end to end, one process (PGlite, and PostgreSQL): a runner socket sends skill_run.progress
//      events for many runs; each stored batch publishes one `run.progress` notice per run; time from
//      the first batch until every socket has every notice.
//   0. baseline, same run: a bare `ws` server broadcasting as many messages to as many sockets.
//   2. fan-out only, PostgreSQL: notices injected with pg_notify on the live channel by a separate
//      client (what a writer's commit does), to 200 sockets on one process, then split 100/100 over two
//      processes on the same database.
// Figures: notices/s (distinct notices, all delivered to every socket) and deliveries/s (× sockets).
//
//   npm run bench:live [-- --sockets 200 --notices 2000]
// Loopback only; bounded counts; every process and database it makes is removed at the end.
import { execSync, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import WebSocket from 'ws';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { freshPostgres } from '../test/helpers/db.ts';
import { openLive } from '../test/helpers/live.ts';
import { startServer } from '../test/helpers/server.ts';
import { callAs } from '../test/helpers/users.ts';
import { connect, pairRunner } from '../test/helpers/wsclient.ts';

const { values: opt } = parseArgs({ options: { sockets: { type: 'string', default: '200' }, notices: { type: 'string', default: '2000' }, batch: { type: 'string', default: '50' } } });
const N = { sockets: Number(opt.sockets), notices: Number(opt.notices), batch: Number(opt.batch) };
const log = (m) => process.stderr.write(m + '\n');
const r0 = (x) => Math.round(x);
// Every socket here is the admin's: one user. The server holds at most LIVE_MAX_SOCKETS_PER_USER (20 by
// default, since 5775544) live sockets per user per process and refuses one more with too_many_sockets, so
// the servers of this bench allow as many as it opens (the cap is a guard against one user, not a cost).
const env = { LIVE_MAX_SOCKETS_PER_USER: String(Math.max(20, N.sockets)) };

/** Open `count` live sockets spread over `servers` (round robin) as the admin; resolves once all are ready. */
async function sockets(servers, token, count) {
  const all = Array.from({ length: count }, (_, i) => openLive(servers[i % servers.length].url, { token, origin: null }));
  await Promise.all(all.map((s) => s.next((n) => n.type === 'ready', 60_000)));
  // From here on only counted (no parsing, nothing kept): the client must not be what is measured.
  for (const s of all) s.ws.removeAllListeners('message');
  return all;
}

/** Resolves when every socket got `want` messages containing `marker`; the elapsed ms since `t0`. */
async function allReceived(all, marker, want, t0, timeoutMs = 600_000) {
  const counted = all.map(() => 0);
  const needle = Buffer.from(marker);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not all delivered: ${counted.reduce((a, b) => a + b, 0)} of ${want * all.length}`)), timeoutMs);
    let done = 0;
    all.forEach((s, i) => {
      s.ws.on('message', (d) => {
        if (counted[i] < want && d.includes(needle) && ++counted[i] === want && ++done === all.length) (clearTimeout(timer), resolve());
      });
    });
  });
  return performance.now() - t0;
}

/** Scenario 1: runner events → stored → notices → every socket. */
async function endToEnd(label, dbEnv) {
  const server = await startServer({ admin: true, dbEnv, env });
  try {
    const runner = await pairRunner(server.api, server.url, 'bench');
    const p = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'Bench', repo: 'acme/bench', runnerId: runner.runnerId, rootPath: '/srv/bench' } });
    const projectId = p.body.id;
    const rc = connect(server.url, runner.token);
    await rc.next('welcome');
    // The runs exist first (a state event each), so every progress event later makes one notice.
    const runs = Array.from({ length: N.batch }, (_, i) => `bench-${randomBytes(3).toString('hex')}-${i}`);
    const now = new Date().toISOString();
    rc.send({
      type: 'events',
      events: runs.map((runId) => ({ id: `s-${runId}`, source: `project:${projectId}`, kind: 'skill_run.state', ts: now, payload: { runId, project: projectId, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state: 'running', at: now } })),
    });
    await rc.next('ack');
    const all = await sockets([server], server.admin.token, N.sockets);
    const batches = Math.ceil(N.notices / N.batch);
    const t0 = performance.now();
    const done = allReceived(all, '"run.progress"', batches * N.batch, t0);
    for (let b = 0; b < batches; b++) {
      rc.send({ type: 'events', events: runs.map((runId) => ({ id: `p-${runId}-${b}`, source: `project:${projectId}`, kind: 'skill_run.progress', ts: now, payload: { runId, lines: [{ seq: b + 1, text: `line ${b}` }] } })) });
      await rc.next('ack', 120_000);
    }
    const ms = await done;
    for (const s of all) s.close();
    rc.ws.close();
    const notices = batches * N.batch;
    return { scenario: `end to end, ${label}, 1 process`, sockets: N.sockets, notices, seconds: ms / 1000, noticesPerSec: r0(notices / (ms / 1000)), deliveriesPerSec: r0((notices * N.sockets) / (ms / 1000)) };
  } finally {
    await server.cleanup();
  }
}

/** Scenario 2: pg_notify from outside → fan-out to sockets on `processes` servers. */
async function fanOut(processes) {
  const pg = await freshPostgres();
  const servers = [];
  const client = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    servers.push(await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url }, env }));
    for (let i = 1; i < processes; i++) servers.push(await startServer({ dbEnv: { DATABASE_URL: pg.url }, env }));
    const all = await sockets(servers, servers[0].admin.token, N.sockets);
    const t0 = performance.now();
    const done = allReceived(all, '"bench.', N.notices, t0);
    for (let i = 0; i < N.notices; i += 100) {
      // Distinct payloads: PostgreSQL delivers identical notifications of one transaction once.
      const payloads = Array.from({ length: Math.min(100, N.notices - i) }, (_, j) => JSON.stringify({ to: { admins: true }, n: { type: 'fleet', projectId: 'bench', kind: `bench.${i + j}` } }));
      await client`select pg_notify('svc_live', x) from unnest(${payloads}::text[]) as x`;
    }
    const ms = await done;
    for (const s of all) s.close();
    return { scenario: `fan-out only, postgres, ${processes} process${processes > 1 ? 'es' : ''}`, sockets: N.sockets, notices: N.notices, seconds: ms / 1000, noticesPerSec: r0(N.notices / (ms / 1000)), deliveriesPerSec: r0((N.notices * N.sockets) / (ms / 1000)) };
  } finally {
    await client.end();
    await Promise.all(servers.map((s) => s.cleanup()));
    await pg.drop();
  }
}

/**
 * Baseline, same run: a bare `ws` server in its own process broadcasting the same number of small JSON
 * messages to the same number of sockets, one message to all sockets at a time, yielding between.
 */
async function baseline() {
  const code = `
    import { WebSocketServer } from 'ws';
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    wss.on('listening', () => console.log('port=' + wss.address().port));
    process.stdin.on('data', async () => {
      for (let i = 0; i < ${N.notices}; i++) {
        const data = Buffer.from(JSON.stringify({ type: 'fleet', projectId: 'bench', kind: 'bench.' + i }));
        for (const ws of wss.clients) ws.send(data, { binary: false });
        await new Promise((r) => setImmediate(r));
      }
    });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const port = await new Promise((r) => child.stdout.on('data', (d) => /port=(\d+)/.test(String(d)) && r(Number(/port=(\d+)/.exec(String(d))[1]))));
    const all = Array.from({ length: N.sockets }, () => new WebSocket(`ws://127.0.0.1:${port}`));
    await Promise.all(all.map((ws) => new Promise((r) => ws.once('open', r))));
    const t0 = performance.now();
    const done = allReceived(all.map((ws) => ({ ws })), '"bench.', N.notices, t0);
    child.stdin.write('go\n');
    const ms = await done;
    for (const ws of all) ws.close();
    return { scenario: 'baseline: bare ws broadcast, 1 process', sockets: N.sockets, notices: N.notices, seconds: ms / 1000, noticesPerSec: r0(N.notices / (ms / 1000)), deliveriesPerSec: r0((N.notices * N.sockets) / (ms / 1000)) };
  } finally {
    child.kill();
  }
}

const results = [];
const loadStart = loadavg()[0];
log(`live fan-out: ${N.sockets} sockets, ${N.notices} notices`);
results.push(await baseline());
log(JSON.stringify(results.at(-1)));
results.push(await endToEnd('pglite', undefined));
log(JSON.stringify(results.at(-1)));
{
  const pg = await freshPostgres();
  try {
    results.push(await endToEnd('postgres', { DATABASE_URL: pg.url }));
  } finally {
    await pg.drop();
  }
}
log(JSON.stringify(results.at(-1)));
results.push(await fanOut(1));
log(JSON.stringify(results.at(-1)));
results.push(await fanOut(2));
log(JSON.stringify(results.at(-1)));

console.log('| scenario | sockets | notices | s | notices/s | deliveries/s |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const r of results) console.log(`| ${r.scenario} | ${r.sockets} | ${r.notices} | ${r.seconds.toFixed(2)} | ${r.noticesPerSec} | ${r.deliveriesPerSec} |`);
console.log(JSON.stringify({ bench: 'live', loadAverage: { start: loadStart, end: loadavg()[0] }, commit: execSync('git rev-parse --short HEAD').toString().trim(), node: process.version, cpus: (await import('node:os')).cpus().length, results }));
process.exit(0);
