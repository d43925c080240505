// Pull request state on the server, the one arbiter (issue #36 item 2; docs/github-app.md, "Pull request
// state"). Two sources OBSERVE a pull request — the runner's pr.* events (its poll, the safety net;
// events/sinks/codehost.ts) and App deliveries of pull_request, pull_request_review, check_suite and
// check_run (hook.ts) — and every observation goes through observe(), which compares it with the row in
// `codehost_pulls` under a lock on (project, number):
//   - a transition emits exactly one catalogue event (pr.opened, pr.merged, pr.closed,
//     pr.checks_changed), its id derived from the stored state: ['codehost', project, number, opens,
//     'opened' | 'merged' | 'closed' | 'checks.<seq>'], so the poll and the webhook seeing the same change
//     make the same id — and the second one sees no transition anyway;
//   - an observation that changes nothing (a re-sent event, the poll confirming what a delivery said)
//     emits nothing; nor does a stale one: a delivery whose pull request updated_at (GitHub's clock) is
//     older than the stored one, a runner pr.merged/pr.closed numbering an older opening than the stored
//     one, a runner pr.opened of an opening already known (the close came first), checks of a closed PR.
// Transitions, as the runner's changes.ts defines them: a pull request not known open before opens
// (a delivery opens one only on `opened`/`reopened`; a runner event numbering a later opening reopens);
// an open one merges or closes; its checks reach passed or failed (again on a new head commit with the
// same result), or go from passed/failed back to pending (`restarted`).
import type { Queryable } from '../lib/db/index.ts';
import { sql } from '../lib/db/index.ts';
import { appendAudit } from '../audit/audit.ts';
import { publish } from '../live/publish.ts';
import { notify } from '../notifications/notify.ts';
import { emitEvent } from '../webhooks/capture.ts';
import type { EventType } from '../webhooks/catalogue.ts';

export type PullState = 'open' | 'merged' | 'closed';
export type ChecksSeen = 'none' | 'pending' | 'passed' | 'failed' | 'restarted';

export interface Observation {
  source: 'runner' | 'app';
  number: number;
  /** What the source saw the pull request be (absent: a checks-only observation). */
  state?: PullState;
  /** A delivery: whether it may open the pull request anew (action opened or reopened). */
  opening?: boolean;
  title?: string | null;
  url?: string | null;
  branch?: string | null;
  /** The head commit, when the source knows it. */
  sha?: string | null;
  /** A delivery: the pull request's updated_at on GitHub. */
  updatedAt?: string | null;
  /** A runner event: the opening its id numbers (gh.<project>.<n>.<opens>.<what>); null when not one of its poll's. */
  runnerOpens?: number | null;
  checks?: { state: ChecksSeen; summary: string | null; sha?: string | null; /** GitHub's time of the check result. */ at?: string | null };
  ts: Date;
  slot?: string;
  issue?: number;
}

interface PullRow {
  state: PullState;
  title: string | null;
  url: string | null;
  branch: string | null;
  head_sha: string | null;
  checks: 'none' | 'pending' | 'passed' | 'failed';
  checks_sha: string | null;
  checks_summary: string | null;
  checks_at: Date | null;
  opens: number;
  check_seq: number;
  gh_updated_at: Date | null;
}

/** Advisory lock class of a pull request's row (the second key is hashtext of project and number). */
const LOCK_CLASS = 4_242_036;
const terminal = (s: string) => s === 'passed' || s === 'failed';
const later = (a: string | null | undefined, b: Date | null) => !a || !b || Date.parse(a) >= new Date(b).getTime();

interface Emit {
  what: string;
  type: EventType;
  data: Record<string, unknown>;
}

