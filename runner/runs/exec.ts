// `svc-runner exec-run <runDir>` (spec: Runner command line; docs/skill-runs.md): what a skill run's
// tmux session executes. It reads run.json, spawns the argv (no shell) in its own process group, tees
// the agent's stdout to stream.jsonl and its stderr to stderr.log (and both to the pane), enforces the
// timeout, and at the end writes exit.json and then the final state.json, each atomically.
//
// How it ends: the agent exits by itself (→ succeeded or failed from the exit code and the stream);
// the timeout passes (→ timed_out); SIGTERM/SIGINT/SIGHUP arrive (→ cancelled when skill.cancel left
// cancel.json, otherwise failed: the session was killed from outside). Stopping sends SIGTERM to the
// agent's process group and SIGKILL after a grace period.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { join } from 'node:path';
import { FILES, isFinal, readRun, readState, writeJson, writeState } from './files.ts';
import type { ExitFile, RunFile, RunState } from './files.ts';
import { RUNTIMES } from '../runtimes/index.ts';
import { emptySummary, readStreamLine } from './stream.ts';
import type { Runtime, StreamSummary } from './stream.ts';

/** SIGTERM → SIGKILL grace when exec-run stops the agent. */
export const STOP_GRACE_MS = 5000;

/** Tests and benchmarks shorten a skill run's second (timeouts are ≥ 60 s); unset = 1000 ms. */
export function secondMs(env: Record<string, string | undefined>): number {
  const v = env.SVC_RUN_SECOND_MS;
  return v && /^\d{1,4}$/.test(v) && Number(v) > 0 ? Number(v) : 1000;
}

/** The run's final state from how it ended and what the agent said (pure). */
export function finalState(exit: Pick<ExitFile, 'reason' | 'code' | 'signal' | 'error'>, s: Pick<StreamSummary, 'error'>, timeoutSec: number, runtime?: Runtime): { state: RunState; error?: string } {
  switch (exit.reason) {
    case 'cancelled':
      return { state: 'cancelled' };
    case 'timeout':
      return { state: 'timed_out', error: `the run reached its timeout of ${timeoutSec} s and was stopped` };
    case 'killed':
      return { state: 'failed', error: "the run's tmux session was killed from outside" };
    case 'spawn_failed':
      return { state: 'failed', error: exit.error ?? 'the agent could not be started' };
    case 'exited':
      if (exit.code === 0 && !s.error) return { state: 'succeeded' };
    {
      // The stream's own error, with what the runtime documents the exit code to mean (Gemini CLI's 41, 53, …).
      const meaning = exit.code !== null && exit.code !== 0 && runtime ? RUNTIMES[runtime].exitMeaning?.(exit.code) : null;
      if (s.error) return { state: 'failed', error: meaning ? `${s.error} (${meaning})` : s.error };
      if (exit.code === null) return { state: 'failed', error: `the agent was ended by ${exit.signal}` };
      return { state: 'failed', error: meaning ?? `the agent exited with code ${exit.code}` };
    }
  }
}

type Out = { write: (s: string) => unknown };

export async function execRun(dir: string, env: Record<string, string | undefined>, err: Out): Promise<number> {
  const run = readRun(dir);
  if (!run) {
    err.write(`svc-runner exec-run: ${join(dir, FILES.run)} is missing or invalid\n`);
    if (existsSync(dir)) writeState(dir, { runId: dir.split('/').pop() ?? '', state: 'failed', error: 'run.json is missing or invalid' });
    return 1;
  }
  const prior = readState(dir);
  if (prior && isFinal(prior.state)) return 0; // cancelled while it was starting
  const startedAt = new Date().toISOString();
  const end = (exit: Omit<ExitFile, 'startedAt' | 'endedAt' | 'durationMs'>, summary: StreamSummary) => {
    const endedAt = new Date().toISOString();
    writeJson(join(dir, FILES.exit), { ...exit, startedAt, endedAt, durationMs: Date.parse(endedAt) - Date.parse(startedAt) });
    const final = finalState(exit, summary, run.timeoutSec, run.runtime);
    writeState(dir, { runId: run.runId, state: final.state, ...(final.error ? { error: final.error } : {}), pid: process.pid, startedAt, endedAt });
    return 0;
  };
  if (existsSync(join(dir, FILES.cancel))) return end({ reason: 'cancelled', code: null, signal: null }, emptySummary());
  return new Promise<number>((resolve) => supervise(run, dir, env, startedAt, end, resolve));
}

function supervise(
  run: RunFile,
  dir: string,
  env: Record<string, string | undefined>,
  startedAt: string,
  end: (exit: Omit<ExitFile, 'startedAt' | 'endedAt' | 'durationMs'>, s: StreamSummary) => number,
  resolve: (code: number) => void,
): void {
  const stream = createWriteStream(join(dir, FILES.stream), { flags: 'a', mode: 0o600 });
  const stderr = createWriteStream(join(dir, FILES.stderr), { flags: 'a', mode: 0o600 });
  let pane = true;
  process.stdout.on('error', () => (pane = false)); // the pane is gone (session killed): keep going
  const toPane = (d: Buffer) => {
    if (pane) process.stdout.write(d);
  };
  const summary = emptySummary();
  let partial = '';
  const child = spawn(run.argv[0], run.argv.slice(1), {
    cwd: run.cwd,
    env: { ...(env as NodeJS.ProcessEnv), ...run.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: stopping it stops what it started
  });
  let stopping: ExitFile['reason'] | null = null;
  let killTimer: NodeJS.Timeout | undefined;
  const group = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {}
  };
  const stop = (reason: ExitFile['reason']) => {
    if (stopping) return;
    stopping = reason;
    group('SIGTERM');
    killTimer = setTimeout(() => group('SIGKILL'), STOP_GRACE_MS);
  };
  const onSignal = () => stop(existsSync(join(dir, FILES.cancel)) ? 'cancelled' : 'killed');
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, onSignal);
  const timer = setTimeout(() => stop('timeout'), run.timeoutSec * secondMs(env));

  child.stdout.on('data', (d: Buffer) => {
    stream.write(d);
    toPane(d);
    const lines = (partial + d.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) readStreamLine(run.runtime, line, summary);
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr.write(d);
    toPane(d);
  });
  child.once('spawn', () => {
    writeState(dir, { runId: run.runId, state: 'running', pid: process.pid, agentPid: child.pid, startedAt });
  });
  let finished = false;
  const finish = async (exit: Omit<ExitFile, 'startedAt' | 'endedAt' | 'durationMs'>) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    clearTimeout(killTimer);
    if (partial.trim()) readStreamLine(run.runtime, partial, summary);
    await Promise.all([stream, stderr].map(closeStream));
    resolve(end(exit, summary));
  };
  child.once('error', (e: NodeJS.ErrnoException) => {
    void finish({ reason: 'spawn_failed', code: null, signal: null, error: `${run.argv[0]} could not be started (${e.code ?? e.message})` });
  });
  child.once('exit', (code, signal) => {
    // Whatever the agent left running in its group ends with the run.
    if (!stopping) group('SIGTERM');
    // Output still in the pipes arrives before 'close'; a grandchild holding them open must not hold us.
    const done = () => void finish({ reason: stopping ?? 'exited', code, signal });
    const t = setTimeout(done, 2000);
    child.once('close', () => (clearTimeout(t), done()));
  });
}

function closeStream(s: WriteStream): Promise<void> {
  return new Promise((r) => s.end(() => r()));
}
