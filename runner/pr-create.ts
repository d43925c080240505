// `svc-runner pr-create --title T [--body B] [--project-root DIR]` (skills/svc-worker step 4): a slot's
// worker opens its pull or merge request, for GitHub and GitLab alike, without `gh` or `glab`. The branch
// is the one checked out where it runs (the slot's worktree); the running daemon (local.ts) pushes it to
// `origin` with the project's code-host token (the server's, kept in memory, or the runner's) and opens
// the pull/merge request against the default branch — or answers the one already open from that branch.
// Prints {pr, url, branch} as one JSON line; exit 1 with the reason when it cannot (no daemon, no token,
// push refused), 2 on wrong arguments.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { UsageError } from './cli-options.ts';
import { locateProject } from './emit.ts';
import { askAndPrint } from './local.ts';
import type { Env } from './paths.ts';

type Out = { write: (s: string) => unknown };

const text = (args: Record<string, unknown>, name: string): string | undefined => {
  const v = args[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') throw new UsageError(`pr-create: --${name} needs a value`);
  return v;
};

export async function prCreateCommand(args: Record<string, unknown> & { _: unknown[] }, env: Env, out: Out, err: Out, cwd = process.cwd()): Promise<number> {
  const title = text(args, 'title');
  if (!title) throw new UsageError('pr-create: --title <text> is required');
  const body = text(args, 'body') ?? '';
  const where = resolve(cwd, text(args, 'project-root') ?? cwd);
  const located = locateProject(where);
  if (!located) throw new UsageError(`pr-create: ${where} is not inside a git project or a .wt-<repo>-<slot> worktree; pass --project-root`);
  let branch: string;
  try {
    branch = execFileSync('git', ['symbolic-ref', '-q', '--short', 'HEAD'], { cwd: where, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    err.write('svc-runner: pr-create: no branch is checked out here (a detached HEAD): commit on the slot\'s branch first\n');
    return 1;
  }
  return askAndPrint(env, { op: 'pr.create', root: located.root, branch, title, body }, 'pr-create', out, err);
}
