// tmux, the terminal multiplexer the orchestrator, slots and skill runs live in (DESIGN §5,
// docs/orchestrator.md). Every call is `execFile('tmux', argv)`: no shell. Three tmux parsing rules
// matter for argv that carries values we did not write (agent arguments, environment values, text):
//   - an argument ending in `;` ends the tmux command (the next argument starts a new one: `;`,
//     `run-shell`, … would run anything), so a trailing `;` is sent as `\;` (tmuxArg below);
//   - `-c <dir>` and `-s <name>` are format-expanded (`#(cmd)` runs a shell command), so the start
//     directory is never passed with -c: it is the tmux client's own cwd, which new-session uses;
//   - a command given as ONE argument runs through the shell; as several it is exec'd directly, so an
//     agent argv always has at least two elements (launch.ts).
// Targets use `=name` (session) and `=name:` (its current pane): exact names, never prefix matches.
// SVC_TMUX_SOCKET selects a tmux server socket name (`tmux -L`), so tests never touch a user's server.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stateDir } from './paths.ts';
import type { Env } from './paths.ts';
import { CommandError } from './errors.ts';

/** tmux ≥ 3.2: `new-session -e` and direct exec of an argv command. */
export const MIN_TMUX = [3, 2] as const;
const SOCKET = /^[A-Za-z0-9_.-]{1,64}$/;

/** Session names (docs/orchestrator.md). Project ids, slots and run ids are [A-Za-z0-9_-]. */
export const sessionName = {
  orchestrator: (projectId: string) => `svc-${projectId}-orch`,
  slot: (projectId: string, slot: string) => `svc-${projectId}-slot-${slot}`,
  run: (runId: string) => `svc-run-${runId}`,
};

/** An argument as tmux must receive it so that it arrives literally (see the header). */
export const tmuxArg = (a: string): string => (a.endsWith(';') ? `${a.slice(0, -1)}\\;` : a);

export interface TmuxResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `-L <socket>` when SVC_TMUX_SOCKET names one (validated), else nothing. */
export function socketArgs(env: Env): string[] {
  const socket = env.SVC_TMUX_SOCKET;
  if (!socket) return [];
  if (!SOCKET.test(socket)) throw new CommandError('invalid_config', 'SVC_TMUX_SOCKET must be 1-64 letters, digits, _ . or -');
  return ['-L', socket];
}

