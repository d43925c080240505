// Black-box harness for the runner: a sandbox (HOME, XDG_CONFIG_HOME, XDG_STATE_HOME in a temp dir),
// the real bundle copied where no node_modules is near, and helpers to run it and wait for things.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
const BUNDLE_DIR = mkdtempSync(join(tmpdir(), 'svc-runner-bin-'));
export const BUNDLE = join(BUNDLE_DIR, 'svc-runner.mjs');
copyFileSync(join(ROOT, 'dist', 'svc-runner.mjs'), BUNDLE);
process.on('exit', () => rmSync(BUNDLE_DIR, { recursive: true, force: true }));

/** Spool files: one per append, JSON lines (runner/spool.ts); `spoolIds`/`spoolEvents` read the events in them. */
export const SPOOL_FILE = /^\d{13}\.\d{8}\.[a-z0-9]{6}(\.\d{1,6}\.jsonl|\.json)$/;

export interface Sandbox {
  dir: string;
  home: string;
  env: Record<string, string>;
  configPath: string;
  spoolDir: string;
  lockPath: string;
  writeConfig: (value: unknown) => void;
  readConfig: () => any;
  spoolFiles: () => string[];
  spoolIds: () => string[];
  spoolEvents: () => any[];
  /** A directory on PATH for fake executables; `fakeBin` writes a shell script there. */
  bin: string;
  fakeBin: (name: string, script: string) => string;
  cleanup: () => void;
}

export function sandbox(): Sandbox {
  const dir = mkdtempSync(join(tmpdir(), 'svc-runner-test-'));
  const home = join(dir, 'home');
  const bin = join(dir, 'bin');
  for (const d of [home, bin]) mkdirSync(d, { recursive: true });
  const env: Record<string, string> = {
    HOME: home,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_STATE_HOME: join(dir, 'state'),
    PATH: [bin, dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    TZ: 'UTC',
    LANG: 'C',
  };
  const configPath = join(env.XDG_CONFIG_HOME, 'svc', 'runner.json');
  const spoolDir = join(env.XDG_STATE_HOME, 'svc', 'spool');
  const spoolFiles = () => (existsSync(spoolDir) ? readdirSync(spoolDir).filter((n) => SPOOL_FILE.test(n)).sort() : []);
  const spoolEvents = () =>
    spoolFiles().flatMap((n) => {
      try {
        return readFileSync(join(spoolDir, n), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
      } catch {
        return []; // removed while reading (acknowledged)
      }
    });
  return {
    dir,
    home,
    env,
    bin,
    configPath,
    spoolDir,
    lockPath: join(spoolDir, 'runner.lock'),
    writeConfig: (value) => {
      mkdirSync(dirname(configPath), { recursive: true });
      writeFileSync(configPath, typeof value === 'string' ? value : JSON.stringify(value, null, 2), { mode: 0o600 });
    },
    readConfig: () => JSON.parse(readFileSync(configPath, 'utf8')),
    spoolFiles,
    spoolIds: () => spoolEvents().map((e) => e.id),
    spoolEvents,
    fakeBin: (name, script) => {
      const p = join(bin, name);
      writeFileSync(p, `#!/bin/sh\n${script}\n`);
      chmodSync(p, 0o755);
      return p;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface CliResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run the bundle to completion (asynchronously, so a fake server in this process keeps answering). */
export function runCli(sb: Sandbox, args: string[], extraEnv: Record<string, string> = {}, timeoutMs = 30_000): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BUNDLE, ...args], { cwd: sb.dir, env: { ...sb.env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc-runner ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stdout}${stderr}`));
    }, timeoutMs);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolvePromise({ status, signal, stdout, stderr });
    });
  });
}

export interface Daemon {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitFor: (re: RegExp, timeoutMs?: number) => Promise<void>;
  kill: (signal?: NodeJS.Signals) => Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const daemons = new Set<ChildProcess>();
process.on('exit', () => {
  for (const d of daemons) d.kill('SIGKILL');
});

/** Kill every daemon still running: call from `test.after.each`, so a failed test that left one does
 *  not keep the file waiting on its pipes. */
export async function killDaemons(): Promise<void> {
  const left = [...daemons];
  for (const d of left) d.kill('SIGKILL');
  await Promise.all(left.map((d) => (d.exitCode === null && d.signalCode === null ? new Promise((r) => d.once('close', r)) : null)));
}

/** Start `svc-runner run` in the background; `nodeFlags` go to node before the bundle (e.g. `--trace-opt`). */
export function startDaemon(sb: Sandbox, extraEnv: Record<string, string> = {}, nodeFlags: string[] = []): Daemon {
  const proc = spawn(process.execPath, [...nodeFlags, BUNDLE, 'run'], { cwd: sb.dir, env: { ...sb.env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  daemons.add(proc);
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.on('close', (code, signal) => {
      daemons.delete(proc);
      r({ code, signal });
    }),
  );
  return {
    proc,
    output: () => out,
    exited,
    waitFor: (re, timeoutMs = 10_000) => waitUntil(() => re.test(out), timeoutMs, () => `daemon output matching ${re}\n--- output:\n${out}`),
    kill: (signal = 'SIGTERM') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what: string | (() => string) = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A paired runner.json for the fake server. */
export function pairedConfig(server: string, extra: Record<string, unknown> = {}) {
  return { server, runnerId: 'runner-test-1', token: 'svc_rt_test_token_0123456789abcdef', ...extra };
}
