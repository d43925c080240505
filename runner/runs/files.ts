// A skill run's directory (spec: Runner state directory; docs/skill-runs.md): `runs/<runId>/` holds
// run.json (what to launch, as an argv), state.json (the run's state), stream.jsonl (the agent's
// output stream), stderr.log, exit.json, patch.diff and result.json. Every JSON file is written
// atomically (temp file, fsync, rename) with mode 0600: run.json carries the profile's environment.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { RUNTIMES } from '../../protocol/usage.ts';
import { FINAL_STATES, RUN_STATES } from '../../protocol/runs.ts';
import type { RunState } from '../../protocol/runs.ts';
import { writeFileAtomic } from '../config.ts';
import { stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';

export const RUN_ID = /^[A-Za-z0-9_-]{1,64}$/;
export const runsDir = (env: Env) => join(stateDir(env), 'runs');
export const runDir = (env: Env, runId: string) => join(runsDir(env), runId);

export const FILES = {
  run: 'run.json',
  state: 'state.json',
  stream: 'stream.jsonl',
  stderr: 'stderr.log',
  exit: 'exit.json',
  patch: 'patch.diff',
  result: 'result.json',
  /** Written by skill.cancel before it stops the run: exec-run then ends as `cancelled`. */
  cancel: 'cancel.json',
} as const;

/** Sortable and unique: creation time in base 36, then randomness. */
export { newRunId } from '../../protocol/runs.ts';

export { RUN_STATES } from '../../protocol/runs.ts';
export type { RunState } from '../../protocol/runs.ts';
export const isFinal = (s: RunState) => FINAL_STATES.includes(s);
export const OUTPUTS = ['report', 'pull_request'] as const;

export const runFile = z.strictObject({
  version: z.literal(1),
  runId: z.string().regex(RUN_ID),
  projectId: z.string(),
  /** The project root's real path. */
  root: z.string(),
  skill: z.string(),
  args: z.array(z.string()),
  output: z.enum(OUTPUTS),
  profileId: z.string(),
  runtime: z.enum(RUNTIMES),
  model: z.string().optional(),
  /** What exec-run spawns: argv[0] is the agent binary's absolute path. Never a shell string. */
  argv: z.array(z.string()).min(1),
  cwd: z.string(),
  /** Set on top of exec-run's own environment. */
  env: z.record(z.string(), z.string()),
  timeoutSec: z.number().int().positive(),
  createdAt: z.string(),
  /** Pull request output: the fresh worktree and its branch, and the commit it starts from (set when it starts). */
  worktree: z.strictObject({ path: z.string(), branch: z.string(), base: z.string().optional() }).optional(),
});
export type RunFile = z.infer<typeof runFile>;

export const stateFile = z.object({
  runId: z.string(),
  state: z.enum(RUN_STATES),
  at: z.string(),
  /** Why a run failed, in a sentence. */
  error: z.string().optional(),
  /** exec-run's pid (the tmux pane's process) and the agent's pid, while it runs. */
  pid: z.number().int().optional(),
  agentPid: z.number().int().optional(),
  startedAt: z.string().optional(),
  endedAt: z.string().optional(),
});
export type StateFile = z.infer<typeof stateFile>;

export const EXIT_REASONS = ['exited', 'timeout', 'cancelled', 'killed', 'spawn_failed'] as const;
export const exitFile = z.object({
  /** exited: the agent ended by itself; timeout / cancelled / killed: exec-run stopped it (killed = its
   *  tmux session was killed from outside); spawn_failed: the agent could not be started. */
  reason: z.enum(EXIT_REASONS),
  code: z.number().int().nullable(),
  signal: z.string().nullable(),
  startedAt: z.string(),
  endedAt: z.string(),
  durationMs: z.number(),
  error: z.string().optional(),
});
export type ExitFile = z.infer<typeof exitFile>;

export function writeJson(path: string, value: unknown): void {
  writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n');
}

/** A JSON file validated by `schema`; null when it is missing or not valid (a torn write cannot be:
 *  every write is a rename). */
export function readJson<S extends z.ZodType>(path: string, schema: S): z.infer<S> | null {
  if (!existsSync(path)) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export const readRun = (dir: string) => readJson(join(dir, FILES.run), runFile);
export const readState = (dir: string) => readJson(join(dir, FILES.state), stateFile);
export const readExit = (dir: string) => readJson(join(dir, FILES.exit), exitFile);

export function writeState(dir: string, state: Omit<StateFile, 'at'> & { at?: string }): StateFile {
  const value = { ...state, at: state.at ?? new Date().toISOString() };
  writeJson(join(dir, FILES.state), value);
  return value;
}
