// The actions a link may name (issue #40 part 2; docs/notifications.md, "Action links"): a small
// registry, one entry per kind — its target's schema, the role it needs on the target's project (checked
// when the link is used, never when it was made), how to describe it and how to perform it. A new kind
// (issue #40 part 1's "raise the cap", "stop this issue") is one more entry here.
import * as z from 'zod';
import type { Role } from '../lib/context.ts';
import type { AppContext, Principal } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { sql } from '../lib/db/index.ts';
import { HttpError, notFound } from '../lib/errors.ts';
import { costReport } from '../cost/queries.ts';
import { costQuery } from '../cost/schema.ts';
import { projectRunner } from '../runners/queries.ts';
import { sendCommandAs } from '../runners/routes.ts';
import { sendSkillRun } from '../runs/launch.ts';
import { runRow } from '../runs/queries.ts';
import { ACTION_LABELS } from './tokens.ts';

export interface Described {
  /** What the button does, in a few words. */
  title: string;
  /** What will happen, one sentence. */
  summary: string;
  projectId: string;
  /** The facts shown (title, checks, cost, diff size, …), as read now. */
  facts: Record<string, unknown>;
  /** Where the facts come from: the runner now, or the server's stored state (runner offline). */
  source: 'runner' | 'stored';
  note: string | null;
}

export interface Performed {
  outcome: string;
  data: Record<string, unknown>;
}

export interface ActionKind<T> {
  kind: string;
  /** The button's words in chat and in the notification list. */
  label: string;
  target: z.ZodType<T>;
  role: Role;
  /** The project the target belongs to; undefined when the target does not exist. */
  projectOf(db: Queryable, target: T): Promise<string | undefined>;
  describe(ctx: AppContext, principal: Principal, target: T, projectId: string): Promise<Described>;
  perform(ctx: AppContext, principal: Principal, target: T, projectId: string): Promise<Performed>;
}

const projectId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/);
const prTarget = z.strictObject({ projectId, number: z.number().int().min(1).max(2 ** 31 - 1) });
type PrTarget = z.output<typeof prTarget>;

/** A command's outcome other than done, as the commands API words it. */
function commandRefused(name: string, outcome: { status: string; error?: { code: string; message: string } }): never {
  if (outcome.status === 'offline') throw new HttpError(503, 'runner_offline', `the runner is offline; ${name} was not sent`);
  if (outcome.status === 'timeout') throw new HttpError(504, 'command_timeout', `${name} got no answer`);
  throw new HttpError(502, 'command_failed', `the runner refused ${name}: ${outcome.error?.code ?? 'error'}: ${outcome.error?.message ?? ''}`);
}

/** The project a target names by id, when it exists. */
async function projectNamed(db: Queryable, t: { projectId: string }): Promise<string | undefined> {
  const [row] = await db.query<{ id: string }>(sql`select id from projects where id = ${t.projectId}`);
  return row?.id;
}

const prApprove: ActionKind<PrTarget> = {
  kind: 'pr.approve',
  label: ACTION_LABELS['pr.approve'],
  target: prTarget,
  role: 'operator',
  projectOf: projectNamed,
  async describe(ctx, principal, t) {
    const [pull] = await ctx.db.query<{ title: string | null; url: string | null; state: string; checks: string; checks_summary: string | null }>(sql`
      select title, url, state, checks, checks_summary from codehost_pulls where project_id = ${t.projectId} and number = ${t.number}`);
    const { rows } = await costReport(ctx.db, principal, costQuery.parse({ groupBy: 'pull_request', projectId: t.projectId }));
    const cost = rows.find((r) => String(r.key) === String(t.number));
    const stored = { title: pull?.title ?? null, url: pull?.url ?? null, state: pull?.state ?? null, checks: pull?.checks ?? null, checksSummary: pull?.checks_summary ?? null, costUsd: cost ? Number(cost.cost_usd) : 0 };
    const base = { title: `Approve pull request #${t.number}`, summary: `Approves pull request #${t.number} on the code host, as you.`, projectId: t.projectId };
    const runner = await projectRunner(ctx.db, t.projectId);
    const outcome = runner ? await ctx.hub.command(runner, 'pr.inspect', { projectId: t.projectId, number: t.number }, principal.user.id) : { status: 'offline' as const };
    if (outcome.status !== 'done') {
      const why = outcome.status === 'offline' ? "the project's runner is offline" : outcome.status === 'timeout' ? 'the runner did not answer' : 'the runner could not read the pull request';
      return { ...base, facts: stored, source: 'stored', note: `${why}: shown as svc last saw it` };
    }
    const d = (outcome.data ?? {}) as { title?: string; url?: string; state?: string; additions?: number; deletions?: number; files?: unknown[]; checks?: { state?: string; summary?: string } };
    const facts = { ...stored, title: d.title ?? stored.title, url: d.url ?? stored.url, state: d.state ?? stored.state, checks: d.checks?.state ?? stored.checks, checksSummary: d.checks?.summary ?? stored.checksSummary, additions: d.additions ?? null, deletions: d.deletions ?? null, files: Array.isArray(d.files) ? d.files.length : null };
    return { ...base, facts, source: 'runner', note: null };
  },
  async perform(ctx, principal, t) {
    const runner = await projectRunner(ctx.db, t.projectId);
    if (!runner) throw new HttpError(409, 'no_runner', 'this project has no runner');
    const outcome = await sendCommandAs(ctx, principal, runner, 'pr.approve', { projectId: t.projectId, number: t.number });
    if (outcome.status !== 'done') commandRefused('pr.approve', outcome);
    return { outcome: `Pull request #${t.number} approved`, data: { number: t.number } };
  },
};

