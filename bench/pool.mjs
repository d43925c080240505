#!/usr/bin/env node
// Runner pool figures on PostgreSQL (issue #37; docs/performance.md, "Runner pools"):
//   latency   dispatch latency: one pool runner with one place; each run it is sent is reported
//             `succeeded` at once, and the time from sending that report (its place is free) to the
//             next queued run's skill.run arriving at the runner is one sample (p50/p99; goal p99 < 500 ms)
//   drain     1,000 pool runs over 10 pool runners (2 places each): the trigger calls are made, then the
//             runs drain; every runner reports each run running and succeeded as soon as it gets it.
//             Checked: every run succeeded, none sent twice (each run id received exactly once), none lost
//   baseline  the same 1,000 trigger calls with the `primary` target, straight to one runner with room
//             for all (the firer sends skill.run at once): the time beside the pool's
// The server is the real dist/server.mjs on a fresh PostgreSQL database (test/helpers/server.ts); the
// runners are protocol clients (test/helpers/wsclient.ts) that speak the real frames, on loopback only.
// Bounded in count and time; everything it starts is stopped at the end.
//
//   npm run bench:pool -- [--runs 1000] [--runners 10] [--places 2] [--samples 60]
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

process.env.SVC_TEST_DB = 'postgres';
const { values } = parseArgs({ options: { runs: { type: 'string', default: '1000' }, runners: { type: 'string', default: '10' }, places: { type: 'string', default: '2' }, samples: { type: 'string', default: '60' } } });
const RUNS = Number(values.runs);
const RUNNERS = Number(values.runners);
const PLACES = Number(values.places);
const SAMPLES = Number(values.samples);
const DEADLINE_MS = 10 * 60_000;

const { startServer } = await import('../test/helpers/server.ts');
const { connect, pairRunner } = await import('../test/helpers/wsclient.ts');
const { createTrigger, post, skillTrigger } = await import('../test/triggers/_harness.ts');
const { POOL_CAPABILITY } = await import('../protocol/frames.ts');
const { newRunId } = await import('../protocol/runs.ts');

const log = (...a) => console.error('[pool]', ...a);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
let eventSeq = 0;

/** A runner as the protocol sees it: answers skill.run (the pool's runId, or its own), reports through `onRun`. */
async function fakeRunner(server, o) {
  const paired = await pairRunner(server.api, server.url, `bench-${randomBytes(3).toString('hex')}`);
  const client = connect(server.url, paired.token);
  await client.next('welcome');
  const f = { runnerId: paired.runnerId, client, received: [], report: undefined };
  f.report = (projectId, runId, states) => {
    const now = new Date().toISOString();
    const events = states.map((state) => ({
      id: `bench.${runId}.${state}.${++eventSeq}`,
      source: `project:${projectId}`,
      kind: 'skill_run.state',
      ts: now,
      payload: { runId, project: projectId, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state, at: now, ...(state === 'succeeded' ? { endedAt: now } : {}) },
    }));
    client.send({ type: 'events', events });
  };
  client.ws.on('message', (d) => {
    const frame = JSON.parse(d.toString());
    if (frame.type !== 'command') return;
    if (frame.name === 'skill.run') {
      const runId = frame.args.runId ?? newRunId();
      f.received.push({ runId, at: performance.now() });
      client.send({ type: 'result', requestId: frame.requestId, ok: true, data: { runId } });
      o.onRun?.(f, frame.args.projectId, runId);
      return;
    }
    client.send({ type: 'result', requestId: frame.requestId, ok: true, data: {} });
  });
  client.send({ type: 'hello', version: '0.1.0', target: 'linux-amd64', hostname: 'bench', capabilities: o.pool ? [POOL_CAPABILITY] : [] });
  if (o.pool) client.send({ type: 'capacity', maxConcurrentRuns: o.places, running: 0 });
  return f;
}

