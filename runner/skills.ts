// Installed skills (docs/skill-runs.md, "Catalog"): a skill is a directory with a SKILL.md in a
// runtime's skills directory — Claude Code `$CLAUDE_CONFIG_DIR/skills` (default ~/.claude/skills),
// Codex `$CODEX_HOME/skills` (default ~/.codex/skills), Gemini CLI `$GEMINI_CLI_HOME/.gemini/skills`
// (default ~/.gemini/skills): each runtime's `home` (runner/runtimes/). A profile whose env sets that variable has a
// config dir of its own. skill.install writes the files from git objects into a temp directory beside
// the target and renames it into place; `skills.json` in the state dir records each install's source,
// commit, tree and content hash, which skill.list compares with what is on disk.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import * as z from 'zod';
import type { SkillSource } from '../protocol/commands.ts';
import { contentHash, frontMatter, inspectSource } from './catalog.ts';
import { CommandError } from './errors.ts';
import type { Profile, RunnerConfig, RuntimeName } from './config.ts';
import { RUNTIME_NAMES, writeFileAtomic } from './config.ts';
import { RUNTIMES } from './runtimes/index.ts';
import { homeDir, stateDir } from './paths.ts';
import type { Env } from './paths.ts';

const CONFIG_VAR = (r: RuntimeName) => RUNTIMES[r].home.envVar;
const DEFAULT_DIR = (r: RuntimeName) => RUNTIMES[r].home.defaultDir;

/** A runtime's skills directory for the runner's environment, or a profile's (its env on top). */
export function skillsDir(runtime: RuntimeName, env: Env, profile?: Profile): string {
  const v = profile?.env[CONFIG_VAR(runtime)] ?? env[CONFIG_VAR(runtime)];
  return join(v && v.startsWith('/') ? join(v, RUNTIMES[runtime].home.underEnv ?? '') : join(homeDir(env), DEFAULT_DIR(runtime)), 'skills');
}

/** Where a run's skill may be found: the profile's skills dir, the runner's, and the project's own. */
export function findSkill(name: string, profile: Profile, env: Env, root: string): string | null {
  const dirs = [skillsDir(profile.runtime, env, profile), skillsDir(profile.runtime, env), join(root, DEFAULT_DIR(profile.runtime), 'skills')];
  for (const d of dirs) if (existsSync(join(d, name, 'SKILL.md'))) return join(d, name);
  return null;
}

const recordSchema = z.object({
  name: z.string(),
  runtime: z.enum(RUNTIME_NAMES),
  dir: z.string(),
  profileId: z.string().optional(),
  source: z.object({ repo: z.string(), ref: z.string().optional(), path: z.string() }),
  commit: z.string(),
  tree: z.string(),
  sha256: z.string(),
  installedAt: z.string(),
});
type InstallRecord = z.infer<typeof recordSchema>;
const recordsPath = (env: Env) => join(stateDir(env), 'skills.json');

function readRecords(env: Env): InstallRecord[] {
  try {
    const parsed = z.object({ installed: z.array(recordSchema) }).safeParse(JSON.parse(readFileSync(recordsPath(env), 'utf8')));
    return parsed.success ? parsed.data.installed : [];
  } catch {
    return [];
  }
}
const writeRecords = (env: Env, installed: InstallRecord[]) => writeFileAtomic(recordsPath(env), JSON.stringify({ installed }, null, 2) + '\n');

interface Target {
  runtime: RuntimeName;
  base: string;
  profile?: Profile;
}

export function installTarget(config: RunnerConfig, env: Env, args: { runtime?: RuntimeName; profileId?: string }): Target {
  if (args.profileId) {
    const profile = config.profiles.find((p) => p.id === args.profileId);
    if (!profile) throw new CommandError('unknown_profile', `no profile ${args.profileId} in runner.json`);
    if (args.runtime && args.runtime !== profile.runtime) throw new CommandError('invalid_args', `profile ${profile.id} runs ${profile.runtime}, not ${args.runtime}`);
    return { runtime: profile.runtime, base: skillsDir(profile.runtime, env, profile), profile };
  }
  const runtime = args.runtime ?? 'claude';
  return { runtime, base: skillsDir(runtime, env) };
}

