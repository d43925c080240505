// `svc-runner slot-start <slot> --issue N [--profile ID] [--branch NAME] [--base REF] [--title T]`
// (docs/orchestrator.md "Dispatching a slot"): what the orchestrator agent runs to hand an issue to a
// worker. It creates (or reuses) the worktree `.wt-<repo>-<slot>` beside the project root on branch
// `svc/<slot>/issue-<N>`, starts the worker profile in tmux session svc-<project>-slot-<slot> there, and
// appends `slot.dispatched` to the project's events.jsonl. Refuses when the slot's session runs.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig, primaryProjects } from './config.ts';
import { CommandError } from './errors.ts';
import { git } from './commands/git.ts';
import { UsageError } from './cli-options.ts';
import { locateProject } from './emit.ts';
import { appendEventLine, SLOT } from './events-file.ts';
import { heldIssuePath, worktreePath } from './fleet-paths.ts';
import { chooseProfile, ensureExcluded, launchAgent, PROMPTS } from './launch.ts';
import { configPath } from './paths.ts';
import type { Env } from './paths.ts';
import { sessionName } from './tmux.ts';

type Out = { write: (s: string) => unknown };

const flag = (args: Record<string, unknown>, name: string): string | undefined => {
  const v = args[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') throw new UsageError(`slot-start: --${name} needs a value`);
  return v;
};

export async function slotStartCommand(args: { _: unknown[] } & Record<string, unknown>, env: Env, out: Out, err: Out): Promise<number> {
  const slot = String(args._[1]);
  if (!SLOT.test(slot)) throw new UsageError('slot-start: the slot must be 1-32 letters, digits, _ or -');
  const issue = Number(flag(args, 'issue')?.replace(/^#/, ''));
  if (!Number.isInteger(issue) || issue < 1) throw new UsageError('slot-start: --issue <number> is required');
  const where = flag(args, 'project-root') ?? env.SVC_PROJECT_ROOT ?? process.cwd();
  const located = locateProject(resolve(where));
  if (!located) throw new UsageError(`slot-start: ${where} is not inside a git project; pass --project-root`);
  const root = located.root;
  try {
    const config = loadConfig(configPath(env)).config;
    const projectId =
      env.SVC_PROJECT_ID ??
      // A pool member's clone (watch list `pool: true`) runs skill runs only: no slots there.
      primaryProjects(config.projects).find((p) => {
        try {
          return realpathSync(p.root) === root;
        } catch {
          return false;
        }
      })?.id;
    if (!projectId) throw new CommandError('unknown_project', `${root} is not a project on this runner's watch list`);
    if (existsSync(heldIssuePath(root, issue))) throw new CommandError('issue_held', `issue #${issue} is held by the server (its cost cap was reached): an admin raises the cap or stops the issue`);
    const chosen = chooseProfile(config, env, flag(args, 'profile'));
    const worktree = worktreePath(root, slot);
    const branch = await prepareWorktree(root, worktree, flag(args, 'branch') ?? `svc/${slot}/issue-${issue}`, flag(args, 'base') ?? 'HEAD');
    await ensureExcluded(root).catch(() => {});
    const session = sessionName.slot(projectId, slot);
    await launchAgent({ session, cwd: worktree, chosen, config, meta: { projectId, root, role: 'worker', slot, issue }, prompt: PROMPTS.worker(issue), env });
    const title = flag(args, 'title');
    appendEventLine(root, { time: new Date().toISOString(), type: 'slot.dispatched', slot, issue, data: { branch, profile: chosen.profile.id, ...(title ? { title } : {}) } });
    out.write(JSON.stringify({ session, slot, issue, worktree, branch, profile: chosen.profile.id }) + '\n');
    return 0;
  } catch (e) {
    if (!(e instanceof CommandError)) throw e;
    err.write(`svc-runner: slot-start: ${e.message}\n`);
    return 1;
  }
}

/** The slot's worktree: reused when it exists, else added on `branch` (created from `base` if new). */
async function prepareWorktree(root: string, worktree: string, branch: string, base: string): Promise<string> {
  const existing = statSync(worktree, { throwIfNoEntry: false });
  if (existing) {
    if (!existing.isDirectory()) throw new CommandError('failed', `${worktree} exists and is not a directory`);
    const current = await git(worktree, ['symbolic-ref', '-q', '--short', 'HEAD']);
    return current.code === 0 ? current.stdout.trim() : branch;
  }
  if ((await git(root, ['check-ref-format', '--branch', branch])).code !== 0 || branch.startsWith('-')) throw new UsageError(`slot-start: --branch ${branch} is not a valid branch name`);
  if (base.startsWith('-')) throw new UsageError('slot-start: --base must be a commit, branch or tag');
  const known = (await git(root, ['rev-parse', '--verify', '-q', `refs/heads/${branch}`])).code === 0;
  const r = await git(root, known ? ['worktree', 'add', '--', worktree, branch] : ['worktree', 'add', '-b', branch, '--', worktree, base]);
  if (r.code !== 0) throw new CommandError('failed', `git worktree add failed: ${r.stderr.trim().slice(0, 300)}`);
  return branch;
}
