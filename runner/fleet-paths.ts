// Where the orchestrator contract's files live (docs/orchestrator.md), and the lookups server commands
// share: a project's root from the watch list, a slot's worktree beside it, the project's `.svc/`
// directory. Every path a command touches is checked with confine.ts before it is used.
import { basename, dirname, join } from 'node:path';
import { confine } from './confine.ts';
import type { ProjectEntry } from './config.ts';
import { CommandError } from './errors.ts';

/** The project's own directory for svc files (ignored through .git/info/exclude). */
export const SVC_DIR = '.svc';
export const EVENTS_FILE = 'events.jsonl';
export const MESSAGE_FILE = '.orchestrator-msg.md';

export const svcDir = (root: string) => join(root, SVC_DIR);
export const eventsPath = (root: string) => join(root, SVC_DIR, EVENTS_FILE);
export const prSignalPath = (root: string, pr: number) => join(root, SVC_DIR, 'pr', `${pr}.json`);
/** `<parent>/.wt-<repo>-<slot>` beside the project root. */
/** An issue held by the server (a reached cap, docs/cost.md "Caps"): slot-start refuses it until slot.resume. */
export const heldIssuePath = (root: string, issue: number) => join(root, SVC_DIR, 'held', `${issue}.json`);
export const worktreePath = (root: string, slot: string) => join(dirname(root), `.wt-${basename(root)}-${slot}`);

export interface ProjectRef {
  id: string;
  /** The root's real path, checked by confine. */
  root: string;
}

/** A project of the watch list with its confined real root; `unknown_project` otherwise. */
export async function projectOf(ctx: { projects: () => readonly ProjectEntry[] }, projectId: string): Promise<ProjectRef> {
  const project = ctx.projects().find((p: ProjectEntry) => p.id === projectId);
  if (!project) throw new CommandError('unknown_project', `project ${projectId} is not on this runner's watch list`);
  const c = await confine(project.root, [project.root]);
  if (!c.ok) throw new CommandError('path_not_allowed', c.message);
  return { id: project.id, root: c.real };
}

/** Confine `path` to the project's root and its worktrees; the real path. */
export async function confined(project: ProjectRef, path: string): Promise<string> {
  const c = await confine(path, [project.root]);
  if (!c.ok) throw new CommandError(c.code, c.message);
  return c.real;
}
