// What a skill run launches (docs/skill-runs.md, "What runs"): the profile's agent in headless mode
// with a prompt naming the skill and carrying its arguments as a JSON array, as an argv (never a shell
// string), in the project root (report) or the run's fresh worktree (pull request), with the runtime's
// telemetry environment (svc.run set, spec: Runner local OTLP receiver) and SVC_* variables.
import { delimiter, dirname } from 'node:path';
import type { RunnerConfig } from '../config.ts';
import type { Chosen } from '../launch.ts';
import { runnerShimDir, telemetry } from '../launch.ts';
import type { Env } from '../paths.ts';
import { RUNTIMES } from '../runtimes/index.ts';
import type { RunFile } from './files.ts';
import { runBranch, runWorktreePath } from './worktree.ts';

export interface RunRequest {
  runId: string;
  projectId: string;
  root: string;
  skill: string;
  args: string[];
  output: 'report' | 'pull_request';
  model?: string;
  timeoutSec: number;
}

/** The prompt: the skill by name and its arguments as a JSON array, to be taken literally. */
export function skillPrompt(r: Pick<RunRequest, 'skill' | 'args' | 'output'>, branch?: string): string {
  const args = r.args.length ? ` Its arguments, as a JSON array of strings to be taken literally: ${JSON.stringify(r.args)}.` : '';
  const tail =
    r.output === 'pull_request'
      ? ` You work in a fresh git worktree on branch ${branch}: make the change there and leave it in the working tree (committing is optional; what is left is committed for you). Do not push and do not open a pull request. End with a short summary of the change as your final message.`
      : ' End with your report as your final message.';
  return `Use the ${r.skill} skill.${args}${tail}`;
}

/** The agent's argv for a headless run: binary, profile args, telemetry args, then the runtime's own. */
export function agentArgv(chosen: Chosen, config: RunnerConfig, r: RunRequest, prompt: string): string[] {
  const { profile, binaryPath } = chosen;
  const tele = telemetry(profile, config, { projectId: r.projectId, root: r.root, role: 'worker' }).args;
  return [binaryPath, ...profile.args, ...tele, ...RUNTIMES[profile.runtime].headlessArgs({ model: r.model, output: r.output, profileArgs: profile.args }, prompt)];
}

/** The agent's environment on top of exec-run's own. */
export function agentEnv(chosen: Chosen, config: RunnerConfig, r: RunRequest, env: Env): Record<string, string> {
  const tele = telemetry(chosen.profile, config, { projectId: r.projectId, root: r.root, role: 'worker' }).env;
  if (tele.OTEL_RESOURCE_ATTRIBUTES) tele.OTEL_RESOURCE_ATTRIBUTES += `,svc.run=${r.runId}`;
  const path = [runnerShimDir(env), dirname(process.execPath), env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].filter(Boolean).join(delimiter);
  return {
    PATH: path,
    ...chosen.profile.env,
    ...tele,
    SVC_PROJECT_ID: r.projectId,
    SVC_PROJECT_ROOT: r.root,
    SVC_ROLE: 'skill',
    SVC_RUN_ID: r.runId,
    SVC_SKILL: r.skill,
  };
}

/** run.json for a new run (the pull request's base commit is added when the worktree is made). */
export function buildRunFile(chosen: Chosen, config: RunnerConfig, r: RunRequest, env: Env): RunFile {
  const worktree = r.output === 'pull_request' ? { path: runWorktreePath(r.root, r.runId), branch: runBranch(r.runId) } : undefined;
  return {
    version: 1,
    runId: r.runId,
    projectId: r.projectId,
    root: r.root,
    skill: r.skill,
    args: r.args,
    output: r.output,
    profileId: chosen.profile.id,
    runtime: chosen.profile.runtime,
    ...(r.model ? { model: r.model } : {}),
    argv: agentArgv(chosen, config, r, skillPrompt(r, worktree?.branch)),
    cwd: worktree?.path ?? r.root,
    env: agentEnv(chosen, config, r, env),
    timeoutSec: r.timeoutSec,
    createdAt: new Date().toISOString(),
    ...(worktree ? { worktree } : {}),
  };
}

/** The tmux session's command: this very runner's `exec-run <runDir>` (argv of ≥ 2 elements). */
export function execRunArgv(dir: string): string[] {
  const self = process.argv[1];
  // Under tsx (development) the loader flags must come along; the bundle needs none.
  const loader = self.endsWith('.ts') ? process.execArgv : [];
  return [process.execPath, ...loader, self, 'exec-run', dir];
}

/** exec-run's own environment in the session (the agent's comes from run.json). */
export function sessionEnv(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['HOME', 'PATH', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'LANG', 'LC_ALL', 'TZ', 'SVC_TMUX_SOCKET', 'SVC_RUN_SECOND_MS']) if (env[k]) out[k] = env[k]!;
  return out;
}
