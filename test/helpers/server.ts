// Black-box harness: start the real dist/server.mjs as a child process on a free port.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, serverDbEnv } from './db.ts';

export interface RunningServer {
  url: string;
  port: number;
  proc: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or signal name) once the process ended. */
  exited: Promise<number | string>;
  stop: (signal?: NodeJS.Signals) => Promise<number | string>;
  cleanup: () => Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Use this database environment instead of a fresh one (restart on the same data). */
  dbEnv?: Record<string, string>;
  /** Resolve once the process exits instead of waiting for it to listen. */
  expectExit?: boolean;
  /** Resolve once the output matches this instead of waiting for it to listen (port is then 0). */
  waitFor?: RegExp;
  timeoutMs?: number;
}

export const SERVER = join(ROOT, 'dist', 'server.mjs');

export async function startServer(opts: StartOptions = {}): Promise<RunningServer> {
  const fresh = opts.dbEnv ? null : await serverDbEnv();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    TZ: 'UTC',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_CONNECT_TIMEOUT_SECONDS: '5',
    ...(opts.dbEnv ?? fresh!.env),
    ...opts.env,
  };
  const proc = spawn(process.execPath, ['--enable-source-maps', SERVER], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | string>((r) => proc.once('exit', (code, signal) => r(code ?? signal ?? -1)));
  const listening = new Promise<number>((ok, fail) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (opts.waitFor?.test(out)) return ok(0);
      const m = /listening .*port=(\d+)/.exec(out);
      if (m) ok(Number(m[1]));
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    void exited.then((code) => fail(new Error(`server exited (${code}) before listening:\n${out}`)));
    setTimeout(() => fail(new Error(`server did not listen within ${opts.timeoutMs ?? 60000} ms:\n${out}`)), opts.timeoutMs ?? 60000).unref();
  });
  listening.catch(() => {}); // observed below, or irrelevant when the exit is expected
  const cleanup = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await exited;
    }
    await fresh?.cleanup();
  };
  const base = { proc, output: () => out, exited, cleanup, stop: async (signal: NodeJS.Signals = 'SIGTERM') => (proc.kill(signal), exited) };
  if (opts.expectExit) {
    await exited;
    return { ...base, url: '', port: 0 };
  }
  try {
    const port = await listening;
    return { ...base, url: port ? `http://127.0.0.1:${port}` : '', port };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
