#!/usr/bin/env node
// Scale-out figures (docs/performance.md, "Scale-out"), on the topology of scripts/cluster.sh: 3 replicas
// on one PostgreSQL behind HAProxy, with real runner bundles.
//   back      --runners real runners connected through the balancer; kill -9 of the replica holding the
//             most of them; for each runner whose socket went down, the time from the kill until it was
//             connected again (from the runners' own logs): count, p50, p99, max
//   with 3 replicas up, then with 1 (2 stopped with SIGTERM), each with its ratio 3/1 (the machine's
//   cores bound them: say so beside the figure):
//   reads     authenticated GET /api/runners through the balancer at --connections keep-alive
//             connections for --seconds: req/s
//   ingest    --ingest-runners protocol clients connected through the balancer, each sending
//             --ingest-batches `events` frames of 100 events (~1 KB each) one after the other, waiting
//             for each ack: events/s from the first send to the last ack (stored rows counted)
//   triggers  signed POST /hooks/<publicId> (a next_round trigger whose runner is offline: each accepted
//             delivery is also fired and fails runner_offline) at --connections connections for
//             --seconds, each with a new delivery id: 202s per second
//   (webhook deliveries with 1 and 3 processes on one database: bench/webhooks.mjs)
//
//   npm run bench:cluster -- [--runners 100] [--seconds 10] [--connections 50] [--ingest-runners 20] [--ingest-batches 10]
// Only loopback; every process and the database it made are removed at the end (scripts/cluster.sh down).
import { spawn, spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { connect, pairRunner } from '../test/helpers/wsclient.ts';
import { DEFAULT_DATABASE_URL, httpRequestBytes, machine, percentile, rawHttpLoad, table } from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    runners: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    'ingest-runners': { type: 'string', default: '20' },
    'ingest-batches': { type: 'string', default: '10' },
  },
});
const ROOT = join(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'scripts', 'cluster.sh');
const dbUrl = new URL(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL);
dbUrl.pathname = `/svc_bench_cluster_${process.pid}`;
// The trigger bucket raised to its maximum so that it never refuses (the spec's 30 per hour is the default).
const envFile = join(ROOT, '.tmp', `bench-cluster-${process.pid}.env`);
mkdirSync(dirname(envFile), { recursive: true });
writeFileSync(envFile, 'TRIGGER_RATE_PER_HOUR=1000000\n');
const env = { ...process.env, DATABASE_URL: dbUrl.toString(), CLUSTER_DIR: join(ROOT, '.tmp', `bench-cluster-${process.pid}`), CLUSTER_ENV_FILE: envFile };
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

  // --- reads, ingest, triggers: 3 replicas, then 1 ---------------------------------------------------
  const api = (path, init = {}) =>
    fetch(balancer + path, { ...init, headers: { authorization: `Bearer ${state.admin.token}`, 'content-type': 'application/json' }, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
  const request = () => httpRequestBytes('GET', '/api/runners', port, { authorization: `Bearer ${state.admin.token}` }, '');
  const reads = async (label) => {
    await rawHttpLoad({ port, connections: Number(opts.connections), seconds: 2, request }); // warm-up
    const r = await rawHttpLoad({ port, connections: Number(opts.connections), seconds: Number(opts.seconds), request });
    err(`${label} reads: ${r.perSecond.toFixed(0)} req/s, statuses ${JSON.stringify(r.statuses)}`);
    return r;
  };
  const ingestClients = [];
  for (let i = 0; i < Number(opts['ingest-runners']); i++) ingestClients.push(await pairRunner(api, balancer, `ingest-${i}`));
  const sql = postgres(dbUrl.toString(), { max: 1, onnotice: () => {} });
  const blob = randomBytes(700).toString('base64').slice(0, 900);
  const ingest = async (label) => {
    const tag = `${label.replace(/\W/g, '')}-${randomBytes(3).toString('hex')}`;
    const clients = ingestClients.map((r) => connect(balancer, r.token));
    await Promise.all(clients.map((c) => c.next('welcome', 30_000)));
    const batches = Number(opts['ingest-batches']);
    const t0 = performance.now();
    await Promise.all(
      clients.map(async (c, ci) => {
        for (let b = 0; b < batches; b++) {
          c.send({ type: 'events', events: Array.from({ length: 100 }, (_, k) => ({ id: `${tag}-${ci}-${b}-${k}`, source: 'bench', kind: 'bench.event', ts: new Date().toISOString(), payload: { k, blob } })) });
          await c.next('ack', 60_000);
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    for (const c of clients) c.ws.close();
    const [{ n }] = await sql`select count(*)::int as n from runner_events where event_id like ${`${tag}-%`}`;
    const sent = clients.length * batches * 100;
    const perSecond = sent / seconds;
    err(`${label} ingest: ${perSecond.toFixed(0)} events/s (${n} of ${sent} stored)`);
    return { perSecond, stored: n, sent };
  };
  // A trigger on a project whose runner never connects: each delivery is recorded, then fired and failed.
  const quiet = await (await api('/api/runners', { method: 'POST', json: { name: 'never-online' } })).json();
  const project = await (await api('/api/projects', { method: 'POST', json: { name: 'bench-triggers', repo: 'acme/bench', runnerId: quiet.runner.id, rootPath: '/srv/bench' } })).json();
  const made = await (await api(`/api/projects/${project.id}/triggers`, { method: 'POST', json: { name: 'bench', action: 'next_round' } })).json();
  const hookPath = new URL(made.trigger.url).pathname;
  const key = Buffer.from(made.secret, 'utf8');
  const BODY = JSON.stringify({ ref: 'refs/heads/main', after: 'b'.repeat(40) });
  const triggers = async (label) => {
    const tag = `${label.replace(/\W/g, '')}-${randomBytes(3).toString('hex')}`;
    const signed = (n) => {
      const delivery = `${tag}-${n}`;
      const t = String(Math.floor(Date.now() / 1000));
      const hex = createHmac('sha256', key).update(`${t}.${delivery}.`).update(BODY).digest('hex');
      return httpRequestBytes('POST', hookPath, port, { 'content-type': 'application/json', 'x-svc-timestamp': t, 'x-svc-delivery': delivery, 'x-svc-signature': `sha256=${hex}` }, BODY);
    };
    const r = await rawHttpLoad({ port, connections: Number(opts.connections), seconds: Number(opts.seconds), request: signed });
    const accepted = r.statuses[202] ?? 0;
    err(`${label} triggers: ${(accepted / r.seconds).toFixed(0)} accepted/s, statuses ${JSON.stringify(r.statuses)}`);
    return { perSecond: accepted / r.seconds, latencies: r.latencies, statuses: r.statuses };
  };
  const phase = async (label) => ({ reads: await reads(label), ingest: await ingest(label), triggers: await triggers(label) });
  const three = await phase('3 replicas');
  await cluster(['stop', '2']);
  await cluster(['stop', '3']);
  await new Promise((r) => setTimeout(r, 3000)); // the balancer's checks (inter 1s, fall 2) take them out
  const one = await phase('1 replica');
  await sql.end();
  const ratio = (k) => (three[k].perSecond / one[k].perSecond).toFixed(2);

  const rows = [
    ['runners back after kill -9 of a replica', `${moved.length} of ${runners} moved`, `p50 ${percentile(times, 50)} ms`, `p99 ${percentile(times, 99)} ms`, `max ${times.at(-1)} ms`],
    ['GET /api/runners, 3 replicas', `${three.reads.perSecond.toFixed(0)} req/s`, `p50 ${percentile(three.reads.latencies, 50).toFixed(1)} ms`, `p99 ${percentile(three.reads.latencies, 99).toFixed(1)} ms`, ''],
    ['GET /api/runners, 1 replica', `${one.reads.perSecond.toFixed(0)} req/s`, `p50 ${percentile(one.reads.latencies, 50).toFixed(1)} ms`, `p99 ${percentile(one.reads.latencies, 99).toFixed(1)} ms`, `3/1 = ${ratio('reads')}`],
    ['event ingest, 3 replicas', `${three.ingest.perSecond.toFixed(0)} events/s`, `${three.ingest.stored} of ${three.ingest.sent} stored`, '', ''],
    ['event ingest, 1 replica', `${one.ingest.perSecond.toFixed(0)} events/s`, `${one.ingest.stored} of ${one.ingest.sent} stored`, '', `3/1 = ${ratio('ingest')}`],
    ['trigger accepts, 3 replicas', `${three.triggers.perSecond.toFixed(0)} 202/s`, `p50 ${percentile(three.triggers.latencies, 50).toFixed(1)} ms`, `p99 ${percentile(three.triggers.latencies, 99).toFixed(1)} ms`, JSON.stringify(three.triggers.statuses)],
    ['trigger accepts, 1 replica', `${one.triggers.perSecond.toFixed(0)} 202/s`, `p50 ${percentile(one.triggers.latencies, 50).toFixed(1)} ms`, `p99 ${percentile(one.triggers.latencies, 99).toFixed(1)} ms`, `3/1 = ${ratio('triggers')} ${JSON.stringify(one.triggers.statuses)}`],
  ];
  process.stdout.write(`${table([['figure', 'value', '', '', ''], ...rows])}\n`);
  const figures = (p) => ({ reads: p.reads.perSecond, ingest: p.ingest.perSecond, triggers: p.triggers.perSecond });
  process.stdout.write(`${JSON.stringify({ runners, moved: moved.length, backMs: { p50: percentile(times, 50), p99: percentile(times, 99), max: times.at(-1) }, three: figures(three), one: figures(one) })}\n`);
}

main()
  .catch((e) => {
    err(e instanceof Error ? e.stack : String(e));
    process.exitCode = 1;
  })
  .finally(async () => {
    await cluster(['down']).catch(() => {});
    rmSync(envFile, { force: true });
    const admin = new URL(dbUrl);
    admin.pathname = '/postgres';
    const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists ${dbUrl.pathname.slice(1)} with (force)`).catch(() => {});
    await sql.end();
  });