/** The transitions an observation makes of the stored row (null: none yet), and the row after it. */
export function transition(prev: PullRow | null, o: Observation): { next: PullRow; emits: Emit[] } | null {
  // Stale: a delivery older than the stored state.
  if (prev && o.source === 'app' && o.state && !later(o.updatedAt, prev.gh_updated_at)) return null;
  const next: PullRow = prev
    ? { ...prev }
    : { state: 'open', title: null, url: null, branch: null, head_sha: null, checks: 'none', checks_sha: null, checks_summary: null, checks_at: null, opens: 0, check_seq: 0, gh_updated_at: null };
  const emits: Emit[] = [];
  const k = o.source === 'runner' ? (o.runnerOpens ?? null) : null;
  for (const [key, v] of [['title', o.title], ['url', o.url], ['branch', o.branch]] as const) if (v) next[key] = v;
  if (o.sha && o.state) next.head_sha = o.sha;
  if (o.source === 'app' && o.updatedAt && o.state) next.gh_updated_at = new Date(o.updatedAt);
  const pr = () => ({ number: o.number, ...(next.url ? { url: next.url } : {}) });

  if (o.state === 'open') {
    const anew = !prev
      ? o.source === 'runner' || o.opening === true
      : o.source === 'app'
        ? prev.state !== 'open' && o.opening === true
        : k !== null && k > prev.opens;
    if (!prev || anew) next.state = 'open';
    if (anew) {
      next.opens = Math.max((prev?.opens ?? 0) + 1, k ?? 0);
      emits.push({ what: 'opened', type: 'pr.opened', data: { pr: pr(), title: next.title, branch: next.branch } });
    } else if (!prev) next.opens = Math.max(1, k ?? 1);
  } else if (o.state === 'merged' || o.state === 'closed') {
    if (prev && k !== null && k < prev.opens) return null; // the close of an older opening
    if (!prev || prev.state === 'open' || (k !== null && k > prev.opens)) {
      next.state = o.state;
      next.opens = Math.max(prev?.opens ?? 0, k ?? 0, 1);
      emits.push({ what: o.state, type: o.state === 'merged' ? 'pr.merged' : 'pr.closed', data: { pr: pr(), title: next.title } });
    }
  } else if (!prev) next.opens = Math.max(1, k ?? 1); // checks of a pull request not seen before: it is open

  const c = o.checks;
  if (c && next.state === 'open') {
    const sha = c.sha ?? null;
    // A delivery about another commit than the head, older than the pull request's last change: stale.
    if (o.source === 'app' && sha && next.head_sha && sha !== next.head_sha && !later(c.at, next.gh_updated_at)) return emits.length ? { next, emits } : null;
    let change: 'passed' | 'failed' | 'restarted' | null = null;
    if (c.state === 'restarted' || c.state === 'pending') change = terminal(next.checks) ? 'restarted' : null;
    else if (terminal(c.state) && (c.state !== next.checks || (sha !== null && next.checks_sha !== null && sha !== next.checks_sha))) change = c.state;
    const state = c.state === 'restarted' ? 'pending' : c.state;
    if (state !== next.checks || change) next.checks_at = o.ts;
    next.checks = state;
    if (sha) next.head_sha = sha;
    next.checks_sha = sha ?? next.head_sha ?? next.checks_sha;
    if (c.summary) next.checks_summary = c.summary;
    if (change) {
      next.check_seq += 1;
      emits.push({ what: `checks.${next.check_seq}`, type: 'pr.checks_changed', data: { pr: pr(), state: change, summary: next.checks_summary } });
    }
  }
  return { next, emits };
}

/**
 * Apply one observation in `tx` (a transaction: the lock and the envelopes commit with the row). Returns
 * the catalogue events it emitted (their types); a live `fleet` notice tells the Fleet page when the row changed.
 */
