// pr.approve / pr.requestChanges / pr.voidApproval (spec: Server commands to a runner;
// docs/orchestrator.md "Pull request decisions"): a person's decision on a pull request is a signal
// file `.svc/pr/<number>.json` in the project root, written atomically (temp file + rename), which the
// orchestrator reads before it merges or sends the worker back. voidApproval removes it.
// On a GitLab project (issue 42) an approval is first given on GitLab (its approval rules apply): when
// GitLab refuses, the command fails with GitLab's reason and no signal is written.
import { readFileSync, unlinkSync } from 'node:fs';
import type { CommandArgs } from '../../protocol/commands.ts';
import { writeFileAtomic } from '../config.ts';
import { confined, prSignalPath, projectOf } from '../fleet-paths.ts';
import { codeHostOf, mapped, project as hosted } from './codehost.ts';
import type { CommandContext } from './context.ts';
import { CommandError } from '../errors.ts';

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

/** The orchestrator's merge step for a GitLab project (docs/gitlab.md): only while `.svc/pr/<N>.json`
 *  says `approve`, through GitLab's API (`PUT …/merge`), so the project's approval rules apply; when
 *  GitLab refuses, the error is GitLab's reason and nothing is merged. GitHub projects merge with `gh`. */
export async function prMerge(args: { projectId: string; number: number }, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const file = await confined(project, prSignalPath(project.root, args.number));
  let decision: unknown = null;
  try {
    decision = (JSON.parse(readFileSync(file, 'utf8')) as { decision?: unknown }).decision;
  } catch {
    decision = null;
  }
  if (decision !== 'approve') throw new CommandError('not_approved', `merge request !${args.number} is not approved in svc (.svc/pr/${args.number}.json does not say approve)`);
  const p = hosted(ctx, args.projectId);
  const merge = p.host ? codeHostOf(ctx).adapter(p).merge : undefined;
  if (!merge) throw new CommandError('not_supported', `project ${args.projectId} is on GitHub: merge with gh pr merge ${args.number}`);
  const r = await mapped(() => merge(p.repo, args.number));
  return { pr: args.number, ...r };
}
