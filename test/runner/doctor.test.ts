// `svc-runner doctor` with the real bundle against the REAL server: one `ok|warn|fail  <check>: <detail>`
// line per check in a fixed order, exit 1 only when a check fails. Not paired, revoked, server stopped
// and an invalid runner.json fail; missing tmux/git/agents and a taken OTLP port only warn; the OTLP port
// held by the running daemon itself is fine. A few checks are also called directly (Node version).
// needs: tmux
import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentsCheck, formatCheck, nodeCheck } from '../../runner/doctor.ts';
import { configSchema } from '../../runner/config.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { pairRunner } from '../helpers/wsclient.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { CliResult, Sandbox } from './_harness.ts';

const CHECKS = ['config', 'paired', 'state dir', 'daemon', 'server', 'token', 'tmux', 'git', 'agents', 'otlp', 'node'];

let server: RunningServer;
let sb: Sandbox;
const listeners: Server[] = [];
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => {
  await killDaemons();
  await server?.cleanup();
});
test.before.each(() => {
  sb = sandbox();
});
test.after.each(async () => {
  await killDaemons();
  await Promise.all(listeners.splice(0).map((l) => new Promise((r) => l.close(r))));
  sb.cleanup();
});

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A port held by a listener in this process (closed after the test). */
const listening = () =>
  new Promise<number>((ok) => {
    const srv = createServer().listen(0, '127.0.0.1', () => ok((srv.address() as AddressInfo).port));
    listeners.push(srv);
  });
const freePort = () =>
  new Promise<number>((ok) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => ok(port));
    });
  });

/** The check lines of a run, as { level, name, detail }; fails on any line of another shape. */
function lines(r: CliResult) {
  const out = r.stdout.trimEnd().split('\n');
  return out.map((l) => {
    const m = /^(ok|warn|fail) {2,4}([a-z ]+): (.+)$/.exec(l);
    assert.ok(m, `a check line: ${JSON.stringify(l)}\n${r.stdout}${r.stderr}`);
    return { level: m![1], name: m![2], detail: m![3] };
  });
}
const line = (r: CliResult, name: string) => lines(r).find((l) => l.name === name)!;

/** Pair the sandbox with `srv` through the admin API; runner.json as the real `pair` leaves it. */
async function paired(s: Sandbox, srv: RunningServer = server, extra: Record<string, unknown> = {}) {
  const { runnerId, token } = await pairRunner(srv.api, srv.url, `m-${Math.random().toString(36).slice(2, 8)}`);
  s.writeConfig({ server: srv.url, runnerId, token, otlp: { http: await freePort() }, ...extra });
  return { runnerId, token };
}

test('not paired → exit 1 with the `fail  paired:` line; server and token are not asked', async () => {
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 1, r.stdout + r.stderr);
  assert.equal(lines(r).map((l) => l.name), CHECKS);
  assert.match(r.stdout, /^fail {2}paired: not paired: run svc-runner pair --server <url> --code /m);
  assert.match(r.stdout, new RegExp(`^ok {4}config: ${esc(sb.configPath)} does not exist yet`, 'm'));
  assert.equal(line(r, 'server'), { level: 'warn', name: 'server', detail: 'not checked (not paired)' });
  assert.equal(line(r, 'token'), { level: 'warn', name: 'token', detail: 'not checked (not paired)' });
  assert.is(r.stderr, '');
});

test('paired with the real server and everything present → exit 0, every check line in order, all ok; the token is not printed', async () => {
  const { runnerId, token } = await paired(sb);
  sb.fakeBin('claude', 'echo 1.0.0');
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 0, r.stdout + r.stderr);
  const got = lines(r);
  assert.equal(got.map((l) => l.name), CHECKS);
  assert.equal(got.filter((l) => l.level !== 'ok'), [], r.stdout);
  assert.is(line(r, 'config').detail, `${sb.configPath} is valid`);
  assert.is(line(r, 'paired').detail, `as runner ${runnerId} with ${server.url}`);
  assert.match(line(r, 'server').detail, new RegExp(`^${esc(server.url)} reachable \\(\\d+ ms\\)$`));
  assert.is(line(r, 'token').detail, 'accepted');
  assert.is(line(r, 'daemon').detail, 'not running');
  assert.match(line(r, 'agents').detail, new RegExp(`claude: ${esc(join(sb.bin, 'claude'))} \\(no profile\\), codex: not found`));
  assert.match(line(r, 'otlp').detail, /^127\.0\.0\.1:\d+ is free for the receiver$/);
  assert.is(line(r, 'node').detail, process.version);
  assert.not.ok(r.stdout.includes(token));
});

