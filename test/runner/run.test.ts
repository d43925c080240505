// `svc-runner run` against a fake API: refusal when not paired, the handshake, hello, commands through
// the registry, the watch list, the lock and a clean stop.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROTOCOL_VERSION } from '../../protocol/version.ts';
import { startFakeServer } from './_fake-server.ts';
import type { FakeServer } from './_fake-server.ts';
import { killDaemons, pairedConfig, runCli, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let fake: FakeServer;
let sb: Sandbox;
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

test.before.each(async () => {
  fake = await startFakeServer();
  sb = sandbox();
});
test.after.each(async () => {
  await killDaemons();
  await fake.stop();
  sb.cleanup();
});

test('not paired → exit 1 with a message saying how to pair; nothing is spooled or locked', async () => {
  const r = await runCli(sb, ['run']);
  assert.is(r.status, 1);
  assert.match(r.stderr, /not paired/);
  assert.match(r.stderr, /svc-runner pair --server/);
  assert.equal(sb.spoolFiles(), []);
  assert.is(fake.conns.length, 0);
});

test('an invalid runner.json → exit 1 naming the bad fields, never the token value', async () => {
  sb.writeConfig({ server: fake.url, runnerId: 'r1', token: 'tok en SUPERSECRET', fleet: { pollSeconds: 2 } });
  const r = await runCli(sb, ['run']);
  assert.is(r.status, 1);
  assert.match(r.stderr, /token/);
  assert.match(r.stderr, /fleet\.pollSeconds/);
  assert.not.match(r.stdout + r.stderr, /SUPERSECRET/);
});

test('connects to /runner with the bearer token, protocol and version headers; hello is its first frame', async () => {
  sb.writeConfig(pairedConfig(fake.url, { profiles: [] }));
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  assert.is(conn.headers.authorization, 'Bearer svc_rt_test_token_0123456789abcdef');
  assert.is(conn.headers['x-svc-protocol'], String(PROTOCOL_VERSION));
  assert.is(conn.headers['x-svc-runner-version'], pkg.version);
  const hello = await conn.next('hello');
  assert.is(conn.frames[0], hello);
  assert.is(hello.version, pkg.version);
  assert.match(hello.target, /^linux-(amd64|arm64)$/);
  assert.is(hello.hostname, hostname());
  assert.equal(hello.capabilities, ['terminal', 'codehost', 'codehost.tokens', 'codehost.gitlab', 'commands.replay', 'profiles', 'roots.check', 'skills.pool', 'pr.describe']);
  // Then its usable runtime profiles (docs/runner.md, "Agent runtimes reported"): none configured.
  assert.equal((await conn.next('profiles')).profiles, []);
  await d.waitFor(/no runtime profiles are configured/);
  assert.not.match(d.output(), /svc_rt_test_token/);
  assert.equal(await d.kill('SIGTERM'), { code: 0, signal: null });
});

test('answers runner.ping, and disabled / unknown / not implemented / invalid commands with their error codes', async () => {
  sb.writeConfig(pairedConfig(fake.url, { disabledCommands: ['pr.approve', 'terminal.attach'] }));
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  await conn.next('hello');
  const ping = await conn.command('runner.ping');
  assert.is(ping.ok, true);
  assert.is(ping.data.pong, true);
  assert.ok(Math.abs(Date.parse(ping.data.time) - Date.now()) < 10_000);

  const disabled = await conn.command('pr.approve', { projectId: 'p1', number: 3 });
  assert.equal([disabled.ok, disabled.error.code], [false, 'disabled']);
  const unknown = await conn.command('rm.everything', {});
  assert.equal([unknown.ok, unknown.error.code], [false, 'unknown_command']);
  // Every command of the allowlist has a handler now; a command's own error still comes back as a code.
  const notWatched = await conn.command('issue.create', { projectId: 'p1', title: 't' });
  assert.equal([notWatched.ok, notWatched.error.code], [false, 'unknown_project']);
  const bad = await conn.command('project.inspect', { path: 'relative/path', extra: 1 });
  assert.equal([bad.ok, bad.error.code], [false, 'invalid_args']);
  assert.match(bad.error.message, /path/);
  assert.match(bad.error.message, /extra: unknown key/);
  // The daemon survived all of it.
  assert.is((await conn.command('runner.ping')).ok, true);
  await d.kill();
});

test('runner.describe: host facts and versions; disabling terminal.attach removes the terminal capability, project.inspect the roots.check one', async () => {
  sb.writeConfig(pairedConfig(fake.url, { disabledCommands: ['terminal.attach', 'project.inspect'] }));
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  const hello = await conn.next('hello');
  assert.equal(hello.capabilities, ['codehost', 'codehost.tokens', 'codehost.gitlab', 'commands.replay', 'profiles', 'skills.pool', 'pr.describe']);
  const r = await conn.command('runner.describe');
  assert.is(r.ok, true);
  assert.is(r.data.hostname, hostname());
  assert.is(r.data.os, 'linux');
  assert.is(r.data.node, process.version);
  assert.is(r.data.version, pkg.version);
  assert.is(r.data.protocol, PROTOCOL_VERSION);
  assert.equal(r.data.capabilities, ['codehost', 'codehost.tokens', 'codehost.gitlab', 'commands.replay', 'profiles', 'skills.pool', 'pr.describe']);
  assert.equal(r.data.runtimes, []);
  assert.equal(r.data.disabledCommands, ['terminal.attach', 'project.inspect']);
  await d.kill();

  sb.writeConfig(pairedConfig(fake.url));
  sb.fakeBin('claude', 'echo "2.0.1 (Claude Code)"');
  const d2 = startDaemon(sb);
  const conn2 = await fake.waitConns(2);
  const r2 = await conn2.command('runner.describe');
  assert.equal(r2.data.capabilities, ['terminal', 'codehost', 'codehost.tokens', 'codehost.gitlab', 'commands.replay', 'profiles', 'roots.check', 'skills.pool', 'pr.describe']);
  assert.equal(r2.data.runtimes.map((x: any) => [x.runtime, x.version, x.authenticated]), [['claude', '2.0.1 (Claude Code)', false]]);
  await d2.kill();
});

test('welcome and projects frames update the cached watch list in runner.json (0600), other keys kept', async () => {
  fake.options.projects = [{ id: 'p1', root: '/srv/one' }];
  sb.writeConfig(pairedConfig(fake.url, { disabledCommands: ['skill.run'] }));
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  await conn.next('hello');
  await waitUntil(() => sb.readConfig().projects?.length === 1, 5000, 'projects from welcome');
  conn.send({ type: 'projects', projects: [{ id: 'p1', root: '/srv/one' }, { id: 'p2', root: '/srv/two' }] });
  await waitUntil(() => sb.readConfig().projects?.length === 2, 5000, 'projects from a projects frame');
  const cfg = sb.readConfig();
  assert.equal(cfg.disabledCommands, ['skill.run']);
  assert.is(cfg.token, 'svc_rt_test_token_0123456789abcdef');
  assert.equal(cfg.fleet, undefined, 'defaults are not written into the file');
  const { statSync } = await import('node:fs');
  assert.is(statSync(sb.configPath).mode & 0o777, 0o600);
  await d.kill();
});

test('a second daemon exits 1 naming the lock; the first keeps running', async () => {
  sb.writeConfig(pairedConfig(fake.url));
  const d = startDaemon(sb);
  await (await fake.waitConns(1)).next('hello');
  const second = await runCli(sb, ['run']);
  assert.is(second.status, 1);
  assert.match(second.stderr, /another svc-runner daemon is running \(pid \d+\)/);
  assert.match(second.stderr, /runner\.lock/);
  assert.is(fake.conns.length, 1);
  assert.is(d.proc.exitCode, null);
  await d.kill();
  assert.not.ok(readFileSafe(sb.lockPath), 'the lock is released on a clean stop');
});

test('a stale lock left by a dead process is taken over', async () => {
  sb.writeConfig(pairedConfig(fake.url));
  const dead = spawn(process.execPath, ['-e', '0']);
  const deadPid = dead.pid!;
  await new Promise((r) => dead.on('exit', r));
  mkdirSync(sb.spoolDir, { recursive: true });
  writeFileSync(sb.lockPath, JSON.stringify({ pid: deadPid, startedAt: new Date(0).toISOString() }));
  const d = startDaemon(sb);
  await (await fake.waitConns(1)).next('hello');
  assert.is(JSON.parse(readFileSync(sb.lockPath, 'utf8')).pid, d.proc.pid);
  await d.kill();
});

function readFileSafe(p: string): string | null {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return null;
  }
}

test('log lines have the documented shape: <ISO time> <level> <message> <JSON fields> (docs/runner.md)', async () => {
  sb.writeConfig(pairedConfig(fake.url, { profiles: [] }));
  const d = startDaemon(sb);
  await fake.waitConns(1);
  await d.waitFor(/no runtime profiles are configured/);
  await d.kill();
  const lines = d.output().split('\n').filter((l) => l.trim());
  assert.ok(lines.length >= 2, d.output());
  for (const line of lines) {
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (debug|info|warn|error) (.+?)( \{.*\})?$/.exec(line);
    assert.ok(m, `not in the documented shape: ${line}`);
    if (m![4]) assert.type(JSON.parse(m![4]), 'object');
  }
});

test.run();
