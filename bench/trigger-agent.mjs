#!/usr/bin/env node
// One trigger call to a working agent (issue #41 part 4; docs/performance.md, "A trigger call to a
// working agent"): from a signed POST /hooks/<publicId> to the agent process running in its run's tmux
// session on the runner, end to end, with the real server (dist/server.mjs on a fresh PostgreSQL
// database, test/helpers/server.ts), the real runner bundle (dist/svc-runner.mjs copied to a temp dir,
// paired with a code an admin made, real tmux on a socket of its own, real git) and the fake headless
// agent CLI of the tests (test/runner/fixtures/fake-headless.mjs, skill `quick`).
//
// A trigger runs a headless skill (spec: Inbound trigger) — `skill.run`, whose run lives in its own
// tmux session `svc-run-<runId>` executing `svc-runner exec-run`, which spawns the agent
// (docs/skill-runs.md). The trigger is a `pull_request` skill trigger, so every run makes its git
// worktree, here of a repository of --files files (default 10,000). One trigger per call: a trigger has
// one live run at a time and 30 accepted calls per hour (spec: Limits).
//
// Calls go open-loop at each rate of --rates (calls per second), --calls of them per rate, after
// --warmup calls that are not counted. Each call is broken down by hop, from timestamps the parts
// record (all on this machine's wall clock, to the millisecond):
//   accept      the bench sends the signed POST → its 202 arrives
//   claim       202 → the firer committed its claim of the delivery (server, LOG_LEVEL=debug line
//               "trigger deliveries claimed")
//   command     claimed → the runner read the skill.run frame (runner, SVC_LOG=debug "command received";
//               its runner_commands row's created_at splits it: server part, then the socket)
//   runner      frame read → the run starting (checks, run.json, queued; "skill run starting")
//   worktree    starting → `git worktree add` done ("skill run worktree made")
//   tmux        worktree made → exec-run running in the new tmux session (exit.json startedAt: taken
//               by exec-run once it has loaded and read run.json)
//   agent start exec-run up → the agent process running its first line (the fake agent's started.log:
//               its own Date.now() once Node has loaded it; `running` is written by exec-run just
//               after the spawn, between the two)
// Baseline, same run, same rates and counts: what the hops cannot go under — `git worktree add` of the
// same repository (pull_request runs only) and `tmux new-session` (the same tmux server) running the same fake agent directly,
// from the start of the git command to the agent's first line; its worktree removed when it ended, as a
// finished run's is. The ratios are svc ÷ this.
// --profile also runs the server and the runner daemon under `node --cpu-prof` and lists their top
// self-time functions.
//
//   npm run bench:trigger-agent -- [--rates 1,10] [--calls 60] [--warmup 3] [--files 10000]
//                                  [--output pull_request|report] [--max-runs 32] [--profile]
// Loopback only; bounded (a hard time limit); every process, tmux server, temp dir and database it
// makes is removed at the end, also on error or Ctrl-C. Output: progress on stderr, tables on stdout,
// then one JSON line.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuProfileTop, fmt, installGuards, machine, onCleanup, percentile, ROOT, round, spawnTracked, stopChild, table, tempDir, wholeOption } from './lib.mjs';

process.env.SVC_TEST_DB = 'postgres';
const { values: opts } = parseArgs({
  options: {
    rates: { type: 'string', default: '1,10' },
    calls: { type: 'string', default: '60' },
    warmup: { type: 'string', default: '3' },
    files: { type: 'string', default: '10000' },
    output: { type: 'string', default: 'pull_request' },
    'max-runs': { type: 'string', default: '32' },
    /** skills.spareWorktrees of the runner (absent: the runner's default; 0: every run checks out anew). */
    spares: { type: 'string' },
    profile: { type: 'boolean', default: false },
  },
  strict: true,
});
const RATES = opts.rates.split(',').map((r) => wholeOption('rates', r, 1, 50));
const CALLS = wholeOption('calls', opts.calls, 1, 1000);
const WARMUP = wholeOption('warmup', opts.warmup, 0, 50);
const FILES = wholeOption('files', opts.files, 1, 200_000);
const MAX_RUNS = wholeOption('max-runs', opts['max-runs'], 1, 32);
if (!['pull_request', 'report'].includes(opts.output)) throw new Error('--output is pull_request or report');
const FAKE = join(ROOT, 'test', 'runner', 'fixtures', 'fake-headless.mjs');
const GOAL_P99_MS = 1000;
const HOPS = ['accept', 'claim', 'command', 'runner', 'worktree', 'tmux', 'agentStart'];

