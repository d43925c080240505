// A record per pull request (issue #40 part 3; docs/orchestrator.md, "A record per pull request"):
// GET /api/projects/:projectId/pulls/:number/record. What it holds and where each part comes from:
//   - the pull request: the server's state of it (codehost_pulls, pulls.ts); a number svc never saw is 404;
//   - its issue: the slot branch's `svc/<slot>/issue-<n>`, else the issue its sessions were attributed to;
//     title and url from the issue queue (codehost_issues) when it has them;
//   - sessions, runs, cost and tokens: the LLM requests attributed to it as GET /api/cost?groupBy=pull_request
//     attributes them (docs/cost.md, "Attribution"): a request whose run's branch — else its session's — is
//     the pull request's branch; each session and run with the sums of its requests, and the sums of all;
//   - approvals and the merge: pull_steps (sql/0038), written with their audit record, the checks as the
//     server knew them at that moment, and the audit record itself (seq, prevHash, hash), so anyone with
//     the audit log can check that the chain holds that record at that place (functions/audit/verify.ts).
import type { PullRecord, PullStep } from '../../protocol/api/pull-record.ts';
import { toRecord } from '../audit/audit.ts';
import type { AuditRow } from '../audit/audit.ts';
import { TOTALS, totals } from '../cost/queries.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable, Sql } from '../lib/db/index.ts';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const SLOT_BRANCH = /^svc\/[^/]+\/issue-(\d{1,9})$/;

interface PullRow {
  state: 'open' | 'merged' | 'closed';
  title: string | null;
  url: string | null;
  branch: string | null;
  checks: 'none' | 'pending' | 'passed' | 'failed';
  checks_sha: string | null;
  checks_summary: string | null;
  checks_at: Date | null;
}

type StepRow = AuditRow & {
  step: 'approved' | 'merged';
  via: string;
  user_id: string | null;
  user_name: string | null;
  step_actor: string;
  step_at: Date;
  head_sha: string | null;
  checks: PullRow['checks'] | null;
  checks_sha: string | null;
  checks_summary: string | null;
  checks_at: Date | null;
};

/** The requests attributed to the pull request of `branch` (alias `req`; `sid` its session, `rid` its run). */
const requestsOf = (projectId: string, branch: string | null): Sql => sql`
  with req as (
    select r.*, s.id as sid, sr.id as rid from llm_requests r
      left join agent_sessions s on s.runner_id = r.runner_id and s.runtime = r.runtime and s.session_id = r.session_id
      left join skill_runs sr on sr.id = coalesce(r.run_id, s.run_id) and sr.project_id = r.project_id
     where r.project_id = ${projectId} and coalesce(sr.branch, s.branch) = ${branch})`;

const toStep = (r: StepRow): PullStep => ({
  step: r.step,
  via: r.via,
  at: iso(r.step_at)!,
  userId: r.user_id,
  userName: r.user_name,
  actorLabel: r.step_actor,
  headSha: r.head_sha,
  checks: { state: r.checks, summary: r.checks_summary, sha: r.checks_sha, at: iso(r.checks_at) },
  audit: toRecord(r),
});

/** The record, or null when svc has never seen pull request `number` in this project. */
export async function pullRecord(db: Queryable, projectId: string, number: number, now: Date): Promise<PullRecord | null> {
  const [pull] = await db.query<PullRow>(sql`select * from codehost_pulls where project_id = ${projectId} and number = ${number}`);
  if (!pull) return null;
  const req = requestsOf(projectId, pull.branch);
  const sessions = await db.query<Record<string, any>>(sql`${req}
    select s.*, agg.* from agent_sessions s
      left join lateral (select ${TOTALS} from req r where r.sid = s.id) agg on true
     where s.id in (select sid from req) or (s.project_id = ${projectId} and s.branch = ${pull.branch})
     order by s.first_at, s.id`);
  const runs = await db.query<Record<string, any>>(sql`${req}
    select sr.id, sr.skill, sr.state, sr.branch, sr.created_at, sr.finished_at, sr.cost_usd as runtime_cost_usd, agg.* from skill_runs sr
      left join lateral (select ${TOTALS} from req r where r.rid = sr.id) agg on true
     where sr.project_id = ${projectId} and (sr.branch = ${pull.branch} or sr.id in (select rid from req))
     order by sr.created_at, sr.id`);
  const [all] = await db.query<Record<string, unknown>>(sql`${req} select ${TOTALS} from req r`);
  const steps = await db.query<StepRow>(sql`
    select ps.step, ps.via, ps.user_id, u.name as user_name, ps.actor_label as step_actor, ps.at as step_at, ps.head_sha, ps.checks, ps.checks_sha,
           ps.checks_summary, ps.checks_at, a.*
      from pull_steps ps join audit_records a on a.seq = ps.audit_seq left join users u on u.id = ps.user_id
     where ps.project_id = ${projectId} and ps.number = ${number} order by ps.audit_seq`);
  const issueNumber = Number(SLOT_BRANCH.exec(pull.branch ?? '')?.[1] ?? sessions.find((s) => /^\d{1,9}$/.test(s.issue ?? ''))?.issue ?? NaN);
  const [issue] = Number.isSafeInteger(issueNumber)
    ? await db.query<{ title: string; url: string }>(sql`select title, url from codehost_issues where project_id = ${projectId} and number = ${issueNumber}`)
    : [];
  const [head] = await db.query<{ seq: string; hash: string }>(sql`select a.seq::text as seq, a.hash from audit_records a order by a.seq desc limit 1`);
  const merges = steps.filter((s) => s.step === 'merged');
  return {
    projectId,
    number,
    title: pull.title,
    url: pull.url,
    branch: pull.branch,
    state: pull.state,
    checks: { state: pull.checks, summary: pull.checks_summary, sha: pull.checks_sha, at: iso(pull.checks_at) },
    issue: Number.isSafeInteger(issueNumber) ? { number: issueNumber, title: issue?.title ?? null, url: issue?.url ?? null } : null,
    sessions: sessions.map((s) => ({
      id: s.id,
      runtime: s.runtime,
      sessionId: s.session_id,
      slot: s.slot,
      issue: s.issue,
      runId: s.run_id,
      branch: s.branch,
      models: s.models,
      firstAt: iso(s.first_at)!,
      lastAt: iso(s.last_at)!,
      ...totals(s),
    })),
    runs: runs.map((r) => ({ id: r.id, skill: r.skill, state: r.state, branch: r.branch, createdAt: iso(r.created_at)!, finishedAt: iso(r.finished_at), runtimeCostUsd: n(r.runtime_cost_usd), ...totals(r) })),
    totals: totals(all ?? {}),
    approvals: steps.filter((s) => s.step === 'approved').map(toStep),
    merge: merges.length ? toStep(merges[merges.length - 1]) : null,
    auditHead: head ? { seq: Number(head.seq), hash: head.hash } : null,
    generatedAt: now.toISOString(),
  };
}