test('the real daemon running → `ok daemon: running (pid N)`; a stale lock file → warn, exit still 0', async () => {
  await paired(sb);
  sb.fakeBin('codex', 'echo 1.0.0');
  const d = startDaemon(sb);
  await d.waitFor(/connected to/, 15_000);
  const running = await runCli(sb, ['doctor']);
  assert.is(running.status, 0, running.stdout);
  assert.equal(line(running, 'daemon'), { level: 'ok', name: 'daemon', detail: `running (pid ${d.proc.pid})` });
  await d.kill('SIGKILL'); // leaves its lock file behind
  const stale = await runCli(sb, ['doctor']);
  assert.is(stale.status, 0, stale.stdout);
  assert.is(line(stale, 'daemon').level, 'warn');
  assert.match(line(stale, 'daemon').detail, new RegExp(`^not running, but a stale lock file is left \\(pid ${d.proc.pid} is gone\\)`));
});

test('revoked through the admin API → exit 1 with `fail  token: revoked: pair again`', async () => {
  const { runnerId } = await paired(sb);
  assert.is((await server.api(`/api/runners/${runnerId}`, { method: 'DELETE' })).status, 204);
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 1, r.stdout);
  assert.is(line(r, 'server').level, 'ok', 'the server itself answers');
  assert.match(r.stdout, /^fail {2}token: revoked: pair again/m);
  assert.equal(lines(r).filter((l) => l.level === 'fail').map((l) => l.name), ['token']);
});

test('a token the server never issued → exit 1 with `fail  token: not accepted`', async () => {
  sb.writeConfig({ server: server.url, runnerId: 'r-1', token: 'svc_rt_never_issued', otlp: { enabled: false } });
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 1);
  assert.match(r.stdout, /^fail {2}token: not accepted/m);
});

test('the server stopped → exit 1 with `fail  server: … unreachable`; the token is not asked', async () => {
  const other = await startServer({ admin: true });
  try {
    await paired(sb, other);
    const up = await runCli(sb, ['doctor']);
    assert.is(line(up, 'token').level, 'ok', up.stdout);
    await other.stop();
    const r = await runCli(sb, ['doctor']);
    assert.is(r.status, 1);
    assert.equal(line(r, 'server'), { level: 'fail', name: 'server', detail: `${other.url} unreachable (ECONNREFUSED)` });
    assert.equal(line(r, 'token'), { level: 'warn', name: 'token', detail: 'not checked (server unreachable)' });
  } finally {
    await other.cleanup();
  }
});

test('PATH with only node: tmux, git and the agents are warnings, exit 0 when the rest is fine', async () => {
  await paired(sb);
  const onlyNode = join(sb.dir, 'only-node');
  mkdirSync(onlyNode);
  symlinkSync(process.execPath, join(onlyNode, 'node'));
  const r = await runCli(sb, ['doctor'], { PATH: onlyNode });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.equal(lines(r).map((l) => l.name), CHECKS);
  assert.equal(
    lines(r).filter((l) => l.level !== 'ok').map((l) => l.name),
    ['tmux', 'git', 'agents'],
  );
  assert.match(line(r, 'tmux').detail, /^not found on PATH: orchestrator, worker and skill runs need it$/);
  assert.match(line(r, 'git').detail, /^not found on PATH/);
  assert.match(line(r, 'agents').detail, /^none of claude, codex, gemini, opencode found/);
});

test('a configured profile whose binary is missing → warn naming the profile; its own PATH is used', async () => {
  await paired(sb, server, {
    profiles: [
      { id: 'gone', runtime: 'codex', binary: '/nonexistent/codex', env: {}, args: [] },
      { id: 'mine', runtime: 'claude', env: { PATH: join(sb.dir, 'agent-bin') }, args: [] },
    ],
  });
  mkdirSync(join(sb.dir, 'agent-bin'));
  writeFileSync(join(sb.dir, 'agent-bin', 'claude'), '#!/bin/sh\n', { mode: 0o755 });
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 0, r.stdout);
  const agents = line(r, 'agents');
  assert.is(agents.level, 'warn');
  assert.match(agents.detail, /profile gone: \/nonexistent\/codex not found/);
  assert.match(agents.detail, new RegExp(`profile mine: ${esc(join(sb.dir, 'agent-bin', 'claude'))} \\(no credentials found\\)`));
});

test('the OTLP port taken by another listener → warn (exit 0); disabled → ok without binding', async () => {
  const port = await listening();
  await paired(sb, server, { otlp: { http: port } });
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 0, r.stdout);
  assert.equal(line(r, 'otlp'), {
    level: 'warn',
    name: 'otlp',
    detail: `127.0.0.1:${port} is taken by another program: the runner will run without its receiver (set otlp.http to a free port, or otlp.enabled to false)`,
  });
  sb.writeConfig({ ...sb.readConfig(), otlp: { enabled: false, http: port } });
  const off = await runCli(sb, ['doctor']);
  assert.equal(line(off, 'otlp'), { level: 'ok', name: 'otlp', detail: 'receiver disabled (otlp.enabled is false)' });
});

/** A stand-in for a daemon that holds the OTLP port: a node process with `run` in its command line
 *  (what the lock check looks for) listening on the port, its pid in the lock file. */
