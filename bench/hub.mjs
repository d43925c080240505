#!/usr/bin/env node
// Runner hub figures on PostgreSQL, with protocol clients standing in for runners (the runner bundle's
// own figures — idle RSS, spool throughput — are measured by bench/runner.mjs once it exists):
//   1. command round trip: POST /api/runners/:id/commands runner.ping, client answers at once;
//      baseline: GET /api/me (an authenticated API call with one query) — same run, ratio.
//   2. ingest: events/s from `events` frames (1 KB events, batches) to acked-in-PostgreSQL;
//      baseline: the same rows INSERTed by postgres.js directly into the same table (runner_events,
//      with the runner's id, other event ids) — same run, ratio. Also, as a diagnosis of what the
//      table's foreign key and indexes cost, the rows without the runner's id into a table with a
//      primary key only ("plain").
//   2b. ingest from many runners at once: the --runners runners of (3), each sending its share of
//      --many-events in frames of --batch, one frame in flight per runner, all at once; events/s from the
//      first send to the last ack. Baseline: the same rows INSERTed directly by postgres.js into
//      runner_events with the server's pool size (DATABASE_POOL_MAX, 10) and the same concurrency (one
//      loop per runner); the plain table as above.
//   3. reconnection: 100 connected runners, server restarted on the same port; time until all 100
//      are welcomed again, reconnecting with the runner's backoff (1 s doubling to 60 s, ±20 % jitter).
//
//   npm run build && node --import tsx bench/hub.mjs [--pings 300] [--events 20000] [--batch 100] [--runners 100]
//                                                    [--many-events 50000] [--rounds 3]
// The two ingest figures are measured in --rounds rounds, the hub and its baseline in turns; medians.
// Loopback only; bounded counts; every process and database it makes is removed at the end.
import { createRequire } from 'node:module';
import { execSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import WebSocket from 'ws';
import { freshPostgres } from '../test/helpers/db.ts';
import { startServer } from '../test/helpers/server.ts';
import { benchEvents, cpuMs, median, round } from './lib.mjs';
import { connect, pairRunner } from '../test/helpers/wsclient.ts';

const { values: opt } = parseArgs({
  options: {
    pings: { type: 'string', default: '300' },
    events: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '100' },
    runners: { type: 'string', default: '100' },
    'many-events': { type: 'string', default: '50000' },
    rounds: { type: 'string', default: '3' },
  },
});
const N = { pings: Number(opt.pings), events: Number(opt.events), batch: Number(opt.batch), runners: Number(opt.runners), manyEvents: Number(opt['many-events']), rounds: Number(opt.rounds) };
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const r1 = (x) => Math.round(x * 10) / 10;
const log = (m) => process.stderr.write(m + '\n');

