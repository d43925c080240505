// Skill run events to the server (docs/skill-runs.md, "Events"), spooled like every runner event:
//   skill_run.state     each state change; the final one carries the result
//   skill_run.progress  progress lines read from the agent's stream (seq = their order in the run)
//   skill_run.patch     a pull request run's patch, at most 128 KiB of it, with its full size and hash
// Each event has a stable id per run and step, so a re-send after a crash is stored once.
import { closeSync, openSync, readSync } from 'node:fs';
import { PATCH_KEEP_BYTES, REPORT_KEEP_BYTES, cutUtf8 } from '../../protocol/runs.ts';
import type { NewEvent } from '../spool.ts';
import type { RunFile, RunState, StateFile } from './files.ts';
import type { StreamSummary } from './stream.ts';
import type { PatchInfo } from './worktree.ts';

export const PROGRESS_BATCH = 50;
/** Progress lines sent per run; the stream itself keeps everything. */
export const MAX_PROGRESS_LINES = 2000;

const source = (r: RunFile) => `project:${r.projectId}`;

function describe(r: RunFile) {
  return {
    runId: r.runId,
    project: r.projectId,
    skill: r.skill,
    args: r.args,
    output: r.output,
    profile: r.profileId,
    runtime: r.runtime,
    ...(r.model ? { model: r.model } : {}),
    timeoutSec: r.timeoutSec,
    createdAt: r.createdAt,
    ...(r.worktree ? { branch: r.worktree.branch } : {}),
  };
}

export interface RunResult {
  report: string | null;
  reportTruncated: boolean;
  reportBytes: number;
  exitCode: number | null;
  durationMs: number | null;
  sessionId: string | null;
  costUsd: number | null;
  usage: Record<string, number> | null;
  turns: number | null;
  /** The patch, and the pull request opened from it (url, number) or why it was not (openError). */
  pullRequest: (PatchInfo & { url?: string; number?: number; openError?: string }) | null;
  /** Why the patch could not be made, when it could not. */
  patchError?: string;
}

export function buildResult(summary: StreamSummary, exit: { code: number | null; durationMs: number } | null, patch: PatchInfo | null, patchError?: string): RunResult {
  const report = summary.finalMessage === null ? null : cutUtf8(summary.finalMessage, REPORT_KEEP_BYTES);
  return {
    report: report?.text ?? null,
    reportTruncated: report?.cut ?? false,
    reportBytes: summary.finalMessage === null ? 0 : Buffer.byteLength(summary.finalMessage),
    exitCode: exit?.code ?? null,
    durationMs: exit?.durationMs ?? null,
    sessionId: summary.sessionId,
    costUsd: summary.costUsd,
    usage: summary.usage,
    turns: summary.turns,
    pullRequest: patch,
    ...(patchError ? { patchError } : {}),
  };
}

export function stateEvent(r: RunFile, s: StateFile, result?: RunResult): NewEvent {
  return {
    id: `run.${r.runId}.${s.state}`,
    source: source(r),
    kind: 'skill_run.state',
    ts: s.at,
    payload: {
      ...describe(r),
      state: s.state as RunState,
      at: s.at,
      ...(s.error ? { error: s.error.slice(0, 2000) } : {}),
      ...(s.startedAt ? { startedAt: s.startedAt } : {}),
      ...(s.endedAt ? { endedAt: s.endedAt } : {}),
      ...(s.state === 'running' || s.state === 'starting' ? { session: `svc-run-${r.runId}` } : {}),
      ...(result ? { result } : {}),
    },
  };
}

export function progressEvent(r: RunFile, lines: { seq: number; text: string }[]): NewEvent {
  return { id: `run.${r.runId}.p${lines[0].seq}`, source: source(r), kind: 'skill_run.progress', payload: { runId: r.runId, project: r.projectId, lines } };
}

export function patchEvent(r: RunFile, patchFile: string, info: PatchInfo): NewEvent {
  let kept = cutUtf8(readHead(patchFile, PATCH_KEEP_BYTES + 4), PATCH_KEEP_BYTES, true);
  // JSON escapes may grow the text (quotes, control characters): the event must stay below the spool's limit.
  while (Buffer.byteLength(JSON.stringify(kept.text)) > 200 * 1024) kept = { text: cutUtf8(kept.text, Math.floor(Buffer.byteLength(kept.text) * 0.75), true).text, cut: true };
  return {
    id: `run.${r.runId}.patch`,
    source: source(r),
    kind: 'skill_run.patch',
    payload: { runId: r.runId, project: r.projectId, bytes: info.patchBytes, sha256: info.patchSha256, text: kept.text, truncated: kept.cut || info.patchBytes > PATCH_KEEP_BYTES },
  };
}

function readHead(file: string, bytes: number): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    return buf.subarray(0, readSync(fd, buf, 0, bytes, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
