// Finishing a skill run (docs/skill-runs.md, "Results"): read the agent's stream for the final message
// (the report), usage and cost; for a pull request, commit what is left in the worktree, write
// patch.diff and remove the worktree (a run that changed nothing leaves no branch); then spool the
// patch and the final state with the result. result.json records the result and whether its events
// were spooled, so a daemon killed in between spools them again (with the same ids) after a restart.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { git } from '../commands/git.ts';
import { errorText, log } from '../log.ts';
import type { NewEvent } from '../spool.ts';
import { buildResult, patchEvent, stateEvent } from './events.ts';
import type { RunResult } from './events.ts';
import { FILES, readExit, stateFile, writeJson } from './files.ts';
import type { RunFile, StateFile } from './files.ts';
import { summarize } from './stream.ts';
import { collectPatch, retireRunWorktree } from './worktree.ts';
import type { PatchInfo } from './worktree.ts';
import type { PullLink } from '../codehost/publish.ts';

export const resultFile = z.object({ reported: z.boolean(), state: stateFile, result: z.custom<RunResult>((v) => typeof v === 'object' && v !== null) });
export type ResultFile = z.infer<typeof resultFile>;

/** The last `max` bytes of a file from a line start ('' when it does not exist). */
function readTail(file: string, max: number): string {
  if (!existsSync(file)) return '';
  const size = statSync(file).size;
  const from = Math.max(0, size - max);
  const buf = Buffer.alloc(size - from);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, buf.length, from);
  } finally {
    closeSync(fd);
  }
  const text = buf.toString('utf8');
  return from === 0 ? text : text.slice(text.indexOf('\n') + 1);
}

type Emit = (events: NewEvent[]) => void;
/** Push the run's branch and open its pull request (codehost/publish.ts); absent outside the daemon. */
export type Publish = (run: RunFile, patch: PatchInfo, report: string | null) => Promise<PullLink>;

function send(dir: string, run: RunFile, done: ResultFile, emit: Emit): void {
  const events: NewEvent[] = [];
  const pr = done.result.pullRequest;
  if (pr && existsSync(join(dir, FILES.patch))) events.push(patchEvent(run, join(dir, FILES.patch), pr));
  events.push(stateEvent(run, done.state, done.result));
  emit(events);
  writeJson(join(dir, FILES.result), { ...done, reported: true });
}

export async function finishRun(dir: string, run: RunFile, state: StateFile, emit: Emit, publish?: Publish): Promise<void> {
  const exit = readExit(dir);
  const summary = summarize(run.runtime, readTail(join(dir, FILES.stream), 8 * 1024 * 1024));
  let patch: PatchInfo | null = null;
  let patchError: string | undefined;
  const wt = run.worktree;
  if (wt?.base) {
    try {
      patch = await collectPatch(run.root, { path: wt.path, branch: wt.branch, base: wt.base }, join(dir, FILES.patch), `${run.skill}: svc skill run ${run.runId}`);
    } catch (e) {
      patchError = `the patch could not be made: ${errorText(e)}`;
    }
  }
  const result = buildResult(summary, exit, patch, patchError);
  // Only a run that succeeded and committed something opens a pull request; the others keep the branch.
  if (publish && patch && result.pullRequest && patch.commits > 0 && state.state === 'succeeded') {
    const link = await publish(run, patch, result.report).catch((e): PullLink => ({ openError: `the pull request could not be opened: ${errorText(e)}` }));
    result.pullRequest = { ...result.pullRequest, ...link };
    if (link.openError) log.warn('the run pull request was not opened', { runId: run.runId, error: link.openError });
  }
  const done: ResultFile = { reported: false, state, result };
  writeJson(join(dir, FILES.result), done);
  await resendResult(dir, run, done, emit);
}

/** Tidy the worktree, then send (also after a restart, for a result written but maybe not spooled).
 *  Sent last: when the server sees the final state, the branch is ready and the worktree gone. */
export async function resendResult(dir: string, run: RunFile, done: ResultFile, emit: Emit): Promise<void> {
  const wt = run.worktree;
  const patch = done.result.pullRequest;
  if (wt && patch) {
    const kept = await retireRunWorktree(run.root, wt.path);
    if (kept) log.warn('the run worktree could not be removed', { runId: run.runId, error: kept });
    else if (patch.commits === 0) {
      const r = await git(run.root, ['branch', '-D', '--', wt.branch]);
      if (r.code !== 0 && !/not found/.test(r.stderr)) log.warn('the empty run branch could not be deleted', { runId: run.runId, error: r.stderr.trim().slice(0, 300) });
    }
  }
  send(dir, run, done, emit);
}