export async function observe(tx: Queryable, projectId: string, o: Observation): Promise<EventType[]> {
  await tx.query(sql`select pg_advisory_xact_lock(${LOCK_CLASS}::int, hashtext(${`${projectId}#${o.number}`}))`);
  const [prev] = await tx.query<PullRow>(sql`select * from codehost_pulls where project_id = ${projectId} and number = ${o.number}`);
  const t = transition(prev ?? null, o);
  if (!t) return [];
  const n = t.next;
  const [changed] = await tx.query(sql`
    insert into codehost_pulls as p (project_id, number, state, title, url, branch, head_sha, checks, checks_sha, checks_summary, checks_at, opens, check_seq, gh_updated_at, updated_at)
    values (${projectId}, ${o.number}, ${n.state}, ${n.title}, ${n.url}, ${n.branch}, ${n.head_sha}, ${n.checks}, ${n.checks_sha}, ${n.checks_summary}, ${n.checks_at},
            ${n.opens}, ${n.check_seq}, ${n.gh_updated_at}, now())
    on conflict (project_id, number) do update set state = excluded.state, title = excluded.title, url = excluded.url, branch = excluded.branch,
           head_sha = excluded.head_sha, checks = excluded.checks, checks_sha = excluded.checks_sha, checks_summary = excluded.checks_summary,
           checks_at = excluded.checks_at, opens = excluded.opens, check_seq = excluded.check_seq, gh_updated_at = excluded.gh_updated_at, updated_at = now()
     where (p.state, p.title, p.url, p.branch, p.head_sha, p.checks, p.checks_sha, p.checks_summary, p.opens, p.check_seq, p.gh_updated_at)
           is distinct from (excluded.state, excluded.title, excluded.url, excluded.branch, excluded.head_sha, excluded.checks, excluded.checks_sha,
                             excluded.checks_summary, excluded.opens, excluded.check_seq, excluded.gh_updated_at)
    returning 1`);
  for (const e of t.emits) {
    await emitEvent(tx, {
      type: e.type,
      origin: ['codehost', projectId, String(o.number), String(n.opens), e.what],
      ts: o.ts,
      projectId,
      ...(o.slot ? { slot: o.slot } : {}),
      ...(o.issue ? { issue: o.issue } : {}),
      data: e.data,
    });
  }
  if (t.emits.some((e) => e.type === 'pr.checks_changed' && e.data.state === 'passed')) await readyForReview(tx, projectId, o.number, n);
  // A merge is audited (as the code host's, through the source that saw it): a step of the pull request's
  // record, with the checks stored here (sql/0038, record.ts).
  if (t.emits.some((e) => e.type === 'pr.merged')) {
    await appendAudit(tx, { actor: { label: `codehost:${o.source}` }, action: 'pr.merged', target: { type: 'project', id: projectId }, diff: { via: o.source, number: o.number, opens: n.opens, headSha: n.head_sha, checks: n.checks, checksSha: n.checks_sha, checksSummary: n.checks_summary } });
  }
  // A runner's pr.* event tells the page itself (events/sinks/fleet.ts); a delivery's change is told here.
  if (changed && o.source === 'app') await publish(tx, { type: 'fleet', projectId, kind: t.emits[0]?.type ?? 'pr.updated' }, { projectId });
  return t.emits.map((e) => e.type);
}

/** The branches svc's agents open pull requests from: a slot's `svc/<slot>/issue-<n>`, a run's `svc/run-<id>`. */
export const AGENT_BRANCH = /^svc\//;

/**
 * A pull request svc's agents opened is ready for review when its checks pass: `pr.ready` to the
 * project's admins, with an Approve action link (functions/act/), once per passing result (check_seq).
 */
async function readyForReview(tx: Queryable, projectId: string, number: number, n: PullRow): Promise<void> {
  if (n.state !== 'open' || !n.branch || !AGENT_BRANCH.test(n.branch)) return;
  await notify(tx, {
    kind: 'pr.ready',
    projectId,
    data: { pr: { number, ...(n.url ? { url: n.url } : {}) }, title: n.title, branch: n.branch, checks: n.checks_summary },
    dedupeKey: `pr.ready:${projectId}:${number}:${n.opens}:${n.check_seq}`,
    actions: [{ kind: 'pr.approve', target: { projectId, number } }],
  });
}

const RUNNER_PR_KINDS: Record<string, PullState | null> = { 'pr.opened': 'open', 'pr.merged': 'merged', 'pr.closed': 'closed', 'pr.checks_changed': null };
export const PR_KINDS = Object.keys(RUNNER_PR_KINDS);

const str = (v: unknown) => (typeof v === 'string' && v ? v : null);

/** A runner's pr.* event → an observation (null: not one of a pull request). */
export function runnerObservation(e: { id: string; kind: string; ts: string; payload: Record<string, unknown> }, projectId: string): Observation | null {
  if (!(e.kind in RUNNER_PR_KINDS)) return null;
  const d = (e.payload.data ?? {}) as Record<string, unknown>;
  const p = (d.pr ?? {}) as { number?: unknown; url?: unknown };
  if (!Number.isSafeInteger(p.number) || (p.number as number) <= 0 || (p.number as number) > 2 ** 31 - 1) return null;
  const number = p.number as number;
  // The poll's ids: gh.<project>.<number>.<opens>.<what> (runner/codehost/changes.ts).
  const own = e.id.startsWith(`gh.${projectId}.${number}.`) ? /^(\d{1,9})\./.exec(e.id.slice(`gh.${projectId}.${number}.`.length)) : null;
  const state = RUNNER_PR_KINDS[e.kind];
  const checks = e.kind === 'pr.checks_changed' && ['passed', 'failed', 'restarted', 'pending'].includes(String(d.state)) ? { state: d.state as ChecksSeen, summary: str(d.summary), sha: typeof d.sha === 'string' && /^[0-9a-f]{40}$/.test(d.sha) ? d.sha : null } : undefined;
  if (e.kind === 'pr.checks_changed' && !checks) return null;
  const ts = new Date(e.ts);
  return {
    source: 'runner',
    number,
    ...(state ? { state } : {}),
    title: str(d.title),
    url: str(p.url),
    branch: str(d.branch),
    runnerOpens: own ? Number(own[1]) : null,
    ...(checks ? { checks } : {}),
    ts: Number.isNaN(ts.getTime()) ? new Date() : ts,
    ...(typeof e.payload.slot === 'string' ? { slot: e.payload.slot } : {}),
    ...(Number.isSafeInteger(e.payload.issue) ? { issue: e.payload.issue as number } : {}),
  };
}
