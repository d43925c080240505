#!/usr/bin/env node
// Pane-watcher CPU (docs/orchestrator.md "Pane watcher"): what watching --sessions tmux sessions at
// fleet.pollSeconds=--poll costs, against an idle daemon in the same run. Three real daemons
// (dist/svc-runner.mjs, copied to a temp dir) run side by side for the same window, each with its own
// state dir and its own tmux server (SVC_TMUX_SOCKET), connected to the runner tests' fake server:
//   idle   — no sessions: the baseline (connection, timers, an empty `tmux list-sessions` per poll);
//   quiet  — --sessions sessions of the fake Claude Code TUI (test/runner/fixtures/fake-agent.sh) sitting
//            idle: panes without output are not captured again (the activity check);
//   busy   — --sessions sessions that print a line every second: every pane is captured every poll.
// A fourth tmux server holds --sessions busy sessions that no daemon watches: the baseline of the busy
// tmux server, whose CPU includes drawing the output. CPU = utime + stime of the process plus its
// reaped children (the tmux clients it runs), from /proc/<pid>/stat, over the window after a warm-up.
//
//   node esbuild.config.mjs && node --import tsx bench/panes.mjs [--sessions 20] [--poll 5]
//                                                [--window 60] [--warmup 12]
//
// Linux only (/proc). Every daemon, tmux server and temp dir it makes is removed at the end, also on
// error or Ctrl-C. Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startFakeServer } from '../test/runner/_fake-server.ts';
import { fmt, installGuards, machine, onCleanup, ROOT, round, spawnTracked, stopChild, table, tempDir, wholeOption } from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    sessions: { type: 'string', default: '20' },
    poll: { type: 'string', default: '5' },
    window: { type: 'string', default: '60' },
    warmup: { type: 'string', default: '12' },
  },
  strict: true,
});
const whole = (name, min, max) => wholeOption(name, opts[name], min, max);
const SESSIONS = whole('sessions', 1, 200);
const POLL = whole('poll', 5, 3600);
const WINDOW = whole('window', 10, 3600);
const WARMUP = whole('warmup', 0, 600);
const FAKE_AGENT = join(ROOT, 'test', 'runner', 'fixtures', 'fake-agent.sh');
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

