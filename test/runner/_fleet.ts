// Shared setup for the orchestrator, emit and pane tests: a real git project, fake `claude`/`codex`
// executables (fixtures/fake-agent.sh), a tmux server of the test's own (SVC_TMUX_SOCKET), and a
// runner daemon connected to the fake server with the project on its watch list.
// needs: tmux git
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startFakeServer } from './_fake-server.ts';
import type { FakeConn, FakeServer } from './_fake-server.ts';
import { pairedConfig, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Daemon, Sandbox } from './_harness.ts';

export const FAKE_AGENT = resolve(import.meta.dirname, 'fixtures', 'fake-agent.sh');

export interface Fleet {
  sb: Sandbox;
  fake: FakeServer;
  root: string;
  socket: string;
  agentDir: string;
  env: Record<string, string>;
  tmux: (...args: string[]) => { status: number | null; stdout: string; stderr: string };
  sessions: () => string[];
  git: (cwd: string, ...args: string[]) => string;
  daemon?: Daemon;
  conn?: FakeConn;
  start: (config?: Record<string, unknown>, extraEnv?: Record<string, string>) => Promise<FakeConn>;
  /** Runner events received by the fake server of one kind. */
  events: (kind: string) => any[];
  cleanup: () => Promise<void>;
}

let n = 0;

export async function fleet(name: string): Promise<Fleet> {
  const sb = sandbox();
  const fake = await startFakeServer();
  const socket = `svc-test-${name}-${process.pid}-${++n}`;
  const root = join(sb.dir, 'work', 'repo');
  mkdirSync(root, { recursive: true });
  const agentDir = join(sb.dir, 'agent');
  const gitEnv = { ...sb.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'commit', '-q', '--allow-empty', '-m', 'init');
  sb.fakeBin('claude', `FAKE_RUNTIME=claude exec sh '${FAKE_AGENT}' "$@"`);
  sb.fakeBin('codex', `FAKE_RUNTIME=codex exec sh '${FAKE_AGENT}' "$@"`);
  const env = { ...gitEnv, SVC_TMUX_SOCKET: socket };
  const tmux = (...args: string[]) => {
    const r = spawnSync('tmux', ['-L', socket, ...args], { env, encoding: 'utf8' });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  fake.options.projects = [{ id: 'p1', root }];
  const f: Fleet = {
    sb,
    fake,
    root,
    socket,
    agentDir,
    env,
    tmux,
    git,
    sessions: () => {
      const r = tmux('list-sessions', '-F', '#{session_name}');
      return r.status === 0 ? r.stdout.split('\n').filter(Boolean).sort() : [];
    },
    start: async (config = {}, extraEnv = {}) => {
      sb.writeConfig(
        pairedConfig(fake.url, {
          profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: agentDir }, args: [] }],
          ...config,
        }),
      );
      f.daemon = startDaemon(sb, { ...env, ...extraEnv });
      f.conn = await fake.waitConns(fake.conns.length + 1);
      await f.conn.next('hello');
      return f.conn;
    },
    events: (kind) => fake.received.filter((e) => e.kind === kind),
    cleanup: async () => {
      tmux('kill-server');
      // tmux leaves its socket file behind after kill-server.
      rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid!()}`, socket), { force: true });
      await f.daemon?.kill();
      await fake.stop();
      sb.cleanup();
    },
  };
  return f;
}

/** What the fake agent recorded: argv (NUL-separated), env and cwd of each start, and typed input. */
export function agentRuns(agentDir: string): { pid: string; argv: string[]; env: Record<string, string>; cwd: string }[] {
  if (!existsSync(agentDir)) return [];
  return readdirSync(agentDir)
    .filter((f) => f.startsWith('argv.'))
    .map((f) => {
      const pid = f.slice(5);
      const argv = readFileSync(join(agentDir, f), 'utf8').split('\0').slice(0, -1);
      const env = Object.fromEntries(
        readFileSync(join(agentDir, `env.${pid}`), 'utf8')
          .split('\n')
          .filter((l) => l.includes('='))
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      return { pid, argv, env, cwd: readFileSync(join(agentDir, `cwd.${pid}`), 'utf8').trim() };
    });
}

export const typed = (agentDir: string): string[] => {
  try {
    return readFileSync(join(agentDir, 'input.log'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

/** Type a line into a session as a person would. */
export function type(f: Fleet, session: string, text: string): void {
  f.tmux('send-keys', '-t', `=${session}:`, '-l', text);
  f.tmux('send-keys', '-t', `=${session}:`, 'Enter');
}

export const pane = (f: Fleet, session: string) => f.tmux('capture-pane', '-p', '-t', `=${session}:`).stdout;

export const waitPane = (f: Fleet, session: string, re: RegExp, ms = 10_000) => waitUntil(() => re.test(pane(f, session)), ms, () => `pane of ${session} matching ${re}:\n${pane(f, session)}`);