const runTarget = z.strictObject({ runId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });
type RunTarget = z.output<typeof runTarget>;

const runRetry: ActionKind<RunTarget> = {
  kind: 'run.retry',
  label: ACTION_LABELS['run.retry'],
  target: runTarget,
  role: 'operator',
  async projectOf(db, t) {
    return (await runRow(db, t.runId))?.project_id;
  },
  async describe(ctx, _principal, t, pid) {
    const r = (await runRow(ctx.db, t.runId))!;
    const facts = { runId: r.id, skill: r.skill, args: r.args, state: r.state, error: r.error, output: r.output };
    return { title: `Run ${r.skill} again`, summary: `Starts a new run of skill ${r.skill} with the same arguments on the project's runner, as you.`, projectId: pid, facts, source: 'stored', note: null };
  },
  async perform(ctx, principal, t, pid) {
    const r = (await runRow(ctx.db, t.runId))!;
    const sent = await sendSkillRun(ctx.hub, (await projectRunner(ctx.db, pid)) ?? null, { projectId: pid, skill: r.skill, args: r.args, profile: r.profile_id, model: r.model, output: r.output }, principal.user.id);
    if (sent.status !== 'fired') throw new HttpError(sent.reason === 'runner_offline' ? 503 : 502, sent.reason ?? 'command_refused', sent.detail ?? 'the run did not start');
    return { outcome: sent.runId ? `Run ${sent.runId} started` : 'The run started', data: { runId: sent.runId ?? null, retryOf: r.id } };
  },
};

// A reached cap (functions/cost/caps.ts; docs/cost.md "Caps"): `pause` is the pause the notification
// was made for, so a link of an earlier pause cannot act on a later one.
const capTarget = z.strictObject({ projectId, issue: z.number().int().min(1).max(2 ** 31 - 1), pause: z.number().int().min(1), by: z.number().positive().optional() });
type CapTarget = z.output<typeof capTarget>;

async function pausedIssue(db: Queryable, t: CapTarget) {
  const [row] = await db.query<{ state: string; pauses: number; slot: string | null; runner_id: string | null; paused_cost_usd: string | null; paused_cap_usd: string | null; extra_usd: string }>(sql`
    select state, pauses, slot, runner_id, paused_cost_usd, paused_cap_usd, extra_usd from unit_caps where project_id = ${t.projectId} and unit = 'issue' and key = ${String(t.issue)}`);
  return row;
}
const capFacts = (row: Awaited<ReturnType<typeof pausedIssue>>, t: CapTarget) => ({
  issue: t.issue, slot: row?.slot ?? null, state: row?.state ?? null, costUsd: row?.paused_cost_usd == null ? null : Number(row.paused_cost_usd), capUsd: row?.paused_cap_usd == null ? null : Number(row.paused_cap_usd),
});
/** The issue is still paused by this very pause; else 409 (decided already, or paused again since). */
function stillPaused(row: Awaited<ReturnType<typeof pausedIssue>>, t: CapTarget) {
  if (!row || row.state !== 'paused_cap' || row.pauses !== t.pause) throw new HttpError(409, 'not_paused', `issue #${t.issue} is not paused by this cap any more${row ? ` (it is ${row.state === 'paused_cap' ? 'paused again' : row.state})` : ''}`);
  return row;
}

