// Pull request changes → pr.* events (spec: Events; docs/runner.md, "Code host"), a pure function of
// what was seen before and what a poll saw now:
//   a pull request not seen open before          → pr.opened
//   its checks reach passed or failed             → pr.checks_changed {state: passed|failed, sha}
//     (`sha`, the head commit, tells the server's arbiter which commit's result it is; the outbound
//     envelope's data allowlist leaves it out)
//     (again on a new head commit with the same result: that is a new run's result)
//   its checks go from passed/failed to pending   → pr.checks_changed {state: restarted}
//   gone from the open list, merged               → pr.merged;   closed without merging → pr.closed
// The first poll of a project records what is open without events (no storm of pr.opened for old
// pull requests when a runner starts). Event ids are stable per change (`gh.<project>.<number>.<opens>
// .<what>`, checks numbered), so a change spooled but not yet recorded as seen (a crash in between) is
// spooled again after a restart with the same id and stored once by the server.
import type { FleetEvent } from '../panes.ts';
import type { CheckState, Check } from './github.ts';
import { overall } from './github.ts';
import { checksSummary } from '../../protocol/checks.ts';

export interface SeenPull {
  title: string;
  branch: string;
  url: string;
  sha: string;
  checks: CheckState;
  /** How many times it was seen opening (a reopened pull request opens again). */
  opens: number;
  /** Checks changes reported for it so far (numbers the event ids). */
  checkSeq: number;
  open: boolean;
}
export interface ProjectSeen {
  repo: string;
  prs: Record<string, SeenPull>;
}

export interface OpenPull {
  number: number;
  title: string;
  branch: string;
  url: string;
  sha: string;
  checks: Check[];
}
export interface GonePull {
  number: number;
  merged: boolean;
  title: string;
  url: string;
}

export interface PullEvent {
  id: string;
  event: FleetEvent;
}

/** Closed pull requests remembered per project (to number a reopening); the oldest are forgotten. */
const KEEP_CLOSED = 200;

export { checksSummary } from '../../protocol/checks.ts';

function checksEvent(prev: SeenPull, now: CheckState, sha: string): 'passed' | 'failed' | 'restarted' | null {
  const terminal = (s: CheckState) => s === 'passed' || s === 'failed';
  if (terminal(now) && (now !== prev.checks || sha !== prev.sha)) return now as 'passed' | 'failed';
  if (now === 'pending' && terminal(prev.checks)) return 'restarted';
  return null;
}

export function diffPulls(projectId: string, repo: string, prev: ProjectSeen | undefined, open: OpenPull[], gone: GonePull[]): { next: ProjectSeen; events: PullEvent[] } {
  const baseline = prev === undefined || prev.repo !== repo;
  const prs: Record<string, SeenPull> = baseline ? {} : structuredClone(prev.prs);
  const events: PullEvent[] = [];
  const emit = (n: number, opens: number, what: string, type: string, data: Record<string, unknown>) =>
    events.push({ id: `gh.${projectId}.${n}.${opens}.${what}`, event: { projectId, type, data } });

  for (const p of open) {
    const state = overall(p.checks);
    const before = prs[p.number];
    const pr = { number: p.number, url: p.url };
    if (!before || !before.open) {
      const opens = (before?.opens ?? 0) + 1;
      prs[p.number] = { title: p.title, branch: p.branch, url: p.url, sha: p.sha, checks: state, opens, checkSeq: before?.checkSeq ?? 0, open: true };
      if (!baseline) emit(p.number, opens, 'opened', 'pr.opened', { pr, title: p.title, branch: p.branch });
      continue;
    }
    const change = checksEvent(before, state, p.sha);
    const next = { ...before, title: p.title, branch: p.branch, url: p.url, sha: p.sha, checks: state };
    if (change) {
      next.checkSeq = before.checkSeq + 1;
      emit(p.number, before.opens, `checks.${next.checkSeq}`, 'pr.checks_changed', { pr, state: change, summary: checksSummary(p.checks), sha: p.sha });
    }
    prs[p.number] = next;
  }
  for (const g of gone) {
    const before = prs[g.number];
    if (!before?.open) continue;
    prs[g.number] = { ...before, open: false };
    const data = { pr: { number: g.number, url: g.url }, title: g.title };
    emit(g.number, before.opens, g.merged ? 'merged' : 'closed', g.merged ? 'pr.merged' : 'pr.closed', data);
  }
  const closed = Object.keys(prs)
    .filter((n) => !prs[n].open)
    .map(Number)
    .sort((a, b) => a - b);
  for (const n of closed.slice(0, Math.max(0, closed.length - KEEP_CLOSED))) delete prs[n];
  return { next: { repo, prs }, events };
}

/** Pull requests seen open before and missing from the open list now: ask each one's final state. */
export const missing = (prev: ProjectSeen | undefined, repo: string, open: OpenPull[]): number[] =>
  prev && prev.repo === repo
    ? Object.entries(prev.prs)
        .filter(([n, p]) => p.open && !open.some((o) => o.number === Number(n)))
        .map(([n]) => Number(n))
    : [];
