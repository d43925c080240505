// Launching an agent (orchestrator or worker) in its tmux session (docs/orchestrator.md "Launch"):
// the profile's binary with the profile's args and a first prompt, as an argv (never a shell string),
// started in the project root or the slot's worktree, with the telemetry environment of its runtime
// and the SVC_* variables the skills use. `svc-runner` is put on the session's PATH as a shim that loads
// this very bundle, so the agents' `svc-runner emit …` reaches the same runner version.
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeFileAtomic } from './config.ts';
import type { Profile, RunnerConfig } from './config.ts';
import { CommandError } from './errors.ts';
import { git } from './commands/git.ts';
import { stateDir } from './paths.ts';
import type { Env } from './paths.ts';
import { findExecutable } from './profiles.ts';
import { RUNTIMES } from './runtimes/index.ts';
import type { InteractiveOptions } from './runtimes/types.ts';
import { clearRecordedEnd, exitFile, exitRecordingArgv, hasSession, newSession, requireTmux } from './tmux.ts';

export const PROMPTS = {
  orchestrator: 'Use the svc-orchestrator skill: run the next orchestrator round for this project.',
  worker: (issue: number) => `Use the svc-worker skill: work on issue #${issue} in this worktree.`,
  message: 'There is a new message for you in .orchestrator-msg.md: read it, act on it, then delete the file.',
  resume: (issue: number) => `Use the svc-worker skill: go on with issue #${issue} in this worktree where you left off (you were stopped at a spend cap, which was raised).`,
};

export interface Chosen {
  profile: Profile;
  binaryPath: string;
}

const profileEnv = (p: Profile, env: Env): Env => ({ ...env, ...p.env });

/** The profile by id, or the first configured one whose binary is found. */
export function chooseProfile(config: RunnerConfig, env: Env, profileId?: string): Chosen {
  const candidates = profileId ? config.profiles.filter((p) => p.id === profileId) : config.profiles;
  if (profileId && candidates.length === 0) throw new CommandError('unknown_profile', `no profile ${profileId} in runner.json`);
  if (candidates.length === 0) throw new CommandError('no_profile', 'no runtime profiles are configured in runner.json (svc-runner profiles --detect --write)');
  const tried: string[] = [];
  for (const profile of candidates) {
    const binary = profile.binary ?? RUNTIMES[profile.runtime].binary;
    const binaryPath = findExecutable(binary, profileEnv(profile, env));
    if (binaryPath) return { profile, binaryPath };
    tried.push(`${binary} (profile ${profile.id})`);
  }
  throw new CommandError('agent_not_found', `the agent binary was not found on PATH: ${tried.join(', ')}`);
}

export interface Meta {
  projectId: string;
  root: string;
  role: 'orchestrator' | 'worker';
  slot?: string;
  issue?: number;
}

/** Telemetry settings per runtime (spec: Runner local OTLP receiver; docs/orchestrator.md). */
export function telemetry(profile: Profile, config: RunnerConfig, meta: Meta): { env: Record<string, string>; args: string[] } {
  if (config.otlp && config.otlp.enabled === false) return { env: {}, args: [] };
  const port = config.otlp?.http ?? 4318;
  const endpoint = `http://127.0.0.1:${port}`;
  const attrs = [`svc.project=${meta.projectId}`, ...(meta.slot ? [`svc.slot=${meta.slot}`] : []), ...(meta.issue ? [`svc.issue=${meta.issue}`] : [])].join(',');
  return RUNTIMES[profile.runtime].telemetry({ endpoint, attrs, codexExperimental: config.otlp?.codexExperimental === true });
}

/** `<state>/bin/svc-runner`: a two-line Node script that loads this very bundle (the bundle itself
 *  need not be executable; no shell is involved). Rewritten when the bundle moved. Null when the
 *  runner is not running from its bundle (unit tests under tsx). */
export function runnerShimDir(env: Env): string | null {
  const self = process.argv[1];
  if (!self || !/\.m?js$/.test(self) || !existsSync(self) || /\s/.test(process.execPath)) return null;
  const dir = join(stateDir(env), 'bin');
  const shim = join(dir, 'svc-runner');
  const text = `#!${process.execPath}\nimport(${JSON.stringify(pathToFileURL(realpathSync(self)).href)});\n`;
  try {
    if (readFileSync(shim, 'utf8') === text) return dir;
  } catch {}
  // Written whole under a temp name, made executable, then renamed: never seen half-written or 0600.
  const tmp = `${shim}.${process.pid}.new`;
  writeFileAtomic(tmp, text);
  chmodSync(tmp, 0o755);
  renameSync(tmp, shim);
  return dir;
}

