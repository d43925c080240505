// Where the runner keeps its files (spec: Runner configuration file, Runner state directory).
// Config: $XDG_CONFIG_HOME/svc/runner.json (default ~/.config). State: $XDG_STATE_HOME/svc/ (default
// ~/.local/state). Cache: $XDG_CACHE_HOME/svc/ (default ~/.cache). XDG variables that are not absolute
// paths are ignored, as the XDG spec asks.
import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

export type Env = Record<string, string | undefined>;

export function homeDir(env: Env = process.env): string {
  return env.HOME && isAbsolute(env.HOME) ? env.HOME : homedir();
}

/** A comma-separated list of paths (CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_DATA_DIR …): its non-empty entries. */
export const envList = (v: string | undefined) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);

/** `~` and `~/…` against the env's home; any other path as it is. */
export function expandHome(p: string, env: Env): string {
  if (p === '~') return homeDir(env);
  return p.startsWith('~/') ? join(homeDir(env), p.slice(2)) : p;
}

export const isDir = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/** The paths that exist, each real directory once (the first path naming it kept). */
export function uniqueDirs(paths: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of paths) {
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      continue;
    }
    if (!seen.has(real)) (seen.add(real), out.push(p));
  }
  return out;
}

function xdg(env: Env, name: string, fallback: string[]): string {
  const v = env[name];
  return v && isAbsolute(v) ? v : join(homeDir(env), ...fallback);
}

export const configHome = (env: Env = process.env) => xdg(env, 'XDG_CONFIG_HOME', ['.config']);
export const configDir = (env: Env = process.env) => join(configHome(env), 'svc');
export const configPath = (env: Env = process.env) => join(configDir(env), 'runner.json');
export const stateDir = (env: Env = process.env) => join(xdg(env, 'XDG_STATE_HOME', ['.local', 'state']), 'svc');
/** What the runner can lose at any time and rebuild: $XDG_CACHE_HOME/svc/ (default ~/.cache/svc). */
export const cacheDir = (env: Env = process.env) => join(xdg(env, 'XDG_CACHE_HOME', ['.cache']), 'svc');
export const spoolDir = (env: Env = process.env) => join(stateDir(env), 'spool');
export const lockPath = (env: Env = process.env) => join(spoolDir(env), 'runner.lock');

/** Service files (spec: Runner state directory, last paragraph). */
export const systemdUnitPath = (env: Env = process.env) => join(configHome(env), 'systemd', 'user', 'svc-runner.service');
export const launchdPlistPath = (env: Env = process.env) => join(homeDir(env), 'Library', 'LaunchAgents', 'com.svc.runner.plist');
export const launchdWrapperPath = (env: Env = process.env) => join(configDir(env), 'svc-runner-launchd.sh');
export const launchdLogPath = (env: Env = process.env) => join(stateDir(env), 'runner.log');
