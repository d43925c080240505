// The code-host commands (spec: Server commands to a runner): issues.refresh (poll the queue now),
// collector.poll (poll queue and pull requests of one project or all now — the server sends it when a
// code-host app webhook arrives), issue.create {title, body, labels?} → {number, url}, and pr.inspect
// (files with additions/deletions — every page —, checks, reviews, mergeability) for the approval view.
// They use the daemon's client (one rate-limit state for the machine); requests a person asked for go
// out during a failure backoff but never past a spent rate limit (error `rate_limited`).
import type { CommandArgs } from '../../protocol/commands.ts';
import type { ProjectEntry } from '../config.ts';
import { CodeHostError } from '../codehost/client.ts';
import { checksSummary } from '../codehost/changes.ts';
import { overall } from '../codehost/github.ts';
import { CodeHost } from '../codehost/poller.ts';
import type { HostedProject } from '../codehost/poller.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';

/** The daemon's code host, or one for this command alone (no daemon: tests, one-off use). */
function host(ctx: CommandContext): CodeHost {
  return ctx.codehost ?? new CodeHost({ config: ctx.config, env: ctx.env, projects: ctx.projects, append: () => {} });
}

export function project(ctx: CommandContext, projectId: string): HostedProject {
  const p: ProjectEntry | undefined = ctx.projects().find((x) => x.id === projectId);
  if (!p) throw new CommandError('unknown_project', `project ${projectId} is not on this runner's watch list`);
  if (p.host) return { ...p, repo: p.host.path };
  if (!p.repo) throw new CommandError('no_repo', `project ${projectId} has no code-host repository on this runner's watch list (the server sends it to runners that announce the codehost capability)`);
  return p as HostedProject;
}

/** Code-host failures keep their code (rate_limited, no_token, …); an HTTP refusal says its status. */
export async function mapped<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof CodeHostError) throw new CommandError(e.code === 'http' ? `codehost_${e.status ?? 'failed'}` : e.code, e.message);
    throw e;
  }
}

export async function issuesRefresh(args: CommandArgs<'issues.refresh'>, ctx: CommandContext) {
  project(ctx, args.projectId);
  const [r] = await mapped(() => host(ctx).pollQueue(args.projectId, true));
  return r;
}

export async function collectorPoll(args: CommandArgs<'collector.poll'>, ctx: CommandContext) {
  if (args.projectId) project(ctx, args.projectId);
  const h = host(ctx);
  const [queue, pulls] = await mapped(() => Promise.all([h.pollQueue(args.projectId, true), h.pollPulls(args.projectId, true)]));
  return { projects: queue.map((q, i) => ({ projectId: q.projectId, issues: q.count, pullRequests: pulls[i]?.open ?? 0, events: pulls[i]?.events ?? [] })) };
}

export async function issueCreate(args: CommandArgs<'issue.create'>, ctx: CommandContext) {
  const p = project(ctx, args.projectId);
  return mapped(() => host(ctx).adapter(p).createIssue(p.repo, { title: args.title, body: args.body, ...(args.labels?.length ? { labels: args.labels } : {}) }));
}

export async function prInspect(args: CommandArgs<'pr.inspect'>, ctx: CommandContext) {
  const p = project(ctx, args.projectId);
  const h = host(ctx).adapter(p);
  return mapped(async () => {
    const pr = await h.inspect(p.repo, args.number, { urgent: true });
    if (!pr) throw new CommandError('not_found', `${h.kind === 'gitlab' ? 'merge request !' : 'pull request #'}${args.number} of ${p.repo} does not exist`);
    return {
      number: pr.number,
      title: pr.title,
      url: pr.url,
      state: pr.state,
      draft: pr.draft,
      branch: pr.branch,
      base: pr.base,
      head: pr.sha,
      mergeable: pr.mergeable,
      mergeableState: pr.mergeableState,
      files: pr.files,
      filesComplete: pr.filesComplete,
      additions: pr.additions,
      deletions: pr.deletions,
      checks: { state: overall(pr.checks), summary: checksSummary(pr.checks), items: pr.checks },
      reviews: pr.reviews,
    };
  });
}

/** `svc-runner issue-list`: the project's open issues (its queue), read now: the queue's poll, so a
 *  change is also reported as the timed poll would. */
export async function issueList(projectId: string, ctx: CommandContext) {
  const r = await issuesRefresh({ projectId }, ctx);
  return { repo: r?.repo ?? project(ctx, projectId).repo, issues: r?.issues ?? [] };
}

/** `svc-runner pr-list`: the open pull (merge) requests with their head commits' checks, read now (the
 *  pull requests' poll: what changed is reported as pr.* events, as the timed poll would). */
export async function prList(projectId: string, ctx: CommandContext) {
  const p = project(ctx, projectId);
  const [r] = await mapped(() => host(ctx).pollPulls(projectId, true));
  return {
    repo: p.repo,
    pulls: (r?.pulls ?? []).map((pr) => ({ number: pr.number, title: pr.title, branch: pr.branch, url: pr.url, head: pr.sha, checks: { state: overall(pr.checks), summary: checksSummary(pr.checks), items: pr.checks } })),
  };
}

/** `svc-runner issue-view <N>`: one issue, its text and comments (a worker's first step). */
export async function issueView(projectId: string, n: number, ctx: CommandContext) {
  const p = project(ctx, projectId);
  const h = host(ctx).adapter(p);
  const issue = await mapped(() => h.issue(p.repo, n, { urgent: true }));
  if (!issue) throw new CommandError('not_found', `issue #${n} of ${p.repo} does not exist`);
  return issue;
}

/** The daemon's code host (or one for this command), for pr.ts. */
export { host as codeHostOf };
