// A commit's checks in four states (spec: Events, pr.checks_changed), shared by the runner's poll
// (runner/codehost/github.ts, changes.ts) and the server's App deliveries (functions/codehost/pulls.ts),
// so both read GitHub's check runs and commit statuses the same way. Shapes and pure functions; no I/O.
import * as z from 'zod';

export type CheckState = 'none' | 'pending' | 'passed' | 'failed';
export interface Check {
  name: string;
  state: CheckState;
  url: string | null;
}

const FAILED = new Set(['failure', 'timed_out', 'cancelled', 'action_required', 'startup_failure', 'stale', 'error']);

/** One check run or commit status → our four states. */
export function checkState(status: string, conclusion: string | null): CheckState {
  if (status !== 'completed' && conclusion === null) return status === 'success' ? 'passed' : FAILED.has(status) ? 'failed' : 'pending';
  return conclusion && FAILED.has(conclusion) ? 'failed' : 'passed';
}

/** All checks of a commit → one state: any failed → failed; else any pending → pending; else passed. */
export function overall(checks: Check[]): CheckState {
  if (checks.length === 0) return 'none';
  if (checks.some((c) => c.state === 'failed')) return 'failed';
  if (checks.some((c) => c.state === 'pending')) return 'pending';
  return 'passed';
}

export function checksSummary(checks: Check[]): string {
  if (checks.length === 0) return 'no checks';
  const count = (s: CheckState) => checks.filter((c) => c.state === s).length;
  const failed = checks.filter((c) => c.state === 'failed').map((c) => c.name);
  const parts = [`${count('passed')} passed`, `${failed.length} failed`, `${count('pending')} pending`];
  return `${checks.length} checks: ${parts.join(', ')}${failed.length ? ` (failed: ${failed.slice(0, 10).join(', ')})` : ''}`;
}

/** GET /repos/{o}/{r}/commits/{sha}/check-runs, the fields read. */
export const checkRuns = z.object({
  total_count: z.number().int(),
  check_runs: z.array(z.object({ name: z.string(), status: z.string(), conclusion: z.string().nullable(), html_url: z.string().nullable().optional() })),
});
/** GET /repos/{o}/{r}/commits/{sha}/status (the combined status), the fields read. */
export const combinedStatus = z.object({
  state: z.string(),
  statuses: z.array(z.object({ context: z.string(), state: z.string(), target_url: z.string().nullable().optional() })),
});

/** A commit's check runs and commit statuses as GitHub lists them → its checks. */
export function checksOfCommit(
  runs: { name: string; status: string; conclusion: string | null; html_url?: string | null }[],
  statuses: { context: string; state: string; target_url?: string | null }[],
): Check[] {
  return [
    ...runs.map((r) => ({ name: r.name, state: checkState(r.status, r.conclusion), url: r.html_url ?? null })),
    ...statuses.map((s) => ({ name: s.context, state: checkState(s.state, null), url: s.target_url ?? null })),
  ];
}

/** A GitLab job's status → the four check states (an allowed failure does not fail the checks): the
 *  runner's pipeline checks (runner/codehost/gitlab.ts) and a Pipeline Hook's jobs on the server. */
export function jobState(status: string, allowFailure: boolean): CheckState {
  switch (status) {
    case 'success':
    case 'skipped':
      return 'passed';
    case 'failed':
    case 'canceled':
      return allowFailure ? 'passed' : 'failed';
    case 'manual':
      return allowFailure ? 'passed' : 'pending';
    default: // created, waiting_for_resource, preparing, pending, running, scheduled
      return 'pending';
  }
}
