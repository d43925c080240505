// The agents' code-host commands that ask the running daemon over its local channel (local.ts), for
// GitHub and GitLab alike, with the project's token (the server's, kept in the daemon's memory, or the
// runner's own) — the skills use them instead of `gh` or `glab` (docs/orchestrator.md):
//   pr-merge <N>     the orchestrator's merge step: merge pull/merge request N through the project's
//                    code-host adapter, only while `.svc/pr/<N>.json` says `approve` (the host's approval
//                    rules and branch protection apply; its refusal is the message)
//   pr-list          the open pull/merge requests with their head commits' checks
//   pr-view <N>      one pull/merge request: state, files, checks, reviews, mergeability
//   issue-list       the open issues (the project's queue)
//   issue-view <N>   one issue with its comments
// The project is the one the directory belongs to (--project-root, else SVC_PROJECT_ROOT, else the
// current directory; a slot's `.wt-<repo>-<slot>` worktree counts as its project). Each prints its
// answer as one JSON line; exit 1 with the reason when the host refuses or no daemon runs, 2 on wrong
// arguments.
import { resolve } from 'node:path';
import { UsageError } from './cli-options.ts';
import { locateProject } from './emit.ts';
import { askAndPrint } from './local.ts';
import type { LocalRequest } from './local.ts';
import type { Env } from './paths.ts';

type Out = { write: (s: string) => unknown };

const OPS = {
  'pr-merge': 'pr.merge',
  'pr-view': 'pr.view',
  'issue-view': 'issue.view',
  'pr-list': 'pr.list',
  'issue-list': 'issue.list',
} as const;
export type HostCommand = keyof typeof OPS;

/** The commands that take the number of a pull/merge request or an issue. */
export const NUMBERED: readonly HostCommand[] = ['pr-merge', 'pr-view', 'issue-view'];

export async function hostCommand(command: HostCommand, args: Record<string, unknown> & { _: unknown[] }, env: Env, out: Out, err: Out, cwd = process.cwd()): Promise<number> {
  const flag = args['project-root'];
  if (flag !== undefined && (typeof flag !== 'string' || flag === '')) throw new UsageError(`${command}: --project-root needs a value`);
  let n = 0;
  if (NUMBERED.includes(command)) {
    // `#12` and GitLab's `!12` are the same number.
    n = Number(String(args._[1]).replace(/^[#!]/, ''));
    if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1) throw new UsageError(`${command}: <N> must be the ${command.startsWith('issue') ? 'issue' : 'pull or merge request'} number`);
  }
  const where = (flag as string | undefined) ?? env.SVC_PROJECT_ROOT ?? cwd;
  const located = locateProject(resolve(cwd, where));
  if (!located) throw new UsageError(`${command}: ${where} is not inside a git project or a .wt-<repo>-<slot> worktree; pass --project-root`);
  const op = OPS[command];
  const req = (op === 'pr.list' || op === 'issue.list' ? { op, root: located.root } : { op, root: located.root, number: n }) satisfies LocalRequest;
  return askAndPrint(env, req, command, out, err);
}
