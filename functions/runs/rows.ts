// Skill runs and runs that did not start as stored (skill_runs, run_start_failures) and the API's view
// of them (protocol/api/runs.ts).
import type { FailedStart, RunDetail, RunSummary } from '../../protocol/api/runs.ts';
import type { RunState } from '../../protocol/runs.ts';
import { startReasonRemedy, startReasonWords } from '../../protocol/start-reasons.ts';

export interface RunRow {
  id: string;
  runner_id: string | null;
  project_id: string;
  skill: string;
  args: string[];
  output: 'report' | 'pull_request';
  profile_id: string;
  runtime: string;
  model: string | null;
  timeout_sec: number | null;
  state: RunState;
  error: string | null;
  branch: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
  cost_usd: string | null;
  progress_lines: number;
  last_progress: string | null;
  reason: string | null;
  retry_of: string | null;
  /** A queued pool run's place and waiting reason (queries.ts QUEUE_JOIN); absent or null otherwise. */
  queue_position?: string | number | null;
  queue_reason?: string | null;
}
export interface RunDetailRow extends RunRow {
  report: string | null;
  report_truncated: boolean;
  exit_code: number | null;
  duration_ms: string | number | null;
  session_id: string | null;
  usage: Record<string, number> | null;
  pull_request: RunDetail['pullRequest'];
  patch: string | null;
  patch_bytes: string | number | null;
  patch_sha256: string | null;
  patch_truncated: boolean;
}

export interface FailedStartRow {
  id: string | number;
  project_id: string;
  source: 'trigger' | 'schedule';
  source_id: string;
  source_name: string;
  action: 'skill' | 'next_round';
  skill: string | null;
  reason: string;
  detail: string | null;
  delivery_id: string | null;
  created_at: Date;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const num = (v: string | number | null) => (v === null ? null : Number(v));

export const toSummary = (r: RunRow): RunSummary => ({
  id: r.id,
  projectId: r.project_id,
  runnerId: r.runner_id,
  skill: r.skill,
  args: r.args,
  output: r.output,
  profileId: r.profile_id,
  runtime: r.runtime,
  model: r.model,
  timeoutSec: r.timeout_sec,
  state: r.state,
  error: r.error,
  branch: r.branch,
  createdAt: iso(r.created_at)!,
  startedAt: iso(r.started_at),
  finishedAt: iso(r.finished_at),
  updatedAt: iso(r.updated_at)!,
  costUsd: num(r.cost_usd),
  progressLines: r.progress_lines,
  lastProgress: r.last_progress,
  reason: r.reason,
  retryOf: r.retry_of,
  queue: r.queue_position == null ? null : { position: Number(r.queue_position), reason: r.queue_reason ?? 'waiting for the dispatcher' },
});

export const toDetail = (r: RunDetailRow, progress: RunDetail['progress']): RunDetail => ({
  ...toSummary(r),
  report: r.report,
  reportTruncated: r.report_truncated,
  exitCode: r.exit_code,
  durationMs: num(r.duration_ms),
  sessionId: r.session_id,
  usage: r.usage,
  pullRequest: r.pull_request,
  patch: r.patch,
  patchBytes: num(r.patch_bytes),
  patchSha256: r.patch_sha256,
  patchTruncated: r.patch_truncated,
  progress,
});

export const toFailedStart = (f: FailedStartRow): FailedStart => ({
  id: String(f.id),
  projectId: f.project_id,
  source: f.source,
  sourceId: f.source_id,
  sourceName: f.source_name,
  action: f.action,
  skill: f.skill,
  reason: f.reason,
  words: startReasonWords(f.reason),
  remedy: startReasonRemedy(f.reason),
  detail: f.detail,
  deliveryId: f.delivery_id,
  createdAt: iso(f.created_at)!,
});
