// pr.approve / pr.requestChanges / pr.voidApproval (spec: Server commands to a runner;
// docs/orchestrator.md "Pull request decisions"): a person's decision on a pull request is a signal
// file `.svc/pr/<number>.json` in the project root, written atomically (temp file + rename), which the
// orchestrator reads before it merges or sends the worker back. voidApproval removes it.
// On a GitLab project (issue 42) an approval is first given on GitLab (its approval rules apply): when
// GitLab refuses, the command fails with GitLab's reason and no signal is written.
import { readFileSync, realpathSync, unlinkSync } from 'node:fs';
import type { CommandArgs } from '../../protocol/commands.ts';
import { writeFileAtomic } from '../config.ts';
import { confined, prSignalPath, projectOf } from '../fleet-paths.ts';
import { codeHostOf, issueList, issueView, mapped, prInspect, prList, project as hosted } from './codehost.ts';
import type { CommandContext } from './context.ts';
import { CommandError } from '../errors.ts';
import type { LocalAnswer, LocalRequest } from '../local.ts';
import { openRunPull } from '../codehost/publish.ts';

async function decide(projectId: string, pr: number, decision: 'approve' | 'request_changes', comment: string | undefined, ctx: CommandContext) {
  const project = await projectOf(ctx, projectId);
  const file = await confined(project, prSignalPath(project.root, pr));
  const signal = { v: 1, pr, decision, ...(comment ? { comment } : {}), time: new Date().toISOString() };
  writeFileAtomic(file, JSON.stringify(signal, null, 2) + '\n');
  return { pr, decision, written: true };
}

export async function prApprove(args: CommandArgs<'pr.approve'>, ctx: CommandContext) {
  const entry = ctx.projects().find((p) => p.id === args.projectId);
  if (entry?.host) {
    const p = hosted(ctx, args.projectId);
    const approve = codeHostOf(ctx).adapter(p).approve;
    if (approve) await mapped(() => approve(p.repo, args.number));
  }
  return decide(args.projectId, args.number, 'approve', args.comment, ctx);
}

export const prRequestChanges = (args: CommandArgs<'pr.requestChanges'>, ctx: CommandContext) =>
  decide(args.projectId, args.number, 'request_changes', args.comment, ctx);

export async function prVoidApproval(args: CommandArgs<'pr.voidApproval'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const file = await confined(project, prSignalPath(project.root, args.number));
  try {
    unlinkSync(file);
    return { pr: args.number, removed: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return { pr: args.number, removed: false };
  }
}

/** pr.describe: the cost block of the pull request's description (docs/cost.md), on GitHub or GitLab. */
export async function prDescribe(args: CommandArgs<'pr.describe'>, ctx: CommandContext) {
  const p = hosted(ctx, args.projectId);
  const r = await mapped(() => codeHostOf(ctx).adapter(p).describe(p.repo, args.number, args.block));
  if (!r) throw new CommandError('not_found', `pull request ${args.number} of ${p.repo} does not exist`);
  return { pr: args.number, ...r };
}

/** The orchestrator's merge step (`svc-runner pr-merge <N>`, docs/orchestrator.md): only while
 *  `.svc/pr/<N>.json` says `approve`, through the project's code host's API (GitLab's `PUT …/merge`,
 *  GitHub's squash merge and the head branch deleted), so the host's approval rules and branch
 *  protection apply; when the host refuses, the error is its reason and nothing is merged. */
export async function prMerge(args: { projectId: string; number: number }, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const file = await confined(project, prSignalPath(project.root, args.number));
  let decision: unknown = null;
  try {
    decision = (JSON.parse(readFileSync(file, 'utf8')) as { decision?: unknown }).decision;
  } catch {
    decision = null;
  }
  const p = hosted(ctx, args.projectId);
  const name = p.host ? `merge request !${args.number}` : `pull request #${args.number}`;
  if (decision !== 'approve') throw new CommandError('not_approved', `${name} is not approved in svc (.svc/pr/${args.number}.json does not say approve)`);
  const merge = codeHostOf(ctx).adapter(p).merge;
  if (!merge) throw new CommandError('not_supported', `project ${args.projectId}'s code host cannot merge through the runner`);
  const r = await mapped(() => merge(p.repo, args.number));
  if (!r.merged) throw new CommandError('not_merged', `${name} was not merged (the code host answered without merging it)`);
  return { pr: args.number, ...r };
}

/** A request of the daemon's local channel (runner/local.ts): `svc-runner pr-merge`, `pr-create` or a read
 *  (`issue-list`, `issue-view`, `pr-list`, `pr-view`). The
 *  project is the primary watch-list entry whose root is the request's (the same directory, links resolved). */
export async function localRequestHandler(req: LocalRequest, ctx: CommandContext): Promise<LocalAnswer> {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  const root = real(req.root);
  const entry = ctx.projects().find((p) => !p.pool && p.root && real(p.root) === root);
  if (!entry) return { ok: false, code: 'unknown_project', message: `${req.root} is not a project on this runner's watch list` };
  try {
    switch (req.op) {
      case 'pr.merge':
        return { ok: true, result: await prMerge({ projectId: entry.id, number: req.number }, ctx) };
      case 'pr.create':
        return await prCreate(entry.id, real(entry.root!), req, ctx);
      case 'issue.list':
        return { ok: true, result: await issueList(entry.id, ctx) };
      case 'pr.list':
        return { ok: true, result: await prList(entry.id, ctx) };
      case 'issue.view':
        return { ok: true, result: await issueView(entry.id, req.number, ctx) };
      case 'pr.view':
        return { ok: true, result: await prInspect({ projectId: entry.id, number: req.number }, ctx) };
    }
  } catch (e) {
    if (e instanceof CommandError) return { ok: false, code: e.code, message: e.message };
    throw e;
  }
}

/**
 * `svc-runner pr-create` (a slot's worker, skills/svc-worker step 4): push the branch to `origin` with the
 * project's code-host token (the server's for a GitLab project or in App mode, else the runner's), then
 * open the pull or merge request against the default branch, or answer the one already open from it —
 * the same steps as a skill run's pull request (codehost/publish.ts), for GitHub and GitLab alike.
 */
async function prCreate(projectId: string, root: string, req: Extract<LocalRequest, { op: 'pr.create' }>, ctx: CommandContext): Promise<LocalAnswer> {
  const p = hosted(ctx, projectId);
  const host = codeHostOf(ctx);
  const link = await openRunPull(host.adapter(p), p.host ? host.gitlabTokens : host.tokens, { root, repo: p.repo, branch: req.branch, runId: '', skill: '', profile: undefined, report: null, text: { title: req.title, body: req.body } });
  if (link.openError || !link.number) return { ok: false, code: 'not_opened', message: link.openError ?? 'the code host answered without a number' };
  return { ok: true, result: { pr: link.number, url: link.url ?? null, branch: req.branch } };
}