const { serverDbEnv } = await import('../test/helpers/db.ts');
const { startServer } = await import('../test/helpers/server.ts');
const { createTrigger, post, skillTrigger } = await import('../test/triggers/_harness.ts');
const { default: postgres } = await import('postgres');

const log = (m) => process.stderr.write(`[bench:trigger-agent] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const wall = () => performance.timeOrigin + performance.now();

async function until(what, check, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${typeof what === 'function' ? await what() : what}`);
    await sleep(50);
  }
}

async function json(res, what) {
  if (!res.ok) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** A git repository of `n` small files in directories of 100, one commit. */
function makeRepo(root, n, env) {
  mkdirSync(root, { recursive: true });
  for (let i = 0; i < n; i++) {
    const d = join(root, `src${String(Math.floor(i / 100)).padStart(3, '0')}`);
    if (i % 100 === 0) mkdirSync(d, { recursive: true });
    writeFileSync(join(d, `f${i}.ts`), `export const v${i} = ${i};\n`);
  }
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root, env });
  execFileSync('git', ['add', '-A'], { cwd: root, env });
  execFileSync('git', ['commit', '-q', '-m', 'init'], { cwd: root, env });
}

/** `<ISO time> … <message> … <fields>` lines: the times of each message, by a key taken from the line. */
function times(text, re) {
  const out = new Map();
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const at = Date.parse(line.slice(0, line.indexOf(' ')));
    for (const key of m[1].split(',')) if (!out.has(key)) out.set(key, at);
  }
  return out;
}

/** Clean-ups, run in reverse at the end (and by bench/lib.mjs's guards on an interrupt). */
const cleanups = [];
const later = (fn) => (cleanups.unshift(fn), onCleanup(fn));
async function cleanUp() {
  for (const fn of cleanups.splice(0)) await Promise.resolve().then(fn).catch((e) => log(`clean-up: ${e?.message ?? e}`));
}

const run = (cmd, args, options) =>
  new Promise((resolve, reject) => execFile(cmd, args, options, (err, stdout, stderr) => (err ? reject(new Error(`${cmd} ${args[0]}: ${stderr || err.message}`)) : resolve(stdout))));

/** The baseline's one sample: worktree, session, the agent's first line (ms); then its clean-up. */
let bareAdds = Promise.resolve();
async function bareSample(i, o) {
  const id = `bare-${i}-${randomBytes(3).toString('hex')}`;
  const wt = o.worktree ? join(o.repo, '..', `.wt-bare-${id}`) : o.repo; // a report run works in the root
  const t0 = wall();
  // One `git worktree add` at a time, as the runner does: concurrent adds in one repository can fail
  // ("failed to read .git/worktrees/…/commondir"), which this baseline met at 10 calls/s.
  if (o.worktree) await (bareAdds = bareAdds.catch(() => {}).then(() => run('git', ['worktree', 'add', '-q', '-b', `bare/${id}`, '--', wt, 'HEAD'], { cwd: o.repo, env: o.env })));
  // tmux exits when its last session ends: a new-session that reaches it just then fails, and is tried
  // again, as the runner does (runs/manager.ts newRunSession).
  const newSession = (tries) => run('tmux', ['-L', o.socket, 'new-session', '-d', '-s', id, '-e', `SVC_RUN_ID=${id}`, '-e', `PATH=${o.env.PATH}`, '-e', `FAKE_AGENT_DIR=${o.agentDir}`, '-c', wt, '--', join(o.bin, 'claude'), '-p', '--output-format', 'stream-json', '--verbose', 'Use the quick skill. End with your report as your final message.'], { cwd: wt, env: o.env }).catch((e) => {
      if (tries <= 1 || !/server exited unexpectedly|lost server|no server running/i.test(e.message)) throw e;
      return newSession(tries - 1);
    });
  await newSession(4);
  const log = join(o.agentDir, 'started.log');
  const at = await until('the baseline agent', () => {
    const line = existsSync(log) && readFileSync(log, 'utf8').split('\n').find((l) => l.startsWith(`${id} `));
    return line ? Number(line.split(' ')[1]) : null;
  }, 60_000);
  o.cleanups.push(
    (async () => {
      await until('the baseline session to end', async () => (await run('tmux', ['-L', o.socket, 'has-session', '-t', `=${id}`], { env: o.env }).then(() => false, () => true)), 60_000);
      if (o.worktree) await run('git', ['worktree', 'remove', '--force', '--', wt], { cwd: o.repo, env: o.env });
    })(),
  );
  return at - t0;
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: round(percentile(s, 50), 1), p99: round(percentile(s, 99), 1), max: round(s.at(-1), 1) };
};

