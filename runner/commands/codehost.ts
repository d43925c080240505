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
import { checksOf, createIssue, overall, pull, pullFiles, pullReviews } from '../codehost/github.ts';
import { CodeHost } from '../codehost/poller.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';

/** The daemon's code host, or one for this command alone (no daemon: tests, one-off use). */
function host(ctx: CommandContext): CodeHost {
  return ctx.codehost ?? new CodeHost({ config: ctx.config, env: ctx.env, projects: ctx.projects, append: () => {} });
}

function project(ctx: CommandContext, projectId: string): ProjectEntry & { repo: string } {
  const p = ctx.projects().find((x) => x.id === projectId);
  if (!p) throw new CommandError('unknown_project', `project ${projectId} is not on this runner's watch list`);
  if (!p.repo) throw new CommandError('no_repo', `project ${projectId} has no code-host repository on this runner's watch list (the server sends it to runners that announce the codehost capability)`);
  return p as ProjectEntry & { repo: string };
}

/** Code-host failures keep their code (rate_limited, no_token, …); an HTTP refusal says its status. */
async function mapped<T>(work: () => Promise<T>): Promise<T> {
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
  return mapped(() => createIssue(host(ctx).client, p.repo, { title: args.title, body: args.body, ...(args.labels?.length ? { labels: args.labels } : {}) }));
}

export async function prInspect(args: CommandArgs<'pr.inspect'>, ctx: CommandContext) {
  const p = project(ctx, args.projectId);
  const c = host(ctx).client;
  return mapped(async () => {
    const pr = await pull(c, p.repo, args.number, { urgent: true });
    if (!pr) throw new CommandError('not_found', `pull request #${args.number} of ${p.repo} does not exist`);
    const [files, reviews, checks] = [await pullFiles(c, p.repo, args.number), await pullReviews(c, p.repo, args.number), await checksOf(c, p.repo, pr.head.sha, { urgent: true })];
    return {
      number: pr.number,
      title: pr.title,
      url: pr.html_url,
      state: pr.merged || pr.merged_at ? 'merged' : pr.state,
      draft: pr.draft ?? false,
      branch: pr.head.ref,
      base: pr.base.ref,
      head: pr.head.sha,
      mergeable: pr.mergeable ?? null,
      mergeableState: pr.mergeable_state ?? null,
      files: files.items.map((f) => ({ path: f.filename, status: f.status, additions: f.additions, deletions: f.deletions })),
      filesComplete: files.complete,
      additions: files.items.reduce((n, f) => n + f.additions, 0),
      deletions: files.items.reduce((n, f) => n + f.deletions, 0),
      checks: { state: overall(checks), summary: checksSummary(checks), items: checks },
      reviews: reviews.items.map((r) => ({ user: r.user?.login ?? null, state: r.state, submittedAt: r.submitted_at ?? null })),
    };
  });
}
