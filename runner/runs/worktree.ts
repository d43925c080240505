// Pull request output (docs/skill-runs.md, "Pull request output"): the run works in a fresh git
// worktree `.wt-<repo>-run-<runId>` beside the project root, on a new branch `svc/run-<runId>` from the
// root's HEAD. At the end whatever the agent left uncommitted is committed on that branch, patch.diff
// receives the full patch (base..branch, binary-safe), and the worktree is removed: the branch stays,
// ready for the code-host step. git runs through execFile with an argv, never a shell.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, fsyncSync, openSync, renameSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { confine } from '../confine.ts';
import { CommandError } from '../errors.ts';
import { git } from '../commands/git.ts';
import { keepAsSpare, spareAhead, takeSpare } from './spares.ts';

export const runWorktreePath = (root: string, runId: string) => join(dirname(root), `.wt-${basename(root)}-run-${runId}`);
export const runBranch = (runId: string) => `svc/run-${runId}`;

async function must(cwd: string, args: string[], what: string): Promise<string> {
  const r = await git(cwd, args);
  if (r.code !== 0) throw new CommandError('git_failed', `${what} failed: ${r.stderr.trim().slice(0, 300)}`);
  return r.stdout.trim();
}

/** Runs start side by side (runs/manager.ts launch), but one `git worktree add` at a time per repository:
 *  checkouts of a large tree at once only share the disk, and each took longer than all in a row. */
const adding = new Map<string, Promise<unknown>>();
function queued<T>(root: string, work: () => Promise<T>): Promise<T> {
  const made = (adding.get(root) ?? Promise.resolve()).then(work);
  const tail = made.catch(() => {});
  adding.set(root, tail);
  void tail.then(() => adding.get(root) === tail && adding.delete(root));
  return made;
}

/**
 * Create the run's worktree and branch from the root's HEAD; answers the base commit. With `spares` > 0
 * (skills.spareWorktrees) a spare worktree is taken when one is ready (spares.ts), else the tree is checked
 * out anew; either way, a project left without spares gets one made ahead.
 */
export async function createRunWorktree(root: string, path: string, branch: string, spares = 0): Promise<string> {
  const c = await confine(path, [root]);
  if (!c.ok || !c.worktree) throw new CommandError('path_not_allowed', `the worktree ${path} is not a .wt-<repo>-* sibling of the project root`);
  if (existsSync(path)) throw new CommandError('worktree_exists', `${path} exists already`);
  const head = await git(root, ['rev-parse', '--verify', '-q', 'HEAD^{commit}']);
  if (head.code !== 0) throw new CommandError('no_commits', 'the project has no commit to start a pull request from');
  const base = head.stdout.trim();
  if (!(await takeSpare(root, spares, path, branch, base))) await queued(root, () => must(root, ['worktree', 'add', '-q', '-b', branch, '--', path, base], 'git worktree add'));
  spareAhead(root, spares, (work) => queued(root, work));
  return base;
}

/** Keep the finished run's worktree as a spare when its project keeps them, else remove it (the branch stays). */
export async function retireRunWorktree(root: string, path: string): Promise<string | null> {
  if (await keepAsSpare(root, path).catch(() => false)) return null;
  return removeRunWorktree(root, path);
}

export interface PatchInfo {
  branch: string;
  base: string;
  head: string;
  commits: number;
  files: number;
  patchBytes: number;
  patchSha256: string;
}

/** Commit what is left in the worktree (when it still exists), write patch.diff, remove the worktree. */
export async function collectPatch(root: string, wt: { path: string; branch: string; base: string }, patchFile: string, message: string): Promise<PatchInfo> {
  if (existsSync(wt.path)) {
    await must(wt.path, ['add', '-A'], 'git add');
    const staged = await git(wt.path, ['diff', '--cached', '--quiet']);
    if (staged.code === 1) {
      const identity = (await git(wt.path, ['config', 'user.email'])).stdout.trim() ? [] : ['-c', 'user.name=svc-runner', '-c', 'user.email=svc-runner@localhost'];
      await must(wt.path, [...identity, 'commit', '-q', '--no-verify', '-m', message], 'git commit');
    }
  }
  const head = await must(root, ['rev-parse', '--verify', '-q', `refs/heads/${wt.branch}^{commit}`], 'finding the branch');
  const range = `${wt.base}..${head}`;
  const commits = Number(await must(root, ['rev-list', '--count', range], 'git rev-list')) || 0;
  const names = await must(root, ['diff', '--name-only', '-z', wt.base, head], 'git diff --name-only');
  await writeDiff(root, wt.base, head, patchFile);
  return {
    branch: wt.branch,
    base: wt.base,
    head,
    commits,
    files: names.split('\0').filter(Boolean).length,
    patchBytes: statSync(patchFile).size,
    patchSha256: await sha256File(patchFile),
  };
}

/** Remove the worktree (the branch stays); a failure is not the run's failure. */
export async function removeRunWorktree(root: string, path: string): Promise<string | null> {
  if (!existsSync(path)) return null;
  const r = await git(root, ['worktree', 'remove', '--force', '--', path]);
  return r.code === 0 ? null : r.stderr.trim().slice(0, 300);
}

/** `git diff --binary base head` straight into the file (no size limit), written atomically. */
function writeDiff(root: string, base: string, head: string, file: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-c', 'core.fsmonitor=false', 'diff', '--binary', '--no-color', '--no-ext-diff', base, head], {
      cwd: root,
      env: { ...process.env, GIT_PAGER: 'cat', LC_ALL: 'C', GIT_DIR: undefined, GIT_WORK_TREE: undefined } as NodeJS.ProcessEnv,
      stdio: ['ignore', fd, 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    child.once('error', (e) => (closeSync(fd), reject(new CommandError('git_failed', `git diff could not run (${(e as NodeJS.ErrnoException).code})`))));
    child.once('close', (code) => {
      fsyncSync(fd);
      closeSync(fd);
      if (code !== 0) return reject(new CommandError('git_failed', `git diff failed: ${stderr.trim().slice(0, 300)}`));
      renameSync(tmp, file);
      resolve();
    });
  });
}

function sha256File(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (d) => h.update(d))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });
}