const pg = await freshPostgres();
const cleanups = [() => pg.drop()];
// ws masks and unmasks frames with bufferutil (native) when it is installed, unless WS_NO_BUFFER_UTIL is
// set: set it on this command to measure without it — the server and the clients then both go without.
const wsEnv = process.env.WS_NO_BUFFER_UTIL ? { WS_NO_BUFFER_UTIL: '1' } : {};
const figures = { commit: execSync('git rev-parse --short HEAD').toString().trim(), node: process.version, bufferutil: !process.env.WS_NO_BUFFER_UTIL && hasBufferutil() };
function hasBufferutil() {
  try {
    return typeof createRequire(import.meta.url)('bufferutil').mask === 'function';
  } catch {
    return false;
  }
}
try {
  let server = await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url }, env: wsEnv });
  cleanups.unshift(() => server.cleanup());
  const auth = { authorization: `Bearer ${server.admin.token}`, 'content-type': 'application/json' };

  // 1. command round trip
  log('command round trip…');
  const { runnerId, token } = await pairRunner(server.api, server.url, 'bench');
  const c = connect(server.url, token);
  await c.next('welcome');
  c.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type === 'command') c.ws.send(JSON.stringify({ type: 'result', requestId: f.requestId, ok: true, data: { pong: true } }));
  });
  const time = async (fn) => {
    const t = performance.now();
    const r = await fn();
    if (r.status !== 200) throw new Error(`status ${r.status}`);
    await r.arrayBuffer();
    return performance.now() - t;
  };
  const ping = () => fetch(`${server.url}/api/runners/${runnerId}/commands`, { method: 'POST', headers: auth, body: '{"name":"runner.ping"}' });
  const me = () => fetch(`${server.url}/api/me`, { headers: auth });
  for (let i = 0; i < 20; i++) await time(ping), await time(me);
  const pings = [];
  const mes = [];
  for (let i = 0; i < N.pings; i++) {
    pings.push(await time(ping));
    mes.push(await time(me));
  }
  figures.command = {
    count: N.pings,
    ping: { p50: r1(pct(pings, 50)), p99: r1(pct(pings, 99)) },
    apiMe: { p50: r1(pct(mes, 50)), p99: r1(pct(mes, 99)) },
    ratioP50: r1(pct(pings, 50) / pct(mes, 50)),
    ratioP99: r1(pct(pings, 99) / pct(mes, 99)),
  };
  c.ws.close();

  // 2. ingest: --rounds rounds, the hub and the direct INSERT in turns (which goes first alternates), fresh ids
  // each round; the figures are the medians of the rounds (the machine is noisy: docs/performance.md).
  log('ingest…');
  const ev = benchEvents(900);
  const batchOf = (n, id) => Array.from({ length: n }, (_, k) => ev(id(k)));
  const toRows = (events) => events.map((e) => ({ event_id: e.id, source: e.source, kind: e.kind, ts: e.ts, payload: e.payload }));
  /** The rows as the hub stores them: in runner_events, under the runner that sent them. */
  const asStored = (runnerId, events) => toRows(events).map((r) => ({ runner_id: runnerId, ...r }));
  const { token: t2, runnerId: ingestRunner } = await pairRunner(server.api, server.url, 'ingest');
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  cleanups.unshift(() => sql.end());
  await sql`create table bench_events (event_id text primary key, source text, kind text, ts timestamptz, payload jsonb)`;
  const timed = async (fn) => {
    const t = performance.now();
    await fn();
    return (performance.now() - t) / 1000;
  };
  /** The rounds' medians (and the ratio's range). */
  const summary = (runs) => ({
    hubEventsPerSecond: Math.round(median(runs.hub)),
    directInsertPerSecond: Math.round(median(runs.direct)),
    ratio: round(median(runs.ratio), 3),
    ratioRange: [round(Math.min(...runs.ratio), 3), round(Math.max(...runs.ratio), 3)],
    plainInsertPerSecond: Math.round(median(runs.plain)),
    ratioToPlain: round(median(runs.hub.map((h, i) => h / runs.plain[i])), 3),
    serverCpuMsPer1000Events: round(median(runs.cpu), 1),
  });
  /** Time a hub pass, and the server's CPU ms (from /proc) per 1,000 events during it. */
  const hubPass = async (fn, events, into) => {
    const c0 = cpuMs(server.proc.pid);
    const seconds = await timed(fn);
    const c1 = cpuMs(server.proc.pid);
    into.push(c0 === null || c1 === null ? NaN : ((c1 - c0) / events) * 1000);
    return seconds;
  };
  const single = { hub: [], direct: [], plain: [], ratio: [], cpu: [] };
  for (let round = 0; round < N.rounds; round++) {
    const id = (i) => (k) => `b-${round}-${i + k}`;
    // A connection per round: each may send 100 frames/s with a burst of 200 (functions/runners/socket.ts
    // FRAME_RATE), and one round of 200 frames of 100 events is sent faster than that.
    const c2 = connect(server.url, t2);
    await c2.next('welcome');
    const hub = () =>
      hubPass(async () => {
        for (let i = 0; i < N.events; i += N.batch) {
          c2.send({ type: 'events', events: batchOf(Math.min(N.batch, N.events - i), id(i)) });
          await c2.next('ack', 30_000);
        }
      }, N.events, single.cpu);
    /** Every batch of the round written by `write(i, n)` (events i… of n), one after another. */
    const batches = (write) =>
      timed(async () => {
        for (let i = 0; i < N.events; i += N.batch) await write(i, Math.min(N.batch, N.events - i));
      });
    const direct = () => batches((i, n) => sql`insert into runner_events ${sql(asStored(ingestRunner, batchOf(n, (k) => `d${id(i)(k)}`)))} on conflict do nothing`);
    const plain = () => batches((i, n) => sql`insert into bench_events ${sql(toRows(batchOf(n, id(i))))} on conflict do nothing`);
    const [h, d] = round % 2 === 0 ? [await hub(), await direct()] : await direct().then(async (d) => [await hub(), d]);
    const p = await plain();
    single.hub.push(N.events / h);
    single.direct.push(N.events / d);
    single.plain.push(N.events / p);
    single.ratio.push(d / h);
    log(`  round ${round + 1}: hub ${Math.round(N.events / h)} events/s, direct ${Math.round(N.events / d)} rows/s, ratio ${(d / h).toFixed(3)}; plain table ${Math.round(N.events / p)} rows/s`);
    c2.ws.close();
    await c2.closed;
  }
  const [{ stored }] = await sql`select count(*)::int as stored from runner_events where event_id like 'b-%'`;
  figures.ingest = {
    events: N.events,
    batch: N.batch,
    rounds: N.rounds,
    eventBytes: JSON.stringify(ev('b-0-0')).length,
    stored,
    ...summary(single),
  };

  // 3. reconnection after a restart
  log(`${N.runners} runners reconnecting after a restart…`);
  const port = server.port;
  const tokens = [];
  const runnerIds = [];
  for (let i = 0; i < N.runners; i++) {
    const paired = await pairRunner(server.api, server.url, `r${i}`);
    tokens.push(paired.token);
    runnerIds.push(paired.runnerId);
  }

  // 2b. ingest from all of them at once (before the restart: they are paired now), in rounds as above
  {
    const frames = Math.max(1, Math.floor(N.manyEvents / N.runners / N.batch));
    const total = frames * N.batch * N.runners;
    log(`ingest from ${N.runners} runners at once: ${frames} frames of ${N.batch} each, ${total} events per round…`);
    const many = tokens.map((tok) => connect(server.url, tok));
    await Promise.all(many.map((c) => c.next('welcome')));
    const pool = postgres(pg.url, { max: 10, onnotice: () => {} });
    cleanups.unshift(() => pool.end());
    await pool`create table bench_events_many (event_id text primary key, source text, kind text, ts timestamptz, payload jsonb)`;
    const all = { hub: [], direct: [], plain: [], ratio: [], cpu: [] };
    for (let round = 0; round < N.rounds; round++) {
      const id = (r, f) => (k) => `m-${round}-${r}-${f}-${k}`;
      const hub = () =>
        hubPass(() =>
          Promise.all(
            many.map(async (c, r) => {
              for (let f = 0; f < frames; f++) {
                c.send({ type: 'events', events: batchOf(N.batch, id(r, f)) });
                const ack = await c.next('ack', 60_000);
                if (ack.ids.length !== N.batch) throw new Error(`runner ${r} frame ${f}: ${ack.ids.length} ids acked`);
              }
            }),
          ), total, all.cpu);
      /** One loop per runner at once, each writing its frames by `write(runnerId, r, f)`, one after another. */
      const loops = (write) =>
        timed(() =>
          Promise.all(
            runnerIds.map(async (runnerId, r) => {
              for (let f = 0; f < frames; f++) await write(runnerId, r, f);
            }),
          ),
        );
      const direct = () => loops((runnerId, r, f) => pool`insert into runner_events ${pool(asStored(runnerId, batchOf(N.batch, (k) => `d${id(r, f)(k)}`)))} on conflict do nothing`);
      const plain = () => loops((_, r, f) => pool`insert into bench_events_many ${pool(toRows(batchOf(N.batch, id(r, f))))} on conflict do nothing`);
      const [h, d] = round % 2 === 0 ? [await hub(), await direct()] : await direct().then(async (d) => [await hub(), d]);
      const p = await plain();
      all.hub.push(total / h);
      all.direct.push(total / d);
      all.plain.push(total / p);
      all.ratio.push(d / h);
      log(`  round ${round + 1}: hub ${Math.round(total / h)} events/s, direct ${Math.round(total / d)} rows/s, ratio ${(d / h).toFixed(3)}; plain table ${Math.round(total / p)} rows/s`);
    }
    many.forEach((c) => c.ws.close());
    await Promise.all(many.map((c) => c.closed));
    const [{ stored }] = await pool`select count(*)::int as stored from runner_events where event_id like 'm-%'`;
    figures.ingestMany = {
      runners: N.runners,
      events: total * N.rounds,
      batch: N.batch,
      rounds: N.rounds,
      stored,
      ...summary(all),
    };
  }
  let welcomed = 0;
  let allBack;
  const back = new Promise((r) => (allBack = r));
  let stopping = false;
  const clients = tokens.map((tok) => {
    let delay = 1000;
    let first = true;
    const open = () => {
      if (stopping) return;
      const ws = new WebSocket(`ws://127.0.0.1:${port}/runner`, { headers: { authorization: `Bearer ${tok}`, 'x-svc-protocol': '1' } });
      ws.on('message', (d) => {
        if (JSON.parse(d.toString()).type !== 'welcome') return;
        delay = 1000;
        if (first) first = false;
        else if (++welcomed === N.runners) allBack();
      });
      ws.on('error', () => {});
      ws.on('close', () => {
        const wait = delay * (0.8 + Math.random() * 0.4);
        delay = Math.min(60_000, delay * 2);
        setTimeout(open, wait);
      });
      state.ws = ws;
    };
    const state = { open, ws: null };
    return state;
  });
  clients.forEach((cl) => cl.open());
  await new Promise((r) => setTimeout(r, 2000));
  const dbEnv = { DATABASE_URL: pg.url };
  await server.stop();
  const restarted = performance.now();
  server = await startServer({ dbEnv, env: { ...wsEnv, PORT: String(port) } });
  cleanups[0] = () => server.cleanup();
  const listening = performance.now();
  let giveUp;
  await Promise.race([back, new Promise((_, rej) => (giveUp = setTimeout(() => rej(new Error(`only ${welcomed} back after 120 s`)), 120_000)))]);
  clearTimeout(giveUp);
  const done = performance.now();
  stopping = true;
  clients.forEach((cl) => cl.ws?.close());
  figures.reconnect = {
    runners: N.runners,
    secondsFromStopToAllBack: r1((done - restarted) / 1000),
    secondsFromListeningToAllBack: r1((done - listening) / 1000),
  };
} finally {
  for (const f of cleanups) await f().catch(() => {});
}