const capRaise: ActionKind<CapTarget> = {
  kind: 'cap.raise',
  label: ACTION_LABELS['cap.raise'],
  target: capTarget,
  role: 'admin',
  projectOf: projectNamed,
  async describe(ctx, _principal, t, pid) {
    const row = await pausedIssue(ctx.db, t);
    const by = t.by ?? 0;
    return { title: `Raise the cap of issue #${t.issue} by $${by.toFixed(2)} and continue`, summary: `Raises this issue's cap by $${by.toFixed(2)} and starts its worker again in the same worktree.`, projectId: pid, facts: { ...capFacts(row, t), raiseByUsd: by }, source: 'stored', note: null };
  },
  async perform(ctx, principal, t, pid) {
    const row = stillPaused(await pausedIssue(ctx.db, t), t);
    const [p] = await ctx.db.query<{ cap_issue_usd: string | null; runner_id: string | null }>(sql`select cap_issue_usd, runner_id from projects where id = ${pid}`);
    const by = t.by ?? Number(p?.cap_issue_usd ?? 0);
    const runner = row.runner_id ?? p?.runner_id ?? null;
    if (!row.slot || !runner) throw new HttpError(409, 'no_slot', `issue #${t.issue} has no known slot or runner to continue in`);
    const outcome = await sendCommandAs(ctx, principal, runner, 'slot.resume', { projectId: pid, slot: row.slot, issue: t.issue });
    if (outcome.status !== 'done') commandRefused('slot.resume', outcome);
    const [after] = await ctx.db.query<{ extra_usd: string }>(sql`
      update unit_caps set extra_usd = extra_usd + ${by}, state = 'active', paused_at = null, updated_at = now()
       where project_id = ${pid} and unit = 'issue' and key = ${String(t.issue)} and state = 'paused_cap' and pauses = ${t.pause} returning extra_usd`);
    if (!after) throw new HttpError(409, 'not_paused', `issue #${t.issue} changed meanwhile`);
    const base = Number(p?.cap_issue_usd ?? 0);
    return { outcome: `Issue #${t.issue} continues with a cap of $${(base + Number(after.extra_usd)).toFixed(2)}`, data: { issue: t.issue, slot: row.slot, raisedByUsd: by, capUsd: base + Number(after.extra_usd) } };
  },
};

const capStop: ActionKind<CapTarget> = {
  kind: 'cap.stop',
  label: ACTION_LABELS['cap.stop'],
  target: capTarget,
  role: 'admin',
  projectOf: projectNamed,
  async describe(ctx, _principal, t, pid) {
    const row = await pausedIssue(ctx.db, t);
    return { title: `Stop issue #${t.issue}`, summary: 'Ends the work on this issue: its worker stays stopped and the orchestrator does not dispatch it again (its worktree and branch are kept).', projectId: pid, facts: capFacts(row, t), source: 'stored', note: null };
  },
  async perform(ctx, _principal, t, pid) {
    stillPaused(await pausedIssue(ctx.db, t), t);
    // The runner's hold (written with the pause's slot.stop) stays: slot-start keeps refusing the issue.
    const [done] = await ctx.db.query(sql`
      update unit_caps set state = 'stopped', updated_at = now()
       where project_id = ${pid} and unit = 'issue' and key = ${String(t.issue)} and state = 'paused_cap' and pauses = ${t.pause} returning 1`);
    if (!done) throw new HttpError(409, 'not_paused', `issue #${t.issue} changed meanwhile`);
    return { outcome: `Issue #${t.issue} stopped`, data: { issue: t.issue } };
  },
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const REGISTRY: Record<string, ActionKind<any>> = { [prApprove.kind]: prApprove, [runRetry.kind]: runRetry, [capRaise.kind]: capRaise, [capStop.kind]: capStop };

export function actionKind(kind: string): ActionKind<unknown> {
  const k = Object.hasOwn(REGISTRY, kind) ? REGISTRY[kind] : undefined;
  if (!k) throw notFound('no such action link');
  return k;
}
