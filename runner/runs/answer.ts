// What the daemon's run queue (manager.ts) answers skill.run with, and the processes it checks: kept
// apart so manager.ts stays the queue itself.
import { readFileSync } from 'node:fs';
import { CommandError } from '../errors.ts';
import type { Env } from '../paths.ts';
import { sessionName } from '../tmux.ts';
import { readRun, runDir } from './files.ts';
import type { RunFile, StateFile } from './files.ts';

export interface Submitted {
  runId: string;
  state: StateFile['state'];
  session?: string;
  position?: number;
  branch?: string;
  error?: string;
}

export function pidAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Stop an agent whose exec-run died: its process group, only when /proc shows it is this run's. */
export function killAgentGroup(pid: number | undefined, runId: string): void {
  if (!pid || !pidAlive(pid)) return;
  try {
    if (!readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`SVC_RUN_ID=${runId}`)) return;
    process.kill(-pid, 'SIGKILL');
  } catch {}
}

/** A run's answer as it stands: `now` from its state.json, `index` its place among the queued (-1: not queued). */
export function runAnswer(now: StateFile, run: RunFile, index: number): Submitted {
  return {
    runId: run.runId,
    state: now.state,
    ...(now.state === 'running' || now.state === 'starting' ? { session: sessionName.run(run.runId) } : {}),
    ...(index >= 0 ? { position: index + 1 } : {}),
    ...(run.worktree ? { branch: run.worktree.branch } : {}),
    ...(now.error ? { error: now.error } : {}),
  };
}

/** The run this runner already has under a server-chosen `runId` (null: new here); another project's is refused. */
export function knownRun(env: Env, runId: string, projectId: string): RunFile | null {
  const run = readRun(runDir(env, runId));
  if (run && run.projectId !== projectId) throw new CommandError('run_exists', `run ${runId} exists on this runner for another project`);
  return run;
}