/** The environment given to the session (tmux -e), on top of the tmux server's own. */
export function sessionEnv(chosen: Chosen, config: RunnerConfig, meta: Meta, env: Env): Record<string, string> {
  const shim = runnerShimDir(env);
  const path = [shim, dirname(process.execPath), env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].filter(Boolean).join(delimiter);
  const pass: Record<string, string> = {};
  for (const k of ['HOME', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'LANG', 'LC_ALL', 'SVC_TMUX_SOCKET']) if (env[k]) pass[k] = env[k]!;
  return {
    ...pass,
    PATH: path,
    ...chosen.profile.env,
    ...telemetry(chosen.profile, config, meta).env,
    SVC_PROJECT_ID: meta.projectId,
    SVC_PROJECT_ROOT: meta.root,
    SVC_ROLE: meta.role,
    ...(meta.slot ? { SVC_SLOT: meta.slot } : {}),
    ...(meta.issue ? { SVC_ISSUE: String(meta.issue) } : {}),
  };
}

/** The agent's argv: binary, profile args, telemetry args, the runtime's interactive options, first prompt (always ≥ 2 elements). */
export function agentArgv(chosen: Chosen, config: RunnerConfig, meta: Meta, prompt: string, options: InteractiveOptions = {}): string[] {
  return [chosen.binaryPath, ...chosen.profile.args, ...telemetry(chosen.profile, config, meta).args, ...RUNTIMES[chosen.profile.runtime].interactiveArgs(options, prompt)];
}

/** Start the session; refuses when it exists. Checks it is still there a moment later. */
export async function launchAgent(opts: { session: string; cwd: string; chosen: Chosen; config: RunnerConfig; meta: Meta; prompt: string; env: Env; options?: Record<string, string>; recordExit?: boolean }): Promise<void> {
  await requireTmux(opts.env);
  if (await hasSession(opts.env, opts.session)) throw new CommandError('already_running', `the tmux session ${opts.session} is already running`);
  let argv = agentArgv(opts.chosen, opts.config, opts.meta, opts.prompt);
  if (opts.recordExit) {
    // The agent's exit status, kept by a wrapper rather than read from tmux (tmux.ts exitRecordingArgv).
    const file = exitFile(opts.env, opts.session);
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    clearRecordedEnd(opts.env, opts.session);
    argv = exitRecordingArgv(file, argv);
  }
  await newSession(opts.env, {
    name: opts.session,
    cwd: opts.cwd,
    argv,
    env: sessionEnv(opts.chosen, opts.config, opts.meta, opts.env),
    options: {
      '@svc_runtime': opts.chosen.profile.runtime,
      '@svc_profile': opts.chosen.profile.id,
      ...(opts.meta.issue ? { '@svc_issue': String(opts.meta.issue) } : {}),
      ...opts.options,
    },
  });
  await new Promise((r) => setTimeout(r, 300));
  if (!(await hasSession(opts.env, opts.session))) {
    throw new CommandError('agent_exited', `${opts.chosen.binaryPath} (profile ${opts.chosen.profile.id}) exited right after it started in ${opts.session}`);
  }
}

/** Keep `.svc/` and `.orchestrator-msg.md` out of git status in the project and all its worktrees. */
export async function ensureExcluded(root: string): Promise<void> {
  const r = await git(root, ['rev-parse', '--git-common-dir']);
  if (r.code !== 0) return;
  const common = r.stdout.trim();
  const file = join(isAbsolute(common) ? common : join(root, common), 'info', 'exclude');
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {}
  const lines = new Set(text.split('\n').map((l) => l.trim()));
  const missing = ['/.svc/', '/.orchestrator-msg.md'].filter((l) => !lines.has(l));
  if (missing.length === 0) return;
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, `${text && !text.endsWith('\n') ? '\n' : ''}# svc (docs/orchestrator.md)\n${missing.join('\n')}\n`);
}