async function main() {
  installGuards(30 * 60);
  const m = machine();
  const dir = tempDir('svc-bench-trigger-agent-');
  const bundle = join(dir, 'svc-runner.mjs');
  copyFileSync(join(ROOT, 'dist', 'svc-runner.mjs'), bundle);
  const home = join(dir, 'home');
  const bin = join(dir, 'bin');
  const repo = join(dir, 'work', 'repo');
  const profDir = join(dir, 'profiles');
  for (const d of [home, bin, profDir]) mkdirSync(d, { recursive: true });
  writeFileSync(join(bin, 'claude'), `#!/bin/sh\nexec node '${FAKE}' claude "$@"\n`);
  chmodSync(join(bin, 'claude'), 0o755);
  mkdirSync(join(home, '.claude', 'skills', 'quick'), { recursive: true });
  writeFileSync(join(home, '.claude', 'skills', 'quick', 'SKILL.md'), '---\nname: quick\ndescription: bench\n---\n');
  const socket = `svc-bench-ta-${process.pid}`;
  const agentDir = join(dir, 'agent');
  const env = {
    PATH: [bin, join(process.execPath, '..'), process.env.PATH ?? '/usr/bin:/bin'].join(':'),
    HOME: home,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_STATE_HOME: join(dir, 'state'),
    TZ: 'UTC',
    LANG: 'C.UTF-8',
    SVC_TMUX_SOCKET: socket,
    SVC_LOG: 'debug',
    FAKE_AGENT_DIR: agentDir,
    GIT_AUTHOR_NAME: 'b',
    GIT_AUTHOR_EMAIL: 'b@example.com',
    GIT_COMMITTER_NAME: 'b',
    GIT_COMMITTER_EMAIL: 'b@example.com',
  };
  later(() => {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
    rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid()}`, socket), { force: true });
  });
  let t = wall();
  makeRepo(repo, FILES, env);
  log(`a repository of ${FILES} files made in ${fmt((wall() - t) / 1000, 1)} s`);

  const db = await serverDbEnv();
  later(() => db.cleanup());
  const profEnv = opts.profile ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profDir}` } : {};
  const server = await startServer({ admin: true, dbEnv: db.env, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), LOG_LEVEL: 'debug', CHECK_ANSWERS: 'false', ...profEnv } });
  later(() => server.cleanup());
  const sqlc = postgres(db.env.DATABASE_URL, { max: 2, onnotice: () => {} });
  later(() => sqlc.end({ timeout: 1 }));

  // The runner: paired with an admin-made code, one claude profile, room for --max-runs runs at once.
  const made = await json(await server.api('/api/runners', { method: 'POST', json: { name: 'bench-agent' } }), 'runner');
  const paired = spawnSync(process.execPath, [bundle, 'pair', '--server', server.url, '--code', made.code, '--no-detect'], { cwd: dir, env, encoding: 'utf8' });
  if (paired.status !== 0) throw new Error(`pairing failed: ${paired.stderr}`);
  const configPath = join(env.XDG_CONFIG_HOME, 'svc', 'runner.json');
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  writeFileSync(configPath, JSON.stringify({ ...config, profiles: [{ id: 'cc', runtime: 'claude', env: {}, args: [] }], skills: { ...config.skills, maxConcurrentRuns: MAX_RUNS, ...(opts.spares === undefined ? {} : { spareWorktrees: Number(opts.spares) }) } }), { mode: 0o600 });
  const daemon = spawnTracked(process.execPath, [bundle, 'run'], { cwd: dir, env: { ...env, ...profEnv } });
  let runnerLog = '';
  daemon.stderr.on('data', (d) => (runnerLog += d));
  daemon.stdout.on('data', (d) => (runnerLog += d));
  const runnerId = made.runner.id;
  await until('the runner online', async () => (await json(await server.api('/api/runners'), 'runners')).runners.find((r) => r.id === runnerId)?.status === 'online', 30_000);
  const projectId = (await json(await server.api('/api/projects', { method: 'POST', json: { name: 'bench', repo: 'acme/bench', runnerId, rootPath: repo } }), 'project')).id;

  const total = WARMUP + CALLS * RATES.length;
  log(`${total} triggers (one per call)`);
  const triggers = [];
  for (let i = 0; i < total; i++) triggers.push(await createTrigger(server, projectId, skillTrigger({ name: `t${i}`, skill: 'quick', args: [], allowedPaths: [], output: opts.output })));

  const calls = [];
  const fire = async (trig, phase) => {
    const c = { phase, delivery: `d-${randomBytes(8).toString('hex')}`, sent: wall() };
    calls.push(c);
    const r = await post(trig.url, trig.secret, { ref: 'main' }, { delivery: c.delivery });
    c.accepted = wall();
    if (r.status !== 202) throw new Error(`trigger call: ${r.status} ${r.text}`);
  };
  const settled = async (phase) => {
    const mine = calls.filter((c) => c.phase === phase).map((c) => c.delivery);
    const what = async () => {
      const rows = await sqlc`select status, count(*)::int as n from inbound_deliveries where delivery_id = any(${mine}) group by status`;
      const warn = runnerLog.split('\n').filter((l) => / (warn|error) /.test(l)).slice(-5).join('\n');
      return `the ${phase} runs' agents (deliveries: ${JSON.stringify(rows)}; runner warnings:\n${warn})`;
    };
    await until(what, async () => {
      const rows = await sqlc`select status, run_id from inbound_deliveries where delivery_id = any(${mine}) and status in ('fired', 'failed', 'skipped')`;
      if (rows.some((r) => r.status !== 'fired')) throw new Error(`a delivery did not fire: ${JSON.stringify(rows.find((r) => r.status !== 'fired'))}`);
      const started = existsSync(join(agentDir, 'started.log')) ? readFileSync(join(agentDir, 'started.log'), 'utf8') : '';
      return rows.length === mine.length && rows.every((r) => started.includes(`${r.run_id} `));
    }, 120_000);
  };
  // Between bursts a runner is idle with its spares made (spares.ts fills the pool after a project's first
  // run): each timed phase starts so, not while the pool is still being filled by the runs before it.
  const SPARES = opts.spares === undefined ? 2 : Number(opts.spares);
  const poolFull = async () => {
    if (SPARES <= 0 || !WARMUP) return;
    const mine = `.wt-${basename(repo)}-spare.`;
    const spares = () => readdirSync(dirname(repo)).filter((n) => n.startsWith(mine)).length;
    const runs = () => readdirSync(dirname(repo)).filter((n) => n.startsWith(`.wt-${basename(repo)}-run-`)).length;
    await until(() => `the pool of ${SPARES} spares (${spares()} ready, ${runs()} run worktrees left)`, async () => spares() >= SPARES && runs() === 0, 600_000);
  };
  let next = 0;
  for (let i = 0; i < WARMUP; i++) await fire(triggers[next++], 'warmup');
  if (WARMUP) await settled('warmup');
  for (const rate of RATES) {
    await poolFull();
    log(`${CALLS} calls at ${rate}/s`);
    const t0 = wall();
    const pending = [];
    for (let i = 0; i < CALLS; i++) {
      const at = t0 + (i * 1000) / rate;
      if (at > wall()) await sleep(at - wall());
      pending.push(fire(triggers[next++], `${rate}/s`));
    }
    await Promise.all(pending);
    await settled(`${rate}/s`);
    await sleep(500); // the last runs' clean-up (worktree removed) before the next rate
  }

  const bare = {};
  const bareOpts = { repo, env, socket, agentDir, bin, cleanups: [], worktree: opts.output === 'pull_request' };
  for (const rate of RATES) {
    log(`baseline: ${CALLS} worktree + tmux + agent at ${rate}/s`);
    const t0 = wall();
    const pending = [];
    for (let i = 0; i < CALLS; i++) {
      const at = t0 + (i * 1000) / rate;
      if (at > wall()) await sleep(at - wall());
      pending.push(bareSample(`${rate}-${i}`, bareOpts));
    }
    bare[rate] = stats(await Promise.all(pending));
    await Promise.all(bareOpts.cleanups.splice(0));
  }

  // The hops: server rows and log lines, runner log lines, the run directories, the agent's log.
  const rows = await sqlc`
    select d.delivery_id, d.id, d.run_id, c.request_id, c.created_at as command_at
      from inbound_deliveries d left join runner_commands c on c.name = 'skill.run' and c.result->>'runId' = d.run_id
     where d.delivery_id = any(${calls.map((c) => c.delivery)})`;
  const byDelivery = new Map(rows.map((r) => [r.delivery_id, r]));
  const claimed = times(server.output(), / DEBUG trigger deliveries claimed .*deliveries="?([^"\s]+)/);
  const received = times(runnerLog, / debug command received \{"requestId":"([^"]+)"/);
  const starting = times(runnerLog, / debug skill run starting \{"runId":"([^"]+)"/);
  const worktree = times(runnerLog, / debug skill run worktree made \{"runId":"([^"]+)"/);
  const agentUp = new Map(readFileSync(join(agentDir, 'started.log'), 'utf8').trim().split('\n').map((l) => l.split(' ')).map(([id, ms]) => [id, Number(ms)]));
  const runs = join(env.XDG_STATE_HOME, 'svc', 'runs');
  for (const c of calls) {
    const r = byDelivery.get(c.delivery);
    const exit = JSON.parse(readFileSync(join(runs, r.run_id, 'exit.json'), 'utf8'));
    const p = {
      sent: c.sent,
      accepted: c.accepted,
      claimed: claimed.get(r.id),
      commandRow: r.command_at?.getTime(),
      received: received.get(r.request_id),
      starting: starting.get(r.run_id),
      worktree: opts.output === 'pull_request' ? worktree.get(r.run_id) : starting.get(r.run_id),
      exec: Date.parse(exit.startedAt),
      agent: agentUp.get(r.run_id),
    };
    for (const [k, v] of Object.entries(p)) if (!Number.isFinite(v)) throw new Error(`no ${k} time for run ${r.run_id} (delivery ${c.delivery})`);
    c.hops = {
      accept: p.accepted - p.sent,
      claim: p.claimed - p.accepted,
      command: p.received - p.claimed,
      commandServer: p.commandRow - p.claimed,
      runner: p.starting - p.received,
      worktree: p.worktree - p.starting,
      tmux: p.exec - p.worktree,
      agentStart: p.agent - p.exec,
      total: p.agent - p.sent,
    };
  }

  let profiles = null;
  if (opts.profile) {
    await stopChild(daemon);
    await server.stop('SIGTERM');
    const files = readdirSync(profDir);
    const pick = async (pid) => {
      const f = files.find((n) => n.includes(`.${pid}.`));
      return f ? cpuProfileTop(join(profDir, f), 12) : null;
    };
    profiles = { server: await pick(server.proc.pid), runner: await pick(daemon.pid) };
  } else await stopChild(daemon);

  const results = RATES.map((rate) => {
    const mine = calls.filter((c) => c.phase === `${rate}/s`);
    const hop = Object.fromEntries([...HOPS, 'commandServer', 'total'].map((h) => [h, stats(mine.map((c) => c.hops[h]))]));
    return { rate, calls: mine.length, ...hop, bare: bare[rate], p50OverBare: round(hop.total.p50 / bare[rate].p50, 2), p99OverBare: round(hop.total.p99 / bare[rate].p99, 2) };
  });
  const head = ['calls/s', 'total p50', 'total p99', 'baseline p50/p99', '× baseline p50/p99', ...HOPS.map((h) => `${h} p50/p99`)];
  console.log(`\nOne trigger call → the agent running in its run's tmux session (ms; ${opts.output} runs, a repository of ${FILES} files; goal p99 < ${GOAL_P99_MS} ms)`);
  console.log(table([head, ...results.map((r) => [String(r.rate), fmt(r.total.p50, 0), fmt(r.total.p99, 0), `${fmt(r.bare.p50, 0)} / ${fmt(r.bare.p99, 0)}`, `${fmt(r.p50OverBare, 2)} / ${fmt(r.p99OverBare, 2)}`, ...HOPS.map((h) => `${fmt(r[h].p50, 0)} / ${fmt(r[h].p99, 0)}`)])]));
  console.log(`(command: of which the server part — claimed → runner_commands row — p50 ${results.map((r) => `${fmt(r.commandServer.p50, 0)} ms at ${r.rate}/s`).join(', ')})`);
  if (profiles) {
    for (const [who, p] of Object.entries(profiles)) {
      if (!p) continue;
      console.log(`\n${who}: top self time (${p.samplesMs} ms sampled)`);
      console.log(table([['function', 'where', 'self ms', '%'], ...p.top.map((x) => [x.fn, x.where, fmt(x.selfMs, 1), fmt(x.percent, 1)])]));
    }
  }
  const goalMet = results.every((r) => r.total.p99 < GOAL_P99_MS);
  console.log(JSON.stringify({ bench: 'trigger-agent', machine: m, loadavg1End: os.loadavg()[0], settings: { rates: RATES, calls: CALLS, warmup: WARMUP, files: FILES, output: opts.output, maxRuns: MAX_RUNS, spares: opts.spares ?? 'default' }, goalP99Ms: GOAL_P99_MS, goalMet, results, profiles }));
}

main().then(
  () => cleanUp().then(() => process.exit(0)),
  (e) => {
    process.stderr.write(`bench failed: ${e?.stack ?? e}\n`);
    void cleanUp().then(() => process.exit(1));
  },
);
