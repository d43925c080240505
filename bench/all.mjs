#!/usr/bin/env node
// Every benchmark, briefly, and one table of their ratios: a regression is one command away.
//
//   npm run bench:all                 (builds once, then runs this)
//   node bench/all.mjs [--only health,api,…] [--skip cluster,…] [--budget-seconds 300]
//
// Each benchmark of bench/ runs once with small options (below; the long forms are the record, in
// docs/performance.md), one after another, as `node --import tsx bench/<name>.mjs …`. From the JSON line
// each prints last, every ratio is taken — a number under a key that says ratio, `…Over…` or `× bare`
// (with its median and range when the benchmark gives them) — and printed in one table beside the goal
// of issue #13/#14/#17 where there is one. A benchmark that fails or runs out of time is a row with its
// error; the others still run. Stops by itself: each benchmark has a time limit, and the whole run
// stops starting new ones once --budget-seconds have passed.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { ROOT, fmt, machine, table } from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    only: { type: 'string' },
    skip: { type: 'string', default: '' },
    'budget-seconds': { type: 'string', default: '300' },
    'no-build': { type: 'boolean', default: false },
  },
  strict: true,
});

// name, brief arguments, time limit (s). Order: the request-path figures first.
const RUNS = [
  ['health', ['--seconds', '3', '--warmup', '1', '--rounds', '1'], 60],
  ['api', ['--seconds', '3', '--warmup', '1', '--rounds', '1'], 90],
  ['triggers', ['--seconds', '3', '--warmup', '1', '--rounds', '1', '--max-requests', '150000'], 120],
  ['webhooks', ['--deliveries', '400', '--rounds', '1', '--events', '20'], 120],
  ['hub', ['--pings', '100', '--events', '5000', '--runners', '50', '--many-events', '10000'], 150],
  // Idle RSS read after 10 s, as #41's goal is measured: V8 gives the start-up's young generation back ~9 s in.
  ['runner', ['--events', '20000', '--rounds', '1', '--idle-seconds', '10'], 120],
  ['coldstart', ['--runs', '1'], 90],
  ['signin', ['--requests', '30', '--rounds', '1'], 90],
  ['audit', ['--records', '300', '--writers', '1', '--rounds', '1', '--verify-records', '20000', '--verify-rounds', '1'], 120],
  ['usage', ['--only', 'scan', '--mb', '20', '--rounds', '1', '--profile', 'no'], 120],
  ['budget', ['--requests', '30000', '--rounds', '1', '--calls', '20', '--batches', '5'], 90],
  ['live', ['--sockets', '50', '--notices', '300'], 90],
  ['ghapp', ['--deliveries', '40', '--warmup', '5'], 90],
  ['codehost', ['--cycles', '5'], 90],
  ['web', [], 60],
  ['metrics', ['--runners', '20', '--projects', '10', '--requests', '2000', '--scrapes', '50'], 120],
  ['fleet', ['--runners', '200', '--rate', '1000', '--seconds', '10', '--window', '2', '--idle-seconds', '3', '--commands-per-second', '10'], 180],
  ['trigger-agent', ['--rates', '1,10', '--calls', '5', '--warmup', '1'], 420],
];

/** Goals of issues #13 and #17, by benchmark and figure path (the first that matches). */
const GOALS = [
  ['health', /\brps$/, '≥ 0.55', (v) => v >= 0.55],
  ['health', /\bp99$/, '≤ 3', (v) => v <= 3],
  ['api', /svcOverBare$/, '≥ 0.45', (v) => v >= 0.45],
  ['triggers', /acceptedOverBare$/, '≥ 0.5', (v) => v >= 0.5],
  ['triggers', /rejectedOverAccepted$/, '≥ 5', (v) => v >= 5],
  ['runner', /runnerOverDirect$/, '≥ 0.5', (v) => v >= 0.5],
  ['runner', /idleRssOverBareNode$/, '≤ 1.3 (#41)', (v) => v <= 1.3],
  ['webhooks', /processes1\.ratio$/, '≥ 0.5', (v) => v >= 0.5],
  ['hub', /ingest\.ratio$/, '≥ 0.7', (v) => v >= 0.7],
  ['hub', /ingestMany\.ratio$/, '≥ 0.7', (v) => v >= 0.7],
  ['usage', /scan\.summary\.ratio$/, '≥ 1 (#14)', (v) => v >= 1],
  ['metrics', /metrics\.p50Ms$/, '< 50 ms (#39)', (v) => v < 50],
];

