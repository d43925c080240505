// `svc-runner pr-merge <N> [--project-root DIR]` (docs/orchestrator.md, step 3 of the skill): the
// orchestrator agent's merge step, for GitHub and GitLab alike. It asks the running daemon over its
// local channel (local.ts) to merge pull/merge request N of the project the directory belongs to,
// through that project's code-host adapter with the token the server sent for it (memory only) or the
// runner's own. The daemon merges only while `.svc/pr/<N>.json` says `approve`; the host's approval
// rules and branch protection apply. Prints the result as one JSON line; exit 1 with the host's reason
// when it refuses (or the daemon is not running), 2 on wrong arguments.
import { resolve } from 'node:path';
import { UsageError } from './cli-options.ts';
import { locateProject } from './emit.ts';
import { askAndPrint } from './local.ts';
import type { Env } from './paths.ts';

type Out = { write: (s: string) => unknown };

export async function prMergeCommand(args: Record<string, unknown> & { _: unknown[] }, env: Env, out: Out, err: Out, cwd = process.cwd()): Promise<number> {
  const n = Number(String(args._[1]).replace(/^[#!]/, ''));
  if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1) throw new UsageError('pr-merge: <N> must be the pull or merge request number');
  const flag = args['project-root'];
  if (flag !== undefined && (typeof flag !== 'string' || flag === '')) throw new UsageError('pr-merge: --project-root needs a value');
  const where = (flag as string | undefined) ?? env.SVC_PROJECT_ROOT ?? cwd;
  const located = locateProject(resolve(cwd, where));
  if (!located) throw new UsageError(`pr-merge: ${where} is not inside a git project or a .wt-<repo>-<slot> worktree; pass --project-root`);
  return askAndPrint(env, { op: 'pr.merge', root: located.root, number: n }, 'pr-merge', out, err);
}
