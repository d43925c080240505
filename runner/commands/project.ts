// project.inspect and project.refresh (spec: Server commands to a runner): read a git repository.
//
// project.inspect {path} reads a repository before it is connected, so its path need not be a
// registered root yet. It must be, after resolving symlinks, the top directory of a git work tree;
// anything else is refused — with `path_not_allowed` when the path is outside the registered roots
// and their worktrees (the answer is the same whether such a path exists or not, so the command does
// not probe the file system), with `not_a_repository` inside them. What it may read: git metadata
// of that repository only (remote names and URLs with credentials removed, branches, HEAD, the count
// of changed files, the worktree list), never file contents.
//
// project.refresh {projectId} re-reads a connected project: its root comes from the cached watch
// list (welcome/projects frames); its worktrees are reported only when they are the root's
// `.wt-<repo>-*` siblings.
import type { CommandArgs } from '../../protocol/commands.ts';
import { badPathShape, confine, resolveReal } from '../confine.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';
import { readRepository, workTreeTop } from './git.ts';

export async function projectInspect(args: CommandArgs<'project.inspect'>, ctx: CommandContext) {
  const shape = badPathShape(args.path);
  if (shape) throw new CommandError('path_not_allowed', shape);
  const confined = await confine(args.path, ctx.projects().map((p) => p.root));
  const real = confined.ok ? confined.real : await resolveReal(args.path).catch(() => null);
  const top = real ? await workTreeTop(real) : null;
  if (top === null || top !== real) {
    if (!confined.ok) throw new CommandError('path_not_allowed', `${confined.message}, and not the top directory of a git repository`);
    throw new CommandError('not_a_repository', 'the path is not the top directory of a git repository');
  }
  return readRepository(top);
}

export async function projectRefresh(args: CommandArgs<'project.refresh'>, ctx: CommandContext) {
  const project = ctx.projects().find((p) => p.id === args.projectId);
  if (!project) throw new CommandError('unknown_project', `project ${args.projectId} is not on this runner's watch list`);
  const confined = await confine(project.root, [project.root]);
  if (!confined.ok) throw new CommandError('path_not_allowed', confined.message);
  const top = await workTreeTop(confined.real);
  if (top !== confined.real) throw new CommandError('not_a_repository', `the root of project ${args.projectId} is not the top directory of a git repository`);
  return { projectId: project.id, ...(await readRepository(top)) };
}