async function daemonHolding(port: number | null) {
  const script = `const s = require('net').createServer(); ${port === null ? '' : `s.listen(${port}, '127.0.0.1', () => console.log('up'));`} ${port === null ? "console.log('up');" : ''} setInterval(() => {}, 1000);`;
  const proc = spawn(process.execPath, ['-e', script, 'run'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  await waitUntil(() => out.includes('up'), 10_000, 'the stand-in daemon to listen');
  mkdirSync(dirname(sb.lockPath), { recursive: true });
  writeFileSync(sb.lockPath, JSON.stringify({ pid: proc.pid, startedAt: new Date().toISOString() }) + '\n');
  return { pid: proc.pid!, stop: () => new Promise((r) => (proc.once('close', r), proc.kill('SIGKILL'))) };
}

test('the OTLP port held by the running daemon itself → ok saying so; held by another while the daemon runs → still a warning', async () => {
  const port = await freePort();
  await paired(sb, server, { otlp: { http: port } });
  const d = await daemonHolding(port);
  try {
    const r = await runCli(sb, ['doctor']);
    assert.is(r.status, 0, r.stdout);
    assert.equal(line(r, 'daemon').detail, `running (pid ${d.pid})`);
    assert.equal(line(r, 'otlp'), { level: 'ok', name: 'otlp', detail: `127.0.0.1:${port} is held by the running daemon (pid ${d.pid})` });
  } finally {
    await d.stop();
  }
  const other = await listening();
  sb.writeConfig({ ...sb.readConfig(), otlp: { http: other } });
  const idle = await daemonHolding(null);
  try {
    const r = await runCli(sb, ['doctor']);
    assert.is(line(r, 'daemon').level, 'ok');
    assert.is(line(r, 'otlp').level, 'warn', r.stdout);
    assert.match(line(r, 'otlp').detail, /is taken by another program/);
  } finally {
    await idle.stop();
  }
});

test('an invalid runner.json → exit 1 naming the bad field, never its value; no network checks', async () => {
  sb.writeConfig({ server: 'http://127.0.0.1:9', runnerId: 'r', token: 'svc_rt_SECRET value with spaces', otlp: { http: 'svc_rt_OTHERSECRET' } });
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 1, r.stdout);
  assert.equal(lines(r).map((l) => l.name), CHECKS);
  const config = line(r, 'config');
  assert.is(config.level, 'fail');
  assert.match(config.detail, new RegExp(`^${esc(sb.configPath)} is invalid: `));
  assert.match(config.detail, /token: /);
  assert.match(config.detail, /otlp\.http: must be number/);
  assert.not.match(r.stdout + r.stderr, /SECRET/);
  for (const name of ['paired', 'server', 'token', 'otlp']) assert.equal(line(r, name), { level: 'warn', name, detail: 'not checked (runner.json is invalid)' });
});

test('runner.json that is not JSON → exit 1 with the line number only', async () => {
  sb.writeConfig('{\n  "token": "svc_rt_SECRET"\n  "server": 1\n}');
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 1);
  assert.match(line(r, 'config').detail, /is invalid: is not valid JSON \(line 3\)$/);
  assert.not.match(r.stdout + r.stderr, /SECRET/);
});

test('a file where the state directory goes → `fail  state dir:` and exit 1', async () => {
  await paired(sb);
  mkdirSync(sb.env.XDG_STATE_HOME, { recursive: true });
  writeFileSync(join(sb.env.XDG_STATE_HOME, 'svc'), 'not a directory');
  const r = await runCli(sb, ['doctor']);
  assert.is(r.status, 1);
  assert.equal(line(r, 'state dir'), { level: 'fail', name: 'state dir', detail: `${join(sb.env.XDG_STATE_HOME, 'svc')} is not a directory` });
});

test('doctor takes no arguments or options → exit 2 with usage', async () => {
  const r = await runCli(sb, ['doctor', '--fix']);
  assert.is(r.status, 2);
  assert.match(r.stderr, /doctor: unknown option --fix/);
});

test('checks called directly: Node.js below 20 fails; the line format pads the level', () => {
  assert.equal(nodeCheck('v18.19.1'), { level: 'fail', name: 'node', detail: 'v18.19.1: svc-runner needs Node.js 20 or newer' });
  assert.is(nodeCheck('v20.0.0').level, 'ok');
  assert.is(nodeCheck('v22.11.0').level, 'ok');
  assert.is(nodeCheck('garbage').level, 'fail');
  assert.is(formatCheck({ level: 'ok', name: 'git', detail: '/usr/bin/git' }), 'ok    git: /usr/bin/git');
  assert.is(formatCheck({ level: 'fail', name: 'paired', detail: 'x' }), 'fail  paired: x');
  const none = agentsCheck(configSchema.parse({}), { PATH: '' });
  assert.is(none.level, 'warn');
});

test.run();