const only = opts.only ? new Set(opts.only.split(',')) : null;
const skip = new Set(opts.skip.split(',').filter(Boolean));
const budgetMs = Number(opts['budget-seconds']) * 1000;
const log = (m) => process.stderr.write(`[bench:all] ${m}\n`);

/** Runs one benchmark; resolves with its last JSON line (or an error) and its time. */
function run(name, args, limitS) {
  return new Promise((done) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', `bench/${name}.mjs`, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
    // The whole process group: a benchmark's servers and load generators go with it.
    const kill = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    };
    const timer = setTimeout(kill, limitS * 1000);
    process.once('exit', kill);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      process.off('exit', kill);
      const seconds = (performance.now() - started) / 1000;
      const line = out.trim().split('\n').reverse().find((l) => l.startsWith('{'));
      let json = null;
      try {
        json = line ? JSON.parse(line) : null;
      } catch {}
      if (json && code === 0) return done({ name, seconds, json });
      const why = signal === 'SIGKILL' ? `no result within ${limitS} s` : `exit ${code ?? signal}${json ? '' : ', no JSON line'}`;
      done({ name, seconds, error: `${why}: ${err.trim().split('\n').slice(-2).join(' / ').slice(0, 200)}` });
    });
  });
}

const SKIP_KEYS = new Set(['goals', 'machine', 'settings', 'rounds', 'runs', 'problems', 'svcLog', 'profiles', 'command', 'drains', 'outcomes', 'postgres', 'bundle', 'idle', 'latency', 'startup']);
const RATIO_KEY = /^ratio|Ratio|Over[A-Z]|^x ?bare/; // not 'integrations'

/** Every ratio in a benchmark's JSON: [path, median, min, max]. */
function ratios(value, path = []) {
  if (value === null || typeof value !== 'object') return [];
  const found = [];
  for (const [k, v] of Object.entries(value)) {
    if (SKIP_KEYS.has(k)) continue;
    const p = [...path, k];
    const named = RATIO_KEY.test(k) || RATIO_KEY.test(path.at(-1) ?? '');
    if (typeof v === 'number' && named) found.push([p.join('.'), v]);
    else if (v && typeof v === 'object' && typeof v.median === 'number' && named) found.push([p.join('.'), v.median, v.min, v.max]);
    else if (v && typeof v === 'object') found.push(...ratios(v, p));
  }
  return found;
}

/** The cold start is judged in milliseconds, not as a ratio. */
function coldRows(json) {
  const rows = (json.results ?? []).map((r) => {
    const goal = /pglite new/.test(r.row) ? ['< 1000 ms', r.medianMs < 1000] : /postgres new/.test(r.row) ? ['< 300 ms', r.medianMs < 300] : null;
    return { figure: `${r.row}: ms (× bare node)`, value: `${fmt(r.medianMs, 0)} (${fmt(r.ratio, 2)}×)`, goal: goal?.[0] ?? '', met: goal ? goal[1] : null };
  });
  // The floor under a new database's start, measured in the same run (bench/coldstart.mjs).
  const floor = json.newDatabaseFloor;
  if (floor) rows.push({ figure: `postgres new ÷ (bare node + DDL alone = ${fmt(floor.ms, 0)} ms)`, value: fmt(floor.postgresNewRatio, 2), goal: '', met: null });
  return rows;
}

/** Goals a benchmark judged itself, in its own units (`goals` in its JSON: bench/fleet.mjs). */
function goalRows(json) {
  return (json.goals ?? []).map((g) => ({ figure: g.figure, value: String(g.value), goal: g.goal, met: g.met }));
}

