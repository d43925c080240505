#!/usr/bin/env node
// Skill run figures (docs/skill-runs.md), with the real runner daemon (dist/svc-runner.mjs copied to a
// temp dir) against the runner tests' fake server, real tmux (a socket of its own) and git, and the
// headless fake `claude` of the tests (test/runner/fixtures/fake-headless.mjs), each beside a baseline
// from the same run:
//   (a) start latency, --rounds times: from sending `skill.run` to the fake agent's first output line
//       in runs/<runId>/stream.jsonl; also to the skill.run answer and to the first progress event at
//       the server. Baseline: spawning the same fake `claude` directly (pipe) to its first stdout line.
//   (b) queue drain: --runs runs sent at once with skills.maxConcurrentRuns=--concurrency, until
//       the server holds every final state; checks they started in the order the runner accepted them and
//       that never more than --concurrency ran at once. Baseline: the same fake agents run directly by
//       a pool of --concurrency (spawn, wait for exit).
//
//   node esbuild.config.mjs && node --import tsx bench/skills.mjs [--rounds 10] [--runs 32] [--concurrency 2]
//
// Every daemon, tmux server and temp dir it makes is removed at the end, also on error or Ctrl-C.
// Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startFakeServer } from '../test/runner/_fake-server.ts';
import { fmt, installGuards, machine, median, onCleanup, percentile, ROOT, round, spawnTracked, stopChild, table, tempDir, wholeOption } from './lib.mjs';

const { values: opts } = parseArgs({
  options: { rounds: { type: 'string', default: '10' }, runs: { type: 'string', default: '32' }, concurrency: { type: 'string', default: '2' } },
  strict: true,
});
const whole = (name, min, max) => wholeOption(name, opts[name], min, max);
const ROUNDS = whole('rounds', 1, 200);
const RUNS = whole('runs', 1, 500);
const CONCURRENCY = whole('concurrency', 1, 32);
const FAKE = join(ROOT, 'test', 'runner', 'fixtures', 'fake-headless.mjs');

