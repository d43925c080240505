// Spare worktrees (docs/skill-runs.md, "Spare worktrees"). Checking out a large tree is the slowest step
// of a pull request run's start: 10,000 files took 0.3 s on a quiet disk and 5 s of system time on this
// project's test machines (docs/performance.md, "A trigger call to a working agent"). So a finished run's
// worktree is kept as a spare instead of being removed: reset (`git reset --hard`, then `git clean -ffdx`,
// so nothing the earlier run left stays, ignored files included), detached at the root's HEAD, and renamed
// `.wt-<repo>-spare.<n>`. The next pull request run of the project moves a spare into place and checks
// its new branch out from the base, which costs what differs between the two commits, not the tree's
// size; a run that finds no spare ready waits for one being made or reset rather than checking out anew.
// A project keeps `skills.spareWorktrees` of them (0: off, every run checks out anew), counting those
// ready, those being made or reset, and those lent to running runs: after a run's start the pool is
// filled up to that number (behind that run's checkout, if it made one), one `git worktree add` at a
// time; a lent spare comes back when its run finishes, so a steady flow of runs checks nothing out and a
// burst of up to that many runs finds one each. A run that checked out anew (more runs at once than
// spares) gives its worktree back only when the pool has room, else it is removed. The pool lives in this
// daemon's memory only: spares an earlier daemon left are removed when the project's pool is first used.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { git } from '../commands/git.ts';
import { errorText, log } from '../log.ts';

interface Pool {
  max: number;
  /** Spares ready to take, oldest first. */
  ready: string[];
  /** Spares being made or reset, counted against `max`: a run that finds none ready waits for one rather
   *  than checking out anew (a reset costs what the last run changed; a checkout, the whole tree). */
  work: Set<Promise<unknown>>;
  /** Run worktrees that were spares, until their runs finish: they come back, so they count. */
  lent: Set<string>;
  /** Spares of an earlier daemon removed (once per pool). */
  swept: Promise<void>;
  seq: number;
}

const pools = new Map<string, Pool>();
/** A dot, which no slot label has (protocol/commands.ts): a slot's worktree is never taken for a spare. */
const prefix = (root: string) => `.wt-${basename(root)}-spare.`;

async function ok(cwd: string, args: string[]): Promise<boolean> {
  const r = await git(cwd, args, { timeoutMs: 120_000 }).catch((e) => ({ code: -1, stdout: '', stderr: errorText(e) }));
  if (r.code !== 0) log.debug('a spare worktree step failed', { args: args.join(' '), error: r.stderr.trim().slice(0, 300) });
  return r.code === 0;
}

/** Remove the spares a daemon before this one left (registered worktrees first, then stray directories). */
async function sweep(root: string): Promise<void> {
  const listed = await git(root, ['worktree', 'list', '--porcelain']).catch(() => null);
  const mine = prefix(root);
  for (const line of listed?.stdout.split('\n') ?? []) {
    const path = line.startsWith('worktree ') ? line.slice('worktree '.length) : null;
    if (path && dirname(path) === dirname(root) && basename(path).startsWith(mine)) await ok(root, ['worktree', 'remove', '--force', '--', path]);
  }
  try {
    for (const name of readdirSync(dirname(root))) if (name.startsWith(mine) && /^\d+$/.test(name.slice(mine.length))) rmSync(join(dirname(root), name), { recursive: true, force: true });
  } catch {}
  await ok(root, ['worktree', 'prune']);
}

function poolOf(root: string, max: number): Pool {
  let p = pools.get(root);
  if (!p) pools.set(root, (p = { max, ready: [], work: new Set(), lent: new Set(), swept: sweep(root), seq: 0 }));
  p.max = max;
  return p;
}

function nextPath(root: string, p: Pool): string {
  let path: string;
  do path = join(dirname(root), `${prefix(root)}${++p.seq}`);
  while (existsSync(path));
  return path;
}