export async function installSkill(config: RunnerConfig, env: Env, args: { source: SkillSource; runtime?: RuntimeName; profileId?: string }) {
  const target = installTarget(config, env, args);
  const skill = await inspectSource(config, env, args.source);
  const dir = join(target.base, skill.name);
  mkdirSync(target.base, { recursive: true, mode: 0o755 });
  const tmp = join(target.base, `.svc-install-${skill.name}-${randomBytes(4).toString('hex')}`);
  try {
    for (const f of skill.files) {
      const file = join(tmp, f.path);
      if (relative(tmp, file).startsWith('..')) throw new CommandError('unsafe_skill', `the skill holds a path that cannot be installed: ${f.path}`);
      mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
      const data = skill.contents.get(f.path)!;
      writeFileSync(file, data, { mode: f.mode === '100755' ? 0o755 : 0o644, flag: 'wx' });
      chmodSync(file, f.mode === '100755' ? 0o755 : 0o644);
    }
    const replaced = existsSync(dir);
    const old = `${tmp}.old`;
    if (replaced) renameSync(dir, old);
    renameSync(tmp, dir);
    if (replaced) rmSync(old, { recursive: true, force: true });
    const record: InstallRecord = {
      name: skill.name,
      runtime: target.runtime,
      dir,
      ...(target.profile ? { profileId: target.profile.id } : {}),
      source: skill.source,
      commit: skill.commit,
      tree: skill.tree,
      sha256: skill.sha256,
      installedAt: new Date().toISOString(),
    };
    writeRecords(env, [...readRecords(env).filter((r) => r.dir !== dir), record]);
    return { ...record, files: skill.files.length, replaced };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function uninstallSkill(config: RunnerConfig, env: Env, args: { name: string; runtime?: RuntimeName; profileId?: string; force: boolean }) {
  const target = installTarget(config, env, args);
  const dir = join(target.base, args.name);
  if (!existsSync(join(dir, 'SKILL.md'))) throw new CommandError('unknown_skill', `no skill ${args.name} in ${target.base}`);
  const records = readRecords(env);
  const record = records.find((r) => r.dir === dir);
  if (!record && !args.force) throw new CommandError('not_managed', `${args.name} in ${target.base} was not installed by svc; pass force: true to remove it anyway`);
  rmSync(dir, { recursive: true, force: true });
  writeRecords(env, records.filter((r) => r.dir !== dir));
  return { name: args.name, runtime: target.runtime, dir, removed: true, managed: Boolean(record) };
}

/** Hash of a skill directory on disk, the same way as contentHash of its git files. */
function diskHash(dir: string): string | null {
  const files: { path: string; mode: string; data: Buffer }[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) files.push({ path: relative(dir, p), mode: statSync(p).mode & 0o100 ? '100755' : '100644', data: readFileSync(p) });
      else throw new Error('not a regular file');
      if (files.length > 2000) throw new Error('too many files');
    }
  };
  try {
    walk(dir);
    return contentHash(files);
  } catch {
    return null;
  }
}

/** Installed skills of every runtime's skills dir and every profile's own. */
export function listSkills(config: RunnerConfig, env: Env) {
  const places = new Map<string, { runtime: RuntimeName; profiles: string[] }>();
  for (const runtime of RUNTIME_NAMES) places.set(skillsDir(runtime, env), { runtime, profiles: [] });
  for (const p of config.profiles) {
    const d = skillsDir(p.runtime, env, p);
    const at = places.get(d) ?? { runtime: p.runtime, profiles: [] };
    at.profiles.push(p.id);
    places.set(d, at);
  }
  const records = readRecords(env);
  const skills = [];
  for (const [base, at] of places) {
    let names: string[];
    try {
      names = readdirSync(base).filter((n) => !n.startsWith('.')).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = join(base, name);
      let md: string;
      try {
        md = readFileSync(join(dir, 'SKILL.md'), 'utf8');
      } catch {
        continue;
      }
      const r = records.find((x) => x.dir === dir);
      const sha = r ? diskHash(dir) : null;
      skills.push({
        name,
        runtime: at.runtime,
        dir,
        profiles: at.profiles,
        description: (frontMatter(md).description ?? '').slice(0, 2000),
        managed: Boolean(r),
        ...(r ? { source: r.source, commit: r.commit, tree: r.tree, sha256: r.sha256, installedAt: r.installedAt, modified: sha !== r.sha256 } : {}),
      });
    }
  }
  return { skills };
}
