// Path confinement for server commands (spec: Server commands to a runner; DESIGN §3): a path a
// command touches must lie inside a registered project root or inside one of the root's sibling
// worktrees `<parent>/.wt-<repo>-<name>` (repo = the root's directory name). Symlinks are resolved
// before the check (a link inside a root that points elsewhere is judged by where it points), and a
// path with a `..` segment, a relative path or a NUL byte is refused before anything is resolved.
import { realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, sep } from 'node:path';

export type Confined =
  | { ok: true; real: string; root: string; worktree: string | null }
  | { ok: false; code: 'path_not_allowed'; message: string };

const refuse = (message: string): Confined => ({ ok: false, code: 'path_not_allowed', message });

/** Refusals that need no file system: not absolute, `..` segments, NUL. */
export function badPathShape(path: string): string | null {
  if (typeof path !== 'string' || path.length === 0 || path.length > 4096) return 'the path must be a non-empty string';
  if (path.includes('\0')) return 'the path must not contain NUL';
  if (!isAbsolute(path)) return 'the path must be absolute';
  if (path.split(/[\\/]/).includes('..')) return 'the path must not contain ..';
  return null;
}

/** realpath of the path, or of its deepest existing ancestor joined with the parts that do not exist yet. */
export async function resolveReal(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    const parent = dirname(path);
    if (parent === path) return path;
    return join(await resolveReal(parent), basename(path));
  }
}

export const within = (child: string, parent: string): boolean => child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);

/** The sibling worktree directory `child` lies in, for a root's real path, or null. */
export function worktreeOf(child: string, rootReal: string): string | null {
  const parent = dirname(rootReal);
  const prefix = `.wt-${basename(rootReal)}-`;
  if (!within(child, parent) || child === parent) return null;
  const first = child.slice(parent.length).split(sep).filter(Boolean)[0];
  return first && first.startsWith(prefix) && first.length > prefix.length ? join(parent, first) : null;
}

/** Check `path` against the registered roots (their real paths are resolved here too). */
export async function confine(path: string, roots: readonly string[]): Promise<Confined> {
  const shape = badPathShape(path);
  if (shape) return refuse(shape);
  let real: string;
  try {
    real = await resolveReal(path);
  } catch {
    return refuse('the path cannot be resolved');
  }
  for (const root of roots) {
    if (badPathShape(root)) continue;
    let rootReal: string;
    try {
      rootReal = await realpath(root);
    } catch {
      continue; // a root that is gone confines nothing
    }
    if (rootReal === sep) continue; // a root at / would allow everything
    if (within(real, rootReal)) return { ok: true, real, root: rootReal, worktree: null };
    const worktree = worktreeOf(real, rootReal);
    if (worktree) return { ok: true, real, root: rootReal, worktree };
  }
  return refuse('the path is outside the registered project roots and their .wt-<repo>-* worktrees');
}