/**
 * Put the spare at `path` on a new `branch` from `base`. A spare is clean and detached at the commit it was
 * made or reset at; when that is the base already (the root's HEAD has not moved since), the branch is two
 * ref updates — no checkout, which would refresh the index against every file of the tree. Else a checkout
 * changes what differs between the two commits.
 */
async function onBranch(path: string, branch: string, base: string): Promise<boolean> {
  const at = await git(path, ['rev-parse', '--verify', '-q', 'HEAD^{commit}']).catch(() => null);
  if (at?.code === 0 && at.stdout.trim() === base) return (await ok(path, ['branch', '--', branch, base])) && ok(path, ['symbolic-ref', 'HEAD', `refs/heads/${branch}`]);
  return ok(path, ['checkout', '-q', '-b', branch, base]);
}

/** Give the run at `path` a spare, on `branch` from `base`. false: none ready, or the spare failed (then it is gone). */
export async function takeSpare(root: string, max: number, path: string, branch: string, base: string): Promise<boolean> {
  if (max <= 0) return false;
  const p = poolOf(root, max);
  await p.swept;
  while (!p.ready.length && p.work.size) await Promise.race(p.work);
  const spare = p.ready.shift();
  if (!spare) return false;
  // Lent from here on, so a fill meanwhile counts it; not lent when the move or the checkout fails.
  p.lent.add(path);
  if (!(await ok(root, ['worktree', 'move', '--', spare, path]))) {
    p.lent.delete(path);
    await ok(root, ['worktree', 'remove', '--force', '--', spare]);
    return false;
  }
  if (await onBranch(path, branch, base)) return true;
  p.lent.delete(path);
  await ok(root, ['worktree', 'remove', '--force', '--', path]);
  await ok(root, ['branch', '-D', '--', branch]);
  return false;
}

/**
 * Fill the project's pool up to its size (ready, being made or reset, lent), through `queue` (one `git
 * worktree add` at a time per repository, worktree.ts). Called after each pull request run's worktree is made.
 */
export function spareAhead(root: string, max: number, queue: (work: () => Promise<unknown>) => Promise<unknown>): void {
  if (max <= 0) return;
  const p = poolOf(root, max);
  for (let n = p.max - p.ready.length - p.work.size - p.lent.size; n > 0; n--) {
    void pending(p, () =>
      queue(async () => {
        await p.swept;
        const path = nextPath(root, p);
        if (await ok(root, ['worktree', 'add', '-q', '--detach', '--', path, 'HEAD'])) p.ready.push(path);
      }),
    );
  }
}

/** Count a spare's work against the pool's limit until it settles (never rejects). */
function pending<T>(p: Pool, work: () => Promise<T>): Promise<T | false> {
  const done = work().catch(() => false as const);
  p.work.add(done);
  return done.finally(() => p.work.delete(done));
}

/**
 * Keep a finished run's worktree as a spare (its patch is made and its branch committed): reset, cleaned of
 * everything untracked or ignored, detached at the root's HEAD and renamed. A lent spare always comes back;
 * another run's worktree only into room. false: not kept (no pool, the pool is full, or a step failed):
 * the caller removes it as before.
 */
export async function keepAsSpare(root: string, path: string): Promise<boolean> {
  const p = pools.get(root);
  const lent = p?.lent.delete(path) ?? false;
  if (!p || p.max <= 0 || (!lent && p.ready.length + p.work.size + p.lent.size >= p.max) || !existsSync(path)) return false;
  return (await pending(p, async () => {
    await p.swept;
    const base = await git(root, ['rev-parse', '--verify', '-q', 'HEAD^{commit}']);
    if (base.code !== 0) return false;
    const steps = [
      ['reset', '-q', '--hard'],
      ['clean', '-ffdxq'],
      ['checkout', '-q', '--detach', base.stdout.trim()],
    ];
    for (const step of steps) if (!(await ok(path, step))) return false;
    const spare = nextPath(root, p);
    if (!(await ok(root, ['worktree', 'move', '--', path, spare]))) return false;
    p.ready.push(spare);
    return true;
  })) === true;
}
