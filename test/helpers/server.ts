// Black-box harness: start the real dist/server.mjs as a child process on a free port.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, anchorPathFor, serverDbEnv } from './db.ts';

export interface Admin {
  email: string;
  password: string;
  /** A personal API token of the admin. */
  token: string;
}

export interface RunningServer {
  url: string;
  /** Set when started with `admin: true`. */
  admin: Admin;
  /** fetch() against this server as the admin (bearer token; JSON body when `json` is given). */
  api: (path: string, init?: RequestInit & { json?: unknown }) => Promise<Response>;
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
  /** Create an instance admin with the real CLI first, set its password, and make an API token. */
  admin?: boolean;
  /** Run the server under this command (e.g. unshare into a network namespace); node's arguments follow. */
  wrap?: string[];
}

export const ADMIN_EMAIL = 'admin@example.test';
export const ADMIN_PASSWORD = 'correct horse battery staple';

function baseEnv(dbEnv: Record<string, string>, extra?: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    TZ: 'UTC',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    CHECK_ANSWERS: 'true',
    DATABASE_CONNECT_TIMEOUT_SECONDS: '5',
    AUDIT_ANCHOR_PATH: anchorPathFor(dbEnv),
    ...dbEnv,
    ...extra,
  };
}

/** `node dist/server.mjs admin …` against a database (the server must not hold a PGlite dir then). */
export function adminCli(dbEnv: Record<string, string>, args: string[], extraEnv?: Record<string, string>) {
  return spawnSync(process.execPath, [SERVER, 'admin', ...args], { env: baseEnv(dbEnv, extraEnv), encoding: 'utf8' });
}

async function bootstrapAdmin(url: string, linkToken: string): Promise<Admin> {
  const set = await fetch(`${url}/api/password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: linkToken, password: ADMIN_PASSWORD }),
  });
  if (set.status !== 200) throw new Error(`setting the admin password failed: ${set.status} ${await set.text()}`);
  const signIn = await fetch(`${url}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
  });
  const { csrfToken } = await signIn.json();
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  const made = await fetch(`${url}/api/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
    body: JSON.stringify({ name: 'tests' }),
  });
  if (made.status !== 201) throw new Error(`creating the admin token failed: ${made.status} ${await made.text()}`);
  return { email: ADMIN_EMAIL, password: ADMIN_PASSWORD, token: (await made.json()).token };
}

export const SERVER = join(ROOT, 'dist', 'server.mjs');

export async function startServer(opts: StartOptions = {}): Promise<RunningServer> {
  const fresh = opts.dbEnv ? null : await serverDbEnv();
  const dbEnv = opts.dbEnv ?? fresh!.env;
  let linkToken = '';
  if (opts.admin) {
    const made = adminCli(dbEnv, ['create', '--email', ADMIN_EMAIL, '--name', 'Admin'], opts.env);
    const m = /set-password\?token=([\w-]+)/.exec(made.stdout);
    if (made.status !== 0 || !m) throw new Error(`admin create failed (${made.status}):\n${made.stdout}${made.stderr}`);
    linkToken = m[1];
  }
  const env = baseEnv(dbEnv, opts.env);
  const [command, ...prefix] = [...(opts.wrap ?? []), process.execPath, '--enable-source-maps', SERVER];
  const proc = spawn(command, prefix, { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
  const base = {
    proc,
    output: () => out,
    exited,
    cleanup,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => (proc.kill(signal), exited),
    admin: { email: '', password: '', token: '' },
  };
  const api = (url: string, admin: Admin) => (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (admin.token && !headers.has('authorization')) headers.set('authorization', `Bearer ${admin.token}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(url + path, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body }).catch((err: unknown) => {
      // A network error says nothing of why: show what the server said (the test's own output keeps it
      // when the file fails), then fail as before.
      const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
      const state = proc.exitCode !== null || proc.signalCode !== null ? `exited (${proc.exitCode ?? proc.signalCode})` : `running (pid ${proc.pid})`;
      console.error(`${rest.method ?? 'GET'} ${url}${path} failed${cause}; the server is ${state}; its last output:\n${out.split('\n').slice(-40).join('\n')}`);
      throw err;
    });
  };
  if (opts.expectExit) {
    await exited;
    return { ...base, url: '', port: 0, api: api('', base.admin) };
  }
  try {
    const port = await listening;
    const url = port ? `http://127.0.0.1:${port}` : '';
    const admin = opts.admin ? await bootstrapAdmin(url, linkToken) : base.admin;
    return { ...base, admin, url, port, api: api(url, admin) };
  } catch (err) {
    await cleanup();
    // uvu swallows errors thrown in before hooks (where servers are mostly started): say it here.
    console.error(`startServer failed: ${err instanceof Error ? err.message : String(err)}`);
    throw err;
  }
}

/** The first-admin setup link a server without users logs (functions/auth/setup.ts), once it is there. */
export async function setupLinkOf(s: RunningServer, timeoutMs = 30_000): Promise<{ url: string; token: string; line: string }> {
  const re = /^.* WARN no admin yet: open (\S+\/#\/setup\?token=([\w-]+)) .*$/m;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const m = re.exec(s.output());
    if (m) return { line: m[0], url: m[1], token: m[2] };
    if (Date.now() > until) throw new Error(`no setup link in the server's output within ${timeoutMs} ms:\n${s.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