/** The runner's event → stored latency is judged in milliseconds (bench/runner.mjs part (d)). */
function latencyRows(json) {
  return (json.latency?.rates ?? []).map((l) => ({
    figure: `events.jsonl line → stored at ${l.rate}/s: p99 ms (p50)`,
    value: `${fmt(l.p99Ms, 0)} (${fmt(l.p50Ms, 0)})`,
    goal: `< ${json.latency.goalMs} ms`,
    met: l.p99Ms < json.latency.goalMs,
  }));
}

/** A trigger call → the agent running is judged in milliseconds too (bench/trigger-agent.mjs, issue #41). */
function triggerAgentRows(json) {
  return (json.results ?? []).map((r) => ({
    figure: `trigger call → agent running at ${r.rate}/s: p99 ms (p50; × baseline p50)`,
    value: `${fmt(r.total.p99, 0)} (${fmt(r.total.p50, 0)}; ${fmt(r.p50OverBare, 2)}×)`,
    goal: `< ${json.goalP99Ms} ms (#41)`,
    met: r.total.p99 < json.goalP99Ms,
  }));
}

async function main() {
  const m = machine();
  const started = performance.now();
  if (!opts['no-build']) {
    log('building once');
    const code = await new Promise((r) => spawn(process.execPath, ['esbuild.config.mjs'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] }).on('exit', r));
    if (code !== 0) throw new Error(`the build failed (exit ${code})`);
  }
  const rows = [];
  const results = [];
  for (const [name, args, limitS] of RUNS) {
    if ((only && !only.has(name)) || skip.has(name)) continue;
    if (performance.now() - started > budgetMs) {
      rows.push({ bench: name, figure: '(not run: the time budget was spent)', value: '', goal: '', met: null });
      continue;
    }
    log(`${name} ${args.join(' ')}`);
    const r = await run(name, args, limitS);
    results.push(r);
    if (r.error) {
      rows.push({ bench: name, figure: 'ERROR', value: r.error, goal: '', met: null });
      continue;
    }
    const figures = name === 'coldstart' ? coldRows(r.json) : ratios(r.json).map(([path, v, lo, hi]) => {
      const goal = GOALS.find(([b, re]) => b === name && re.test(path));
      return { figure: path, value: lo === undefined || lo === hi ? fmt(v, 3) : `${fmt(v, 3)} (${fmt(lo, 3)}–${fmt(hi, 3)})`, goal: goal?.[2] ?? '', met: goal ? goal[3](v) : null };
    });
    if (name === 'runner') figures.push(...latencyRows(r.json));
    figures.push(...goalRows(r.json));
    if (name === 'trigger-agent') figures.splice(0, figures.length, ...triggerAgentRows(r.json));
    if (!figures.length) rows.push({ bench: name, figure: '(no ratio in its JSON: see its own output)', value: '', goal: '', met: null });
    for (const f of figures) rows.push({ bench: name, ...f });
    log(`${name}: ${fmt(r.seconds, 0)} s`);
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(`bench:all — every benchmark briefly (ratios against each one's same-run baseline; the long runs in docs/performance.md are the record)`);
  console.log(`machine: nproc=${m.nproc} node=${m.node} ${m.cpu}; commit ${m.commit}; load average ${m.loadavg1} at start, ${fmt(os.loadavg()[0], 2)} at end; ${fmt(seconds, 0)} s in all`);
  console.log(table([['bench', 'figure', 'value', 'goal', ''], ...rows.map((r) => [r.bench, r.figure, r.value, r.goal, r.met === null ? '' : r.met ? 'met' : 'MISSED'])]));
  console.log(JSON.stringify({ bench: 'all', machine: m, seconds: Math.round(seconds), loadavg1End: os.loadavg()[0], rows, runs: results.map((r) => ({ name: r.name, seconds: Math.round(r.seconds), error: r.error ?? null })) }));
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:all failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
