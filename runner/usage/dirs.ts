// Where transcripts are (docs/cost.md "Where transcripts are"): the Claude config dirs and Codex homes of
// this machine and its profiles, the transcript files under them in ccusage's order, and which Codex
// homes ask for the priority service tier.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Profile } from '../config.ts';
import { envList, expandHome, homeDir, isDir, uniqueDirs } from '../paths.ts';
import type { Env } from '../paths.ts';
import type { Runtime } from '../../protocol/usage.ts';
import { RUNTIME_LIST } from '../runtimes/index.ts';

export interface UsageDirs {
  /** Claude config dirs (each has projects/). */
  claude: string[];
  /** Codex homes (each may have sessions/ and archived_sessions/). */
  codex: string[];
  /** The stores of the runtimes with a RecordReader (runner/runtimes/types.ts), by runtime. */
  records?: Partial<Record<Runtime, string[]>>;
}


/**
 * Claude: CLAUDE_CONFIG_DIR (a comma-separated list; an entry may name projects/ itself) when set, else
 * $XDG_CONFIG_HOME/claude (~/.config/claude) and ~/.claude — as ccusage finds them — plus every profile's
 * env CLAUDE_CONFIG_DIR. Codex: CODEX_HOME (comma-separated, default ~/.codex) plus every profile's env
 * CODEX_HOME. Only existing directories are returned.
 */
export function usageDirs(env: Env, profiles: readonly Profile[] = []): UsageDirs {
  const claudeDir = (raw: string) => {
    const p = expandHome(raw, env);
    return p.replace(/\/+$/, '').endsWith('/projects') && isDir(p) ? p.replace(/\/+$/, '').slice(0, -'/projects'.length) || '/' : p;
  };
  const claude = env.CLAUDE_CONFIG_DIR !== undefined && envList(env.CLAUDE_CONFIG_DIR).length
    ? envList(env.CLAUDE_CONFIG_DIR).map(claudeDir)
    : [join(env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homeDir(env), '.config'), 'claude'), join(homeDir(env), '.claude')];
  const codex = env.CODEX_HOME !== undefined && envList(env.CODEX_HOME).length ? envList(env.CODEX_HOME).map((p) => expandHome(p, env)) : [join(homeDir(env), '.codex')];
  for (const prof of profiles) {
    if (prof.runtime === 'claude' && prof.env.CLAUDE_CONFIG_DIR) claude.push(...envList(prof.env.CLAUDE_CONFIG_DIR).map(claudeDir));
    if (prof.runtime === 'codex' && prof.env.CODEX_HOME) codex.push(...envList(prof.env.CODEX_HOME).map((p) => expandHome(p, env)));
  }
  const records: Partial<Record<Runtime, string[]>> = {};
  for (const def of RUNTIME_LIST) {
    if (def.usage.kind !== 'records') continue;
    records[def.name] = def.usage.reader.roots(env, profiles.filter((p) => p.runtime === def.name).map((p) => ({ ...env, ...p.env })));
  }
  return { claude: uniqueDirs(claude.filter((d) => isDir(join(d, 'projects')))), codex: uniqueDirs(codex.filter(isDir)), records };
}

function walk(dir: string, out: string[]): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  // Names from readdir have no '/' and dir is normalized: concatenation is join's result without its
  // normalize pass (a few ms over the hundreds of entries each `usage` call walks).
  const at = dir.endsWith('/') ? dir : `${dir}/`;
  for (const e of entries) {
    const p = at + e.name;
    if (e.isFile() && e.name.endsWith('.jsonl')) out.push(p);
    else if (e.isDirectory()) walk(p, out);
  }
}

const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Every transcript under the dirs' projects/, recursively (subagent files included), in ccusage's order. */
export function claudeFiles(dirs: readonly string[]): string[] {
  const out: string[] = [];
  for (const d of dirs) walk(join(d, 'projects'), out);
  return out.sort(byPath);
}

/** Rollouts under sessions/ and archived_sessions/; a relative path in both is read from sessions/ only. */
export function codexFiles(homes: readonly string[]): string[] {
  const out: string[] = [];
  for (const home of homes) {
    const live: string[] = [];
    const archived: string[] = [];
    walk(join(home, 'sessions'), live);
    walk(join(home, 'archived_sessions'), archived);
    // walk's paths start with its dir and '/': the relative path is the rest (path.relative resolves both, per file).
    const rel = (dir: string) => (f: string) => f.slice(dir.length + (dir.endsWith('/') ? 0 : 1));
    const seen = new Set(live.map(rel(join(home, 'sessions'))));
    const archivedRel = rel(join(home, 'archived_sessions'));
    out.push(...live.sort(byPath), ...archived.filter((f) => !seen.has(archivedRel(f))).sort(byPath));
  }
  return out;
}

/**
 * Whether a Codex config.toml asks for the priority ("fast") service tier: a `service_tier = "fast"` or
 * `"priority"` line, comments after `#` ignored, quotes optional (ccusage's `codex_config_requests_fast_service_tier`).
 */
export function configRequestsFast(toml: string): boolean {
  return toml.split('\n').some((line) => {
    const setting = line.split('#')[0]!.trim();
    const eq = setting.indexOf('=');
    if (eq === -1 || setting.slice(0, eq).trim() !== 'service_tier') return false;
    const value = setting.slice(eq + 1).trim().replace(/^["']+|["']+$/g, '');
    return value === 'fast' || value === 'priority';
  });
}

/** The Codex homes whose config.toml asks for the fast tier (read now: a change applies to what is read next). */
export function fastCodexHomes(homes: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const h of homes) {
    try {
      if (configRequestsFast(readFileSync(join(h, 'config.toml'), 'utf8'))) out.add(h);
    } catch {
      // no config.toml: the standard tier
    }
  }
  return out;
}

/** The home a rollout was found under (its sessions/ or archived_sessions/), or null. */
export function codexHomeOf(file: string, homes: readonly string[]): string | null {
  for (const h of homes) if (file.startsWith(join(h, 'sessions') + '/') || file.startsWith(join(h, 'archived_sessions') + '/')) return h;
  return null;
}