async function json(res, what) {
  if (!res.ok) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

async function project(server, primaryRunnerId) {
  const name = `p-${randomBytes(3).toString('hex')}`;
  return (await json(await server.api('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: primaryRunnerId, rootPath: `/srv/${name}` } }), 'project')).id;
}

async function poolProject(server, members) {
  const primary = (await json(await server.api('/api/runners', { method: 'POST', json: { name: `primary-${randomBytes(2).toString('hex')}` } }), 'runner')).runner.id;
  const id = await project(server, primary);
  for (const m of members) await json(await server.api(`/api/projects/${id}/runners/${m.runnerId}`, { method: 'PUT', json: { rootPath: `/pool/${id}` } }), 'pool member');
  return id;
}

/** `n` triggers of `target` (one live run per trigger: one trigger per run). */
async function triggers(server, projectId, n, target) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await createTrigger(server, projectId, skillTrigger({ name: `t${i}`, args: [], allowedPaths: [], target })));
  return out;
}

const call = (t) => post(t.url, t.secret, { x: 1 }, { delivery: `d-${randomBytes(6).toString('hex')}` }).then((r) => {
  if (r.status !== 202) throw new Error(`trigger call: ${r.status} ${r.text}`);
});

async function until(what, check, ms = DEADLINE_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function countSucceeded(server, projectId) {
  // GET /api/runs pages by 200; the count is what matters here.
  let n = 0;
  let before = '';
  for (;;) {
    const body = await json(await server.api(`/api/runs?projectId=${projectId}&limit=200${before ? `&before=${before}` : ''}`), 'runs');
    n += body.runs.filter((r) => r.state === 'succeeded').length;
    if (!body.nextBefore) return n;
    before = body.nextBefore;
  }
}

/** Calls in waves of 50 at a time (the call path is not what is measured). */
async function callAll(ts) {
  for (let i = 0; i < ts.length; i += 50) await Promise.all(ts.slice(i, i + 50).map(call));
}

const server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), TRIGGER_RATE_PER_HOUR: '100000' } });
const started = Date.now();
const guard = setTimeout(() => {
  log('deadline reached: stopping');
  void server.cleanup().finally(() => process.exit(1));
}, DEADLINE_MS + 60_000);
try {
  // ---- latency ----
  const samples = [];
  let freedAt = null;
  const one = await fakeRunner(server, {
    pool: true,
    places: 1,
    onRun: (f, projectId, runId) => {
      if (freedAt !== null) samples.push(performance.now() - freedAt);
      // Running, then (a moment later, as a run would) succeeded: its place frees when that is sent.
      setTimeout(() => {
        freedAt = performance.now();
        f.report(projectId, runId, ['running', 'succeeded']);
      }, 5);
    },
  });
  const lp = await poolProject(server, [one]);
  const lts = await triggers(server, lp, SAMPLES + 1, 'pool');
  log(`latency: ${lts.length} pool runs through one place`);
  await callAll(lts);
  await until('every latency run received', async () => one.received.length >= lts.length);
  const latency = { samples: samples.length, p50: pct(samples, 50), p99: pct(samples, 99), max: Math.max(...samples) };
  log(`latency: p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms`);

  // ---- drain: RUNS pool runs over RUNNERS runners ----
  const complete = (f, projectId, runId) => setTimeout(() => f.report(projectId, runId, ['running', 'succeeded']), 1);
  const pool = [];
  for (let i = 0; i < RUNNERS; i++) pool.push(await fakeRunner(server, { pool: true, places: PLACES, onRun: complete }));
  const dp = await poolProject(server, pool);
  const dts = await triggers(server, dp, RUNS, 'pool');
  log(`drain: ${RUNS} pool runs over ${RUNNERS} runners × ${PLACES} places`);
  let t0 = performance.now();
  await callAll(dts);
  await until('the pool drained', async () => (await countSucceeded(server, dp)) >= RUNS);
  const poolMs = performance.now() - t0;
  const ids = pool.flatMap((f) => f.received.map((r) => r.runId));
  const drain = { runs: RUNS, succeeded: await countSucceeded(server, dp), received: ids.length, distinct: new Set(ids).size, ms: Math.round(poolMs) };
  log(`drain: ${drain.succeeded} succeeded, ${drain.received} sent (${drain.distinct} distinct) in ${drain.ms} ms`);

  // ---- baseline: the same calls straight to one runner ----
  const direct = await fakeRunner(server, { pool: false, onRun: complete });
  const bp = await project(server, direct.runnerId);
  const bts = await triggers(server, bp, RUNS, 'primary');
  t0 = performance.now();
  await callAll(bts);
  await until('the direct runs finished', async () => (await countSucceeded(server, bp)) >= RUNS);
  const directMs = performance.now() - t0;
  const baseline = { runs: RUNS, succeeded: await countSucceeded(server, bp), received: direct.received.length, ms: Math.round(directMs) };
  log(`baseline: ${baseline.succeeded} succeeded in ${baseline.ms} ms`);

  const ok = drain.succeeded === RUNS && drain.received === RUNS && drain.distinct === RUNS;
  console.log('| figure | value |');
  console.log('|---|---|');
  console.log(`| dispatch latency, free place → skill.run on the runner (${latency.samples} samples) | p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms, max ${latency.max.toFixed(1)} ms |`);
  console.log(`| ${RUNS} pool runs over ${RUNNERS} runners × ${PLACES} places | ${drain.ms} ms; ${drain.succeeded} succeeded, ${drain.received} sent, ${drain.distinct} distinct |`);
  console.log(`| the same ${RUNS} runs straight to one runner (primary target) | ${baseline.ms} ms; ${baseline.succeeded} succeeded |`);
  console.log(`| pool ÷ straight | ${(drain.ms / baseline.ms).toFixed(2)}× the time |`);
  console.log(JSON.stringify({ bench: 'pool', latency, drain, baseline, ratio: drain.ms / baseline.ms, ok, seconds: Math.round((Date.now() - started) / 1000) }));
  if (!ok) process.exitCode = 1;
} finally {
  clearTimeout(guard);
  await server.cleanup();
}