const log = (m) => process.stderr.write(`[bench:skills] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

async function until(check, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}

/** The first line of the fake agent's stdout, spawned directly: the baseline of (a). */
function directFirstLine(claude, env) {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const child = spawn(claude, ['-p', '--output-format', 'stream-json', '--verbose', 'Use the quick skill. End with your report as your final message.'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let first = null;
    child.stdout.on('data', (d) => {
      if (first === null && d.includes(10)) first = now() - t0;
    });
    child.once('error', reject);
    child.once('close', () => (first === null ? reject(new Error('no output')) : resolve(first)));
  });
}

/** The fake agents run directly by a pool: the baseline of (b). */
async function directPool(claude, env, n, width) {
  const t0 = now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      await new Promise((r) => spawn(claude, ['-p', '--output-format', 'stream-json', '--verbose', 'Use the quick skill. End with your report as your final message.'], { env, stdio: 'ignore' }).once('close', r));
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return now() - t0;
}

async function main() {
  installGuards(600);
  const m = machine();
  const dir = tempDir('svc-bench-skills-');
  const bundle = join(dir, 'svc-runner.mjs');
  copyFileSync(join(ROOT, 'dist', 'svc-runner.mjs'), bundle);
  const home = join(dir, 'home');
  const bin = join(dir, 'bin');
  const root = join(dir, 'work', 'repo');
  for (const d of [home, bin, root]) mkdirSync(d, { recursive: true });
  const claude = join(bin, 'claude');
  writeFileSync(claude, `#!/bin/sh\nexec node '${FAKE}' claude "$@"\n`);
  chmodSync(claude, 0o755);
  mkdirSync(join(home, '.claude', 'skills', 'quick'), { recursive: true });
  writeFileSync(join(home, '.claude', 'skills', 'quick', 'SKILL.md'), '---\nname: quick\ndescription: bench\n---\n');
  const socket = `svc-bench-skills-${process.pid}`;
  const env = {
    PATH: [bin, join(process.execPath, '..'), process.env.PATH ?? '/usr/bin:/bin'].join(':'),
    HOME: home,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_STATE_HOME: join(dir, 'state'),
    TZ: 'UTC',
    LANG: 'C.UTF-8',
    SVC_TMUX_SOCKET: socket,
    FAKE_AGENT_DIR: join(dir, 'agent'),
    GIT_AUTHOR_NAME: 'b',
    GIT_AUTHOR_EMAIL: 'b@example.com',
    GIT_COMMITTER_NAME: 'b',
    GIT_COMMITTER_EMAIL: 'b@example.com',
  };
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root, env });
  execFileSync('git', ['commit', '-q', '--allow-empty', '-m', 'init'], { cwd: root, env });
  const killTmux = () => {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
    rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid()}`, socket), { force: true });
  };
  onCleanup(killTmux);
  const fake = await startFakeServer();
  onCleanup(() => fake.stop());
  fake.options.projects = [{ id: 'p1', root }];
  const arrived = new Map(); // event id → arrival time
  fake.options.onEvents = (events) => {
    for (const e of events) if (!arrived.has(e.id)) arrived.set(e.id, { at: now(), e });
  };
  mkdirSync(join(env.XDG_CONFIG_HOME, 'svc'), { recursive: true });
  const config = {
    server: fake.url,
    runnerId: 'bench-skills',
    token: 'svc_rt_bench_token_0123456789abcdef',
    profiles: [{ id: 'cc', runtime: 'claude', env: {}, args: [] }],
    skills: { maxConcurrentRuns: CONCURRENCY },
  };
  writeFileSync(join(env.XDG_CONFIG_HOME, 'svc', 'runner.json'), JSON.stringify(config), { mode: 0o600 });
  const daemon = spawnTracked(process.execPath, [bundle, 'run'], { cwd: dir, env });
  let out = '';
  daemon.stderr.on('data', (d) => (out += d));
  daemon.stdout.on('data', () => {});
  const conn = await fake.waitConns(1, 30_000);
  await conn.next('hello');
  const runs = join(env.XDG_STATE_HOME, 'svc', 'runs');

  // Warm-up: one run each way (tmux server start, file caches, the shim).
  await directFirstLine(claude, env);
  const warm = (await conn.command('skill.run', { projectId: 'p1', skill: 'quick' })).data;
  await until(() => [...arrived.values()].some(({ e }) => e.payload.runId === warm.runId && e.payload.result), 30_000, 'the warm-up run');

  // (a) start latency
  log(`(a) start latency, ${ROUNDS} rounds`);
  const toLine = [];
  const toAnswer = [];
  const toProgress = [];
  const direct = [];
  for (let i = 0; i < ROUNDS; i++) {
    direct.push(await directFirstLine(claude, env));
    const before = new Set(existsSync(runs) ? readdirSync(runs) : []);
    const t0 = now();
    const answered = conn.command('skill.run', { projectId: 'p1', skill: 'quick' }).then((r) => ((toAnswer[i] = now() - t0), r));
    const runId = await until(() => (existsSync(runs) ? readdirSync(runs).find((n) => !before.has(n)) : null), 30_000, 'the run directory');
    const stream = join(runs, runId, 'stream.jsonl');
    await until(() => existsSync(stream) && statSync(stream).size > 0 && readFileSync(stream, 'utf8').includes('\n'), 30_000, 'the first stream line');
    toLine.push(now() - t0);
    const firstProgress = await until(() => [...arrived.values()].find(({ e }) => e.kind === 'skill_run.progress' && e.payload.runId === runId), 30_000, 'the first progress event');
    toProgress.push(firstProgress.at - t0);
    const r = await answered;
    if (!r.ok) throw new Error(`skill.run failed: ${JSON.stringify(r.error)}`);
    await until(() => [...arrived.values()].some(({ e }) => e.payload.runId === runId && e.payload.result), 30_000, 'the run to end');
  }

  // (b) queue drain
  log(`(b) ${RUNS} runs, maxConcurrentRuns=${CONCURRENCY}`);
  const startedLog = join(env.FAKE_AGENT_DIR, 'started.log');
  const startedBefore = readFileSync(startedLog, 'utf8').trim().split('\n').length;
  const t0 = now();
  // All sent at once, as a burst of trigger deliveries would; the runner orders them as it accepts them
  // (run ids sort in acceptance order), and starts them in that order.
  const answers = await Promise.all(Array.from({ length: RUNS }, () => conn.command('skill.run', { projectId: 'p1', skill: 'quick' }, 120_000)));
  const sent = now() - t0;
  const ids = answers.map((a) => a.data.runId).sort();
  const queuedAnswers = answers.filter((a) => a.data.state === 'queued').length;
  const finals = await until(() => {
    const f = ids.map((id) => arrived.get(`run.${id}.succeeded`) ?? arrived.get(`run.${id}.failed`));
    return f.every(Boolean) ? f : null;
  }, 300_000, 'every run to end');
  const drain = Math.max(...finals.map((f) => f.at)) - t0;
  const failed = finals.filter((f) => f.e.payload.state !== 'succeeded').length;
  // The order the runner moved them to `starting` (its state events arrive in spool order) …
  const starting = [...arrived.values()].filter(({ e }) => e.kind === 'skill_run.state' && e.payload.state === 'starting' && ids.includes(e.payload.runId)).map(({ e }) => e.payload.runId);
  const inOrder = JSON.stringify(starting) === JSON.stringify(ids);
  // … and the order the agents began (two started together may swap their first breath).
  const started = readFileSync(startedLog, 'utf8').trim().split('\n').slice(startedBefore).map((l) => l.split(' ')[0]);
  const displaced = started.filter((id, i) => Math.abs(ids.indexOf(id) - i) > CONCURRENCY - 1).length;
  const spans = finals.map((f) => [Date.parse(f.e.payload.startedAt), Date.parse(f.e.payload.endedAt)]);
  const maxAtOnce = Math.max(...spans.map(([s]) => spans.filter(([a, b]) => a <= s && s < b).length));
  const pool = await directPool(claude, env, RUNS, CONCURRENCY);

  await stopChild(daemon);
  const figures = {
    firstLineMs: round(median(toLine), 1),
    firstLineP90Ms: round(percentile([...toLine].sort((a, b) => a - b), 90), 1),
    directFirstLineMs: round(median(direct), 1),
    answerMs: round(median(toAnswer), 1),
    firstProgressAtServerMs: round(median(toProgress), 1),
    drainMs: round(drain, 0),
    sendAllMs: round(sent, 0),
    directPoolMs: round(pool, 0),
    overheadPerRunMs: round((drain - pool) / RUNS, 1),
    queuedAnswers,
    startedInOrder: inOrder,
    agentsOutOfOrderBeyondConcurrency: displaced,
    maxConcurrent: maxAtOnce,
    failedRuns: failed,
  };
  const rows = [
    ['figure', 'skill run', 'baseline', 'difference'],
    ['skill.run → first stream line (median)', `${fmt(figures.firstLineMs, 1)} ms`, `${fmt(figures.directFirstLineMs, 1)} ms direct spawn`, `+${fmt(figures.firstLineMs - figures.directFirstLineMs, 1)} ms`],
    ['  p90', `${fmt(figures.firstLineP90Ms, 1)} ms`, '', ''],
    ['skill.run → its answer (median)', `${fmt(figures.answerMs, 1)} ms`, '', ''],
    ['skill.run → first progress event at the server', `${fmt(figures.firstProgressAtServerMs, 1)} ms`, '', ''],
    [`${RUNS} runs sent at once, drained ${CONCURRENCY} at a time`, `${fmt(drain / 1000, 2)} s`, `${fmt(pool / 1000, 2)} s direct pool`, `+${fmt(figures.overheadPerRunMs, 1)} ms per run`],
    ['  answered queued / started in acceptance order', `${queuedAnswers} / ${inOrder ? 'yes' : 'NO'}`, '', ''],
    [`  agents begun more than ${CONCURRENCY - 1} place(s) out of order`, `${displaced}`, '', ''],
    ['  most running at once / failed', `${maxAtOnce} / ${failed}`, '', ''],
  ];
  process.stdout.write(`\n${table(rows)}\n`);
  if (/\berror\b/.test(out)) process.stdout.write(`daemon log lines with "error":\n${out.split('\n').filter((l) => / error /.test(l)).slice(0, 5).join('\n')}\n`);
  process.stdout.write(JSON.stringify({ bench: 'skills', rounds: ROUNDS, runs: RUNS, concurrency: CONCURRENCY, machine: m, figures }) + '\n');
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
