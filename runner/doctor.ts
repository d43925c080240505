// `svc-runner doctor`: one line per check, `ok|warn|fail  <check>: <detail>`, in a fixed order; exit 1
// only when a check fails. Each check is a small function returning a Check, so it can be tested alone.
//   config, paired, state dir, daemon (the lock), server, token, tmux, git, agents, otlp, node.
// Checks that need something an earlier check found missing (a valid runner.json, a pairing, a server
// that answers) say "not checked" as a warning; the earlier check already failed.
// Nothing is written but a probe file in the state directory (removed at once); the OTLP port is bound
// for a moment and released. runner.json values are never printed: a ConfigError names fields only.
import { accessSync, constants, existsSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { ConfigError, isPaired, loadConfig, RUNTIME_NAMES } from './config.ts';
import type { LoadedConfig, RunnerConfig } from './config.ts';
import { lockHolder, lockOwner } from './lock.ts';
import { configPath, lockPath, spoolDir, stateDir } from './paths.ts';
import type { Env } from './paths.ts';
import { findExecutable, isAuthenticated } from './profiles.ts';
import { RUNTIMES } from './runtimes/index.ts';
import { reach, tokenAccepted } from './status.ts';

type Out = { write: (s: string) => unknown };

export type Level = 'ok' | 'warn' | 'fail';
export interface Check {
  level: Level;
  name: string;
  detail: string;
}

const check = (level: Level, name: string, detail: string): Check => ({ level, name, detail });
export const formatCheck = (c: Check): string => `${c.level.padEnd(4)}  ${c.name}: ${c.detail}`;

export function configCheck(path: string): { check: Check; loaded: LoadedConfig | null } {
  try {
    const loaded = loadConfig(path);
    return { loaded, check: check('ok', 'config', loaded.exists ? `${path} is valid` : `${path} does not exist yet (defaults apply)`) };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return { loaded: null, check: check('fail', 'config', `${path} is invalid: ${e.problems.join('; ')}`) };
  }
}

export function pairedCheck(c: RunnerConfig | null): Check {
  if (!c) return check('warn', 'paired', 'not checked (runner.json is invalid)');
  if (isPaired(c)) return check('ok', 'paired', `as runner ${c.runnerId} with ${c.server}`);
  return check('fail', 'paired', 'not paired: run svc-runner pair --server <url> --code <code from the Runners page>');
}

/** Write and remove a probe file: access() alone misses read-only file systems. */
function probeWrite(dir: string): string | null {
  const probe = join(dir, `.doctor-${process.pid}.tmp`);
  try {
    writeFileSync(probe, '', { flag: 'wx', mode: 0o600 });
    rmSync(probe, { force: true });
    return null;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  }
}

/** The state directory (and its spool) can be written; before the first run, its nearest existing
 *  parent must let the daemon create it. */
export function stateDirCheck(dir: string, spool: string): Check {
  if (!existsSync(dir)) {
    let parent = dirname(dir);
    while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent);
    try {
      accessSync(parent, constants.W_OK | constants.X_OK);
      return check('ok', 'state dir', `${dir} does not exist yet; the daemon can create it`);
    } catch (e) {
      return check('fail', 'state dir', `${dir} does not exist and ${parent} is not writable (${(e as NodeJS.ErrnoException).code})`);
    }
  }
  for (const d of existsSync(spool) ? [dir, spool] : [dir]) {
    if (!statSync(d).isDirectory()) return check('fail', 'state dir', `${d} is not a directory`);
    const problem = probeWrite(d);
    if (problem) return check('fail', 'state dir', `${d} is not writable (${problem})`);
  }
  return check('ok', 'state dir', `${dir} is writable`);
}

export function daemonCheck(lock: string): Check {
  const pid = lockHolder(lock);
  if (pid !== null) return check('ok', 'daemon', `running (pid ${pid})`);
  if (!existsSync(lock)) return check('ok', 'daemon', 'not running');
  const owner = lockOwner(lock);
  return check('warn', 'daemon', `not running, but a stale lock file is left (${owner ? `pid ${owner} is gone` : 'no pid in it'}): the next \`svc-runner run\` takes it over (${lock})`);
}

export async function serverCheck(c: RunnerConfig | null): Promise<Check> {
  if (!c || !isPaired(c)) return check('warn', 'server', `not checked (${c ? 'not paired' : 'runner.json is invalid'})`);
  const r = await reach(c.server);
  return check(r.ok ? 'ok' : 'fail', 'server', `${c.server} ${r.detail}`);
}

export async function tokenCheck(c: RunnerConfig | null, server: Check): Promise<Check> {
  if (!c || !isPaired(c) || server.level !== 'ok') return check('warn', 'token', `not checked (${!c ? 'runner.json is invalid' : !isPaired(c) ? 'not paired' : 'server unreachable'})`);
  const t = await tokenAccepted(c.server, c.token);
  return check(t.ok ? 'ok' : 'fail', 'token', t.detail);
}

