#!/usr/bin/env node
// Scale-out figures (docs/performance.md, "Scale-out"), on the topology of scripts/cluster.sh: 3 replicas
// on one PostgreSQL behind HAProxy, with real runner bundles.
//   back      --runners real runners connected through the balancer; kill -9 of the replica holding the
//             most of them; for each runner whose socket went down, the time from the kill until it was
//             connected again (from the runners' own logs): count, p50, p99, max
//   reads     authenticated GET /api/runners through the balancer at --connections keep-alive
//             connections for --seconds, with 3 replicas up and with 1 (2 stopped with SIGTERM): req/s
//             and the ratio 3/1 (the machine's cores bound it: say so beside the figure)
//
//   npm run bench:cluster -- [--runners 100] [--seconds 10] [--connections 50]
// Only loopback; every process and the database it made are removed at the end (scripts/cluster.sh down).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { DEFAULT_DATABASE_URL, httpRequestBytes, machine, percentile, rawHttpLoad, table } from './lib.mjs';

const { values: opts } = parseArgs({
  options: { runners: { type: 'string', default: '100' }, seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' } },
});
const ROOT = join(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'scripts', 'cluster.sh');
const dbUrl = new URL(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL);
dbUrl.pathname = `/svc_bench_cluster_${process.pid}`;
const env = { ...process.env, DATABASE_URL: dbUrl.toString(), CLUSTER_DIR: join(ROOT, '.tmp', `bench-cluster-${process.pid}`) };
const err = (s) => process.stderr.write(`${s}\n`);

function cluster(args) {
  return new Promise((resolve, reject) => {
    const p = spawn(SCRIPT, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (out += c));
    p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`cluster.sh ${args.join(' ')} failed:\n${out}`))));
  });
}

async function main() {
  err(`machine: ${JSON.stringify(machine())}`);
  const runners = Number(opts.runners);
  err(`starting 3 replicas and ${runners} runners…`);
  const t0 = Date.now();
  const up = await cluster(['up', '--runners', String(runners)]);
  err(`up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const balancer = up.trim().split('\n').at(-1).slice('BALANCER='.length);
  const port = Number(new URL(balancer).port);
  const state = JSON.parse(readFileSync(join(env.CLUSTER_DIR, 'cluster.json'), 'utf8'));

  // --- back: kill -9 of the replica holding the most runners -----------------------------------------
  // Which replica holds which runner: the runner's socket peer port, from `ss` (the balancer's side is
  // the runner's, so ask the replicas' established connections from the balancer instead).
  const holders = state.replicas.map((r) => {
    const ss = spawnSync('ss', ['-Htn', 'state', 'established', `( sport = :${r.port} )`], { encoding: 'utf8' });
    return ss.stdout.split('\n').filter(Boolean).length;
  });
  const victim = holders.indexOf(Math.max(...holders)) + 1;
  err(`connections per replica: ${holders.join(', ')}; killing replica ${victim}`);
  const killedAt = Date.now();
  await cluster(['kill', String(victim)]);
  const logs = () =>
    state.runners.map((r) => {
      const lines = readFileSync(join(r.home, 'runner.log'), 'utf8').split('\n');
      const after = lines.filter((l) => Date.parse(l.slice(0, 24)) >= killedAt - 50);
      const down = after.find((l) => /connection down/.test(l));
      const back = down ? after.slice(after.indexOf(down)).find((l) => /\binfo connected to\b/.test(l)) : undefined;
      return { down: !!down, backMs: back ? Date.parse(back.slice(0, 24)) - killedAt : null };
    });
  const deadline = Date.now() + 180_000;
  let seen = logs();
  while (Date.now() < deadline && seen.some((r) => r.down && r.backMs === null)) {
    await new Promise((r) => setTimeout(r, 250));
    seen = logs();
  }
  const moved = seen.filter((r) => r.down);
  const times = moved.map((r) => r.backMs ?? Infinity).sort((a, b) => a - b);
  await cluster(['start', String(victim)]);

  // --- reads: 3 replicas, then 1 ---------------------------------------------------------------------
  const request = () => httpRequestBytes('GET', '/api/runners', port, { authorization: `Bearer ${state.admin.token}` }, '');
  const load = async (label) => {
    await rawHttpLoad({ port, connections: Number(opts.connections), seconds: 2, request }); // warm-up
    const r = await rawHttpLoad({ port, connections: Number(opts.connections), seconds: Number(opts.seconds), request });
    err(`${label}: ${r.perSecond.toFixed(0)} req/s, statuses ${JSON.stringify(r.statuses)}`);
    return r;
  };
  const three = await load('3 replicas');
  await cluster(['stop', '2']);
  await cluster(['stop', '3']);
  await new Promise((r) => setTimeout(r, 3000)); // the balancer's checks (inter 1s, fall 2) take them out
  const one = await load('1 replica');

  const rows = [
    ['runners back after kill -9 of a replica', `${moved.length} of ${runners} moved`, `p50 ${percentile(times, 50)} ms`, `p99 ${percentile(times, 99)} ms`, `max ${times.at(-1)} ms`],
    ['GET /api/runners, 3 replicas', `${three.perSecond.toFixed(0)} req/s`, `p50 ${percentile(three.latencies, 50).toFixed(1)} ms`, `p99 ${percentile(three.latencies, 99).toFixed(1)} ms`, ''],
    ['GET /api/runners, 1 replica', `${one.perSecond.toFixed(0)} req/s`, `p50 ${percentile(one.latencies, 50).toFixed(1)} ms`, `p99 ${percentile(one.latencies, 99).toFixed(1)} ms`, `3/1 = ${(three.perSecond / one.perSecond).toFixed(2)}`],
  ];
  process.stdout.write(`${table([['figure', 'value', '', '', ''], ...rows])}\n`);
  process.stdout.write(`${JSON.stringify({ runners, moved: moved.length, backMs: { p50: percentile(times, 50), p99: percentile(times, 99), max: times.at(-1) }, reads: { three: three.perSecond, one: one.perSecond } })}\n`);
}

main()
  .catch((e) => {
    err(e instanceof Error ? e.stack : String(e));
    process.exitCode = 1;
  })
  .finally(async () => {
    await cluster(['down']).catch(() => {});
    const admin = new URL(dbUrl);
    admin.pathname = '/postgres';
    const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists ${dbUrl.pathname.slice(1)} with (force)`).catch(() => {});
    await sql.end();
  });