console.log(`
| figure | value |
|---|---|
| runner.ping round trip p50 / p99 | ${figures.command.ping.p50} / ${figures.command.ping.p99} ms |
| GET /api/me p50 / p99 (baseline) | ${figures.command.apiMe.p50} / ${figures.command.apiMe.p99} ms |
| ping / baseline (p50, p99) | ${figures.command.ratioP50}×, ${figures.command.ratioP99}× |
| ingest, ${figures.ingest.batch}-event batches of ~${figures.ingest.eventBytes} B, median of ${figures.ingest.rounds} rounds | ${figures.ingest.hubEventsPerSecond} events/s acked (${figures.ingest.stored} stored) |
| direct INSERT of the same rows into runner_events (baseline) | ${figures.ingest.directInsertPerSecond} rows/s |
| ingest / baseline | ${figures.ingest.ratio}× (${figures.ingest.ratioRange.join('–')}) |
| diagnosis: the rows into a table with a primary key only | ${figures.ingest.plainInsertPerSecond} rows/s (ingest / that: ${figures.ingest.ratioToPlain}×) |
| server CPU per 1,000 events ingested | ${figures.ingest.serverCpuMsPer1000Events} ms |
| ingest from ${figures.ingestMany.runners} runners at once, ${figures.ingestMany.batch}-event frames | ${figures.ingestMany.hubEventsPerSecond} events/s acked (${figures.ingestMany.stored} of ${figures.ingestMany.events} stored) |
| direct INSERT into runner_events, ${figures.ingestMany.runners} loops on a pool of 10 (baseline) | ${figures.ingestMany.directInsertPerSecond} rows/s |
| ingest from many / baseline | ${figures.ingestMany.ratio}× (${figures.ingestMany.ratioRange.join('–')}) |
| diagnosis: the same loops into a table with a primary key only | ${figures.ingestMany.plainInsertPerSecond} rows/s (ingest from many / that: ${figures.ingestMany.ratioToPlain}×) |
| server CPU per 1,000 events ingested, from many | ${figures.ingestMany.serverCpuMsPer1000Events} ms |
| ${figures.reconnect.runners} runners back after a restart | ${figures.reconnect.secondsFromListeningToAllBack} s after listening (${figures.reconnect.secondsFromStopToAllBack} s after the stop) |
`);
console.log(JSON.stringify(figures));