export function toolCheck(name: string, why: string, env: Env): Check {
  const path = findExecutable(name, env);
  return path ? check('ok', name, path) : check('warn', name, `not found on PATH: ${why}`);
}

/** The agent runtimes: each configured profile's binary (its own env's PATH), then, for a runtime no
 *  profile names, its default binary on PATH (what `profiles --detect` would find). */
export function agentsCheck(c: RunnerConfig | null, env: Env): Check {
  const profiles = c?.profiles ?? [];
  const parts: string[] = [];
  const missing: string[] = [];
  let found = 0;
  for (const p of profiles) {
    const binary = p.binary ?? RUNTIMES[p.runtime].binary;
    const path = findExecutable(binary, { ...env, ...p.env });
    if (!path) missing.push(`profile ${p.id}: ${binary} not found`);
    else {
      found++;
      parts.push(`profile ${p.id}: ${path}${isAuthenticated(p.runtime, p, env) ? '' : ' (no credentials found)'}`);
    }
  }
  for (const runtime of RUNTIME_NAMES.filter((r) => !profiles.some((p) => p.runtime === r))) {
    const path = findExecutable(RUNTIMES[runtime].binary, env);
    if (path) found++;
    parts.push(path ? `${runtime}: ${path} (no profile)` : `${runtime}: not found`);
  }
  const detail = [...missing, ...parts].join(', ');
  if (found === 0) return check('warn', 'agents', `none of ${RUNTIME_NAMES.join(', ')} found (${detail}): agents cannot be launched`);
  return check(missing.length ? 'warn' : 'ok', 'agents', detail);
}

/** Bind 127.0.0.1:<port> for a moment: null when free, else the error code. */
export function portBusy(port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    srv.listen({ port, host: '127.0.0.1' }, () => srv.close(() => resolve(null)));
  });
}

/** Linux: whether process `pid` holds a listening TCP socket on `port` (from /proc/net/tcp{,6} and the
 *  process's descriptors). null where /proc cannot tell. */
export function pidListensOn(pid: number, port: number): boolean | null {
  let inodes: Set<string>;
  try {
    const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
    inodes = new Set(
      ['/proc/net/tcp', '/proc/net/tcp6']
        .filter((f) => existsSync(f))
        .flatMap((f) => readFileSync(f, 'utf8').split('\n').slice(1))
        .map((l) => l.trim().split(/\s+/))
        .filter((cols) => cols.length > 9 && cols[3] === '0A' && cols[1].endsWith(`:${hexPort}`))
        .map((cols) => cols[9]),
    );
    const fds = readdirSync(`/proc/${pid}/fd`);
    return fds.some((fd) => {
      try {
        return inodes.has(/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? '');
      } catch {
        return false;
      }
    });
  } catch {
    return null;
  }
}

export async function otlpCheck(c: RunnerConfig | null, daemonPid: number | null): Promise<Check> {
  if (!c) return check('warn', 'otlp', 'not checked (runner.json is invalid)');
  if (c.otlp && !c.otlp.enabled) return check('ok', 'otlp', 'receiver disabled (otlp.enabled is false)');
  const port = c.otlp?.http ?? 4318;
  const busy = await portBusy(port);
  if (!busy) return check('ok', 'otlp', `127.0.0.1:${port} is free for the receiver`);
  if (busy === 'EADDRINUSE' && daemonPid !== null) {
    const held = pidListensOn(daemonPid, port);
    if (held) return check('ok', 'otlp', `127.0.0.1:${port} is held by the running daemon (pid ${daemonPid})`);
    if (held === null) return check('ok', 'otlp', `127.0.0.1:${port} is in use, presumably by the running daemon (pid ${daemonPid})`);
  }
  const why = busy === 'EADDRINUSE' ? 'taken by another program' : `cannot be bound (${busy})`;
  return check('warn', 'otlp', `127.0.0.1:${port} is ${why}: the runner will run without its receiver (set otlp.http to a free port, or otlp.enabled to false)`);
}

export function nodeCheck(version: string): Check {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  return major >= 20 ? check('ok', 'node', version) : check('fail', 'node', `${version}: svc-runner needs Node.js 20 or newer`);
}

export async function runChecks(env: Env): Promise<Check[]> {
  const { check: config, loaded } = configCheck(configPath(env));
  const c = loaded?.config ?? null;
  const daemon = daemonCheck(lockPath(env));
  const server = await serverCheck(c);
  return [
    config,
    pairedCheck(c),
    stateDirCheck(stateDir(env), spoolDir(env)),
    daemon,
    server,
    await tokenCheck(c, server),
    toolCheck('tmux', 'orchestrator, worker and skill runs need it', env),
    toolCheck('git', 'projects, worktrees and skill installs need it', env),
    agentsCheck(c, env),
    await otlpCheck(c, lockHolder(lockPath(env))),
    nodeCheck(process.version),
  ];
}

export async function doctor(env: Env, out: Out): Promise<number> {
  const checks = await runChecks(env);
  for (const c of checks) out.write(formatCheck(c) + '\n');
  return checks.some((c) => c.level === 'fail') ? 1 : 0;
}