const log = (m) => process.stderr.write(`[bench:panes] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds of a process and of its reaped children (/proc/<pid>/stat fields 14-17). */
function cpuOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [utime, stime, cutime, cstime] = [f[11], f[12], f[13], f[14]].map(Number);
  return (utime + stime + cutime + cstime) / TICKS;
}

function tmux(socket, env, ...args) {
  const r = spawnSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function main() {
  installGuards(WARMUP + WINDOW + 300);
  const m = machine();
  const dir = tempDir('svc-bench-panes-');
  const bundle = join(dir, 'svc-runner.mjs');
  copyFileSync(join(ROOT, 'dist', 'svc-runner.mjs'), bundle);
  const root = join(dir, 'work', 'repo');
  mkdirSync(root, { recursive: true });
  const fake = await startFakeServer();
  fake.options.projects = [{ id: 'p1', root }];
  onCleanup(() => fake.stop());
  cleanups.push(() => fake.stop());

  const sockets = [];
  const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: 'UTC', LANG: 'C.UTF-8' };
  const killServers = async () => {
    for (const s of sockets) {
      spawnSync('tmux', ['-L', s, 'kill-server']);
      rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid()}`, s), { force: true });
    }
  };
  onCleanup(killServers);
  cleanups.push(killServers);

  /** A tmux server with `n` sessions named like slots of project p1. */
  function sessionsOn(name, kind) {
    const socket = `svc-bench-${process.pid}-${name}`;
    sockets.push(socket);
    const env = { ...baseEnv, HOME: join(dir, name), FAKE_AGENT_DIR: join(dir, name, 'agent') };
    mkdirSync(env.HOME, { recursive: true });
    for (let i = 0; i < SESSIONS; i++) {
      const argv = kind === 'quiet' ? ['sh', FAKE_AGENT, 'x'] : ['sh', '-c', 'i=0; while :; do i=$((i+1)); echo "line $i: working on it"; sleep 1; done'];
      tmux(socket, env, 'new-session', '-d', '-s', `svc-p1-slot-s${i}`, '-x', '200', '-y', '50', '--', ...argv);
    }
    return { socket, pid: Number(tmux(socket, env, 'display-message', '-p', '#{pid}').trim()) };
  }

  function daemon(name, socket) {
    const home = join(dir, `d-${name}`);
    const env = { ...baseEnv, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_STATE_HOME: join(home, 'state'), SVC_TMUX_SOCKET: socket };
    mkdirSync(join(env.XDG_CONFIG_HOME, 'svc'), { recursive: true });
    const config = { server: fake.url, runnerId: `bench-${name}`, token: 'svc_rt_bench_token_0123456789abcdef', fleet: { pollSeconds: POLL } };
    writeFileSync(join(env.XDG_CONFIG_HOME, 'svc', 'runner.json'), JSON.stringify(config), { mode: 0o600 });
    const child = spawnTracked(process.execPath, [bundle, 'run'], { cwd: dir, env });
    child.stderr.on('data', () => {});
    child.stdout.on('data', () => {});
    return child;
  }

  log(`${SESSIONS} sessions per server, fleet.pollSeconds=${POLL}, window ${WINDOW} s after ${WARMUP} s warm-up`);
  const quiet = sessionsOn('quiet', 'quiet');
  const busy = sessionsOn('busy', 'busy');
  const unwatched = sessionsOn('unwatched', 'busy');
  const emptySocket = `svc-bench-${process.pid}-empty`;
  sockets.push(emptySocket);
  const daemons = { idle: daemon('idle', emptySocket), quiet: daemon('quiet', quiet.socket), busy: daemon('busy', busy.socket) };
  await fake.waitConns(3, 30_000);
  await sleep(WARMUP * 1000);

  const procs = { ...Object.fromEntries(Object.entries(daemons).map(([k, c]) => [`daemon ${k}`, c.pid])), 'tmux quiet': quiet.pid, 'tmux busy': busy.pid, 'tmux unwatched (busy)': unwatched.pid };
  const before = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, cpuOf(pid)]));
  const t0 = performance.now();
  await sleep(WINDOW * 1000);
  const seconds = (performance.now() - t0) / 1000;
  const used = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, cpuOf(pid) - before[k]]));
  const pct = (s) => (100 * s) / seconds;
  const polls = seconds / POLL;
  const events = fake.received.filter((e) => e.kind.startsWith('pane.') || e.kind.startsWith('fleet.pane')).length;

  for (const c of Object.values(daemons)) await stopChild(c);
  const figures = {
    idleDaemonPct: round(pct(used['daemon idle']), 3),
    quietDaemonPct: round(pct(used['daemon quiet']), 3),
    busyDaemonPct: round(pct(used['daemon busy']), 3),
    quietWatcherMsPerPoll: round(((used['daemon quiet'] - used['daemon idle']) * 1000) / polls, 1),
    busyWatcherMsPerPoll: round(((used['daemon busy'] - used['daemon idle']) * 1000) / polls, 1),
    tmuxQuietPct: round(pct(used['tmux quiet']), 3),
    tmuxBusyPct: round(pct(used['tmux busy']), 3),
    tmuxUnwatchedBusyPct: round(pct(used['tmux unwatched (busy)']), 3),
    tmuxCaptureMsPerPoll: round(((used['tmux busy'] - used['tmux unwatched (busy)']) * 1000) / polls, 1),
    paneEvents: events,
  };
  const rows = [
    ['process', 'CPU s', 'CPU %', '− baseline, ms per poll'],
    ['daemon idle (baseline)', fmt(used['daemon idle'], 3), fmt(pct(used['daemon idle']), 3), ''],
    [`daemon, ${SESSIONS} quiet sessions`, fmt(used['daemon quiet'], 3), fmt(pct(used['daemon quiet']), 3), fmt(figures.quietWatcherMsPerPoll, 1)],
    [`daemon, ${SESSIONS} busy sessions`, fmt(used['daemon busy'], 3), fmt(pct(used['daemon busy']), 3), fmt(figures.busyWatcherMsPerPoll, 1)],
    ['tmux server, unwatched busy (baseline)', fmt(used['tmux unwatched (busy)'], 3), fmt(pct(used['tmux unwatched (busy)']), 3), ''],
    ['tmux server, watched busy', fmt(used['tmux busy'], 3), fmt(pct(used['tmux busy']), 3), fmt(figures.tmuxCaptureMsPerPoll, 1)],
    ['tmux server, watched quiet', fmt(used['tmux quiet'], 3), fmt(pct(used['tmux quiet']), 3), ''],
  ];
  process.stdout.write(`\n${table(rows)}\n\nwindow ${fmt(seconds, 1)} s = ${fmt(polls, 1)} polls; pane events spooled: ${events}\n`);
  process.stdout.write(JSON.stringify({ bench: 'panes', sessions: SESSIONS, pollSeconds: POLL, windowSeconds: round(seconds, 1), machine: m, figures }) + '\n');
}

const cleanups = [];
main()
  .finally(async () => {
    for (const fn of cleanups) await fn();
  })
  .then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