/** Run one tmux client. `cwd` is the client's working directory (new-session starts there). */
export function tmux(env: Env, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<TmuxResult> {
  const argv = [...socketArgs(env), ...args];
  return new Promise((resolve, reject) => {
    execFile('tmux', argv, { cwd: opts.cwd, env: env as NodeJS.ProcessEnv, timeout: opts.timeoutMs ?? 10_000, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      if (e && e.code === 'ENOENT' && !e.path?.includes('/')) return reject(new CommandError('tmux_not_found', 'tmux was not found on PATH: install tmux (3.2 or newer) on this machine'));
      if (e && typeof e.code === 'string') return reject(new CommandError('failed', `tmux could not run (${e.code})`));
      resolve({ code: e ? Number(e.code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

const noServer = (r: TmuxResult) => /no server running|error connecting to|No such file or directory/i.test(r.stderr);

let checkedVersion: string | null = null;
/** Refuse a tmux older than 3.2 with an error that says which one was found. */
export async function requireTmux(env: Env): Promise<void> {
  if (checkedVersion) return;
  const r = await tmux(env, ['-V']);
  const m = /tmux (?:next-)?(\d+)\.(\d+)/.exec(r.stdout);
  if (!m) throw new CommandError('tmux_not_found', `tmux -V did not print a version (${r.stdout.trim().slice(0, 60) || r.stderr.trim().slice(0, 60)})`);
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major < MIN_TMUX[0] || (major === MIN_TMUX[0] && minor < MIN_TMUX[1])) {
    throw new CommandError('tmux_too_old', `tmux ${major}.${minor} is installed; svc needs tmux ${MIN_TMUX.join('.')} or newer`);
  }
  checkedVersion = `${major}.${minor}`;
}

export interface SessionInfo {
  name: string;
  /** Unix seconds of the last output in the session's current window. */
  activity: number;
  created: number;
  paneDead: boolean;
  panePid: number;
  /** Our session options (@svc_*), set when the runner started the session. */
  runtime: string;
  profile: string;
  issue: string;
}

// `|` separates the fields: a tmux server started without a UTF-8 locale prints a tab as `_`. Our
// fields never contain `|`; a foreign session name might, so the name is everything before the last 7.
const LIST_FIELDS = ['#{session_name}', '#{window_activity}', '#{session_created}', '#{pane_dead}', '#{pane_pid}', '#{@svc_runtime}', '#{@svc_profile}', '#{@svc_issue}'];
const LIST_FORMAT = LIST_FIELDS.join('|');

/** Every session of the server; none when no server runs. */
export async function listSessions(env: Env): Promise<SessionInfo[]> {
  const r = await tmux(env, ['list-sessions', '-F', LIST_FORMAT]);
  if (r.code !== 0) {
    if (noServer(r)) return [];
    throw new CommandError('failed', `tmux list-sessions failed: ${r.stderr.trim().slice(0, 200)}`);
  }
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const parts = line.split('|');
      const name = parts.slice(0, parts.length - LIST_FIELDS.length + 1).join('|');
      const [activity, created, dead, pid, runtime, profile, issue] = parts.slice(parts.length - LIST_FIELDS.length + 1);
      return { name, activity: Number(activity) || 0, created: Number(created) || 0, paneDead: dead === '1', panePid: Number(pid) || 0, runtime: runtime ?? '', profile: profile ?? '', issue: issue ?? '' };
    });
}

export async function hasSession(env: Env, name: string): Promise<boolean> {
  const r = await tmux(env, ['has-session', '-t', `=${name}`]);
  return r.code === 0;
}

export interface NewSession {
  name: string;
  /** Start directory: the tmux client runs there (never -c, see the header). */
  cwd: string;
  /** The command, exec'd directly: at least two elements. */
  argv: string[];
  env: Record<string, string>;
  /** Session user options, e.g. { '@svc_runtime': 'claude' }. */
  options?: Record<string, string>;
  width?: number;
  height?: number;
}

/** Start a detached session running `argv` (no shell). Fails with `already_running` when it exists. */
export async function newSession(env: Env, s: NewSession): Promise<void> {
  if (s.argv.length < 2) throw new Error('tmux new-session needs an argv of at least two elements (one would run through the shell)');
  await requireTmux(env);
  const args = ['new-session', '-d', '-s', s.name, '-x', String(s.width ?? 200), '-y', String(s.height ?? 50)];
  for (const [k, v] of Object.entries(s.env)) args.push('-e', tmuxArg(`${k}=${v}`));
  args.push('--', ...s.argv.map(tmuxArg));
  for (const [k, v] of Object.entries(s.options ?? {})) args.push(';', 'set-option', '-t', `=${s.name}:`, k, tmuxArg(v));
  // tmux gives a new pane the PATH of the (unattached) client that asked for it, not the -e one.
  const r = await tmux(s.env.PATH ? { ...env, PATH: s.env.PATH } : env, args, { cwd: s.cwd });
  if (r.code !== 0) {
    if (/duplicate session/i.test(r.stderr)) throw new CommandError('already_running', `the tmux session ${s.name} already exists`);
    throw new CommandError('failed', `tmux new-session failed: ${r.stderr.trim().slice(0, 300)}`);
  }
}

/** Kill one session by its exact name; false when there was none. */
export async function killSession(env: Env, name: string): Promise<boolean> {
  const r = await tmux(env, ['kill-session', '-t', `=${name}`]);
  if (r.code === 0) return true;
  if (noServer(r) || /can't find session|no such session/i.test(r.stderr)) return false;
  throw new CommandError('failed', `tmux kill-session failed: ${r.stderr.trim().slice(0, 200)}`);
}

/** How the process of a dead pane ended: its exit status, or the signal that killed it. */
export interface PaneEnd {
  exitCode: number | null;
  signal: number | null;
}

/**
 * Where the exit wrapper (exitRecordingArgv) leaves the status of a session's agent. Session names are
 * [A-Za-z0-9_-] (sessionName), so the name is a safe file name.
 */
export const exitFile = (env: Env, name: string) => join(stateDir(env), 'exits', name);

/**
 * The argv that runs `argv` and records its exit status in `file` before the pane dies, so the status
 * does not depend on tmux: tmux 3.3a was seen to mark a pane dead and never give its #{pane_dead_status}
 * (closing note of 2026-11-23). A fixed script, not a shell string: the agent's argv arrives as
 * positional parameters ("$@") and is never parsed by the shell. The status is written to a temporary
 * file and renamed, so a reader never sees half of it. A status above 128 is the shell's way to say a
 * signal ended the agent (POSIX), and paneEnd reads it back as that signal.
 */
export function exitRecordingArgv(file: string, argv: readonly string[]): string[] {
  const script = 'f=$1; shift; "$@"; s=$?; printf "%s\\n" "$s" > "$f.tmp" && mv -f "$f.tmp" "$f"; exit "$s"';
  return ['/bin/sh', '-c', script, 'svc-agent', file, ...argv];
}

/** The status the exit wrapper recorded for a session, or null when there is none (yet). */
export function recordedEnd(env: Env, name: string): PaneEnd | null {
  let text: string;
  try {
    text = readFileSync(exitFile(env, name), 'utf8').trim();
  } catch {
    return null;
  }
  if (!/^\d{1,3}$/.test(text)) return null;
  const s = Number(text);
  return s > 128 ? { exitCode: null, signal: s - 128 } : { exitCode: s, signal: null };
}

/** Forget a recorded status (before a session of that name starts, and once its end was reported). */
export function clearRecordedEnd(env: Env, name: string): void {
  rmSync(exitFile(env, name), { force: true });
}

/**
 * How a session's pane ended when it is dead (kept by `remain-on-exit`), else null (alive or gone).
 * The status the exit wrapper recorded comes first (it is written before the pane dies). Without one
 * (a session started without the wrapper), tmux's own #{pane_dead_status}: tmux may mark a pane dead
 * when its terminal closes, a moment before it has the exit status, so this asks again every 100 ms for
 * up to `waitMs` (10 s by default), and without a status by then the code is null.
 */
export async function paneEnd(env: Env, name: string, waitMs = 10_000): Promise<PaneEnd | null> {
  const deadline = Date.now() + waitMs;
  const num = (s: string | undefined) => (s && /^\d{1,3}$/.test(s) ? Number(s) : null);
  for (;;) {
    const r = await tmux(env, ['display-message', '-p', '-t', `=${name}:`, '#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}']);
    if (r.code !== 0) return null;
    const [dead, status, signal] = r.stdout.trim().split('|');
    if (dead !== '1') return null;
    const recorded = recordedEnd(env, name);
    if (recorded) return recorded;
    const end = { exitCode: num(status), signal: num(signal) };
    if (end.exitCode !== null || end.signal !== null || Date.now() >= deadline) return end;
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** The visible text of a session's current pane, or null when the session is gone. */
export async function capturePane(env: Env, name: string): Promise<string | null> {
  const r = await tmux(env, ['capture-pane', '-p', '-t', `=${name}:`]);
  return r.code === 0 ? r.stdout : null;
}

const MARK = '@@svc-pane-end@@';
/** Capture several panes with one tmux client (a chain of capture-pane commands); a session that
 *  vanished meanwhile aborts tmux's chain, and then each is captured on its own. */
export async function capturePanes(env: Env, names: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  if (names.length === 0) return out;
  const args: string[] = [];
  for (const name of names) args.push('capture-pane', '-p', '-t', `=${name}:`, ';', 'display-message', '-p', MARK, ';');
  args.pop();
  const r = await tmux(env, args);
  const parts = r.stdout.split(`${MARK}\n`);
  if (r.code === 0 && parts.length === names.length + 1) {
    names.forEach((n, i) => out.set(n, parts[i]));
    return out;
  }
  for (const name of names) out.set(name, await capturePane(env, name));
  return out;
}

/** Type `text` literally into a session's pane, then press Enter. */
export async function sendKeys(env: Env, name: string, text: string, enter = true): Promise<boolean> {
  const target = `=${name}:`;
  const r = await tmux(env, ['send-keys', '-t', target, '-l', '--', tmuxArg(text)]);
  if (r.code !== 0) return false;
  if (enter) {
    // A short pause lets a TUI take the text as typed input before Enter arrives (Claude Code and
    // Codex treat text and Enter in one read as a paste and may not submit it).
    await new Promise((res) => setTimeout(res, 150));
    return (await tmux(env, ['send-keys', '-t', target, 'Enter'])).code === 0;
  }
  return true;
}
