// Reading a git repository (for project.inspect and project.refresh): real `git` through execFile with
// an argv array, never a shell. Only metadata is read — remotes, branches, HEAD, status counts and the
// worktree list — never file contents. fsmonitor is forced off (a repository's config could name a
// program for it) and optional locks are skipped so reading never blocks an agent working there.
import { execFile } from 'node:child_process';
import { realpath, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { confine } from '../confine.ts';
import { CommandError } from '../errors.ts';

const SCRUB = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_COMMON_DIR', 'GIT_NAMESPACE', 'GIT_CEILING_DIRECTORIES'];

export function git(cwd: string, args: string[], opts: { timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C', GIT_PAGER: 'cat' };
  for (const k of SCRUB) delete env[k];
  return new Promise((resolve, reject) => {
    execFile('git', ['-c', 'core.fsmonitor=false', ...args], { cwd, env, timeout: opts.timeoutMs ?? 30_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      if (e && typeof e.code === 'string') return reject(new CommandError(e.code === 'ENOENT' ? 'git_not_found' : 'failed', `git could not run (${e.code})`));
      resolve({ code: e ? Number(e.code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

const out = async (cwd: string, args: string[]): Promise<string | null> => {
  const r = await git(cwd, args);
  return r.code === 0 ? r.stdout.trim() : null;
};

/** The real path of the work tree's top directory containing `dir`, or null when it is not in one. */
export async function workTreeTop(dir: string): Promise<string | null> {
  if (!(await stat(dir).catch(() => null))?.isDirectory()) return null;
  try {
    const top = await out(dir, ['rev-parse', '--show-toplevel']);
    return top ? await realpath(top) : null;
  } catch (err) {
    if (err instanceof CommandError && err.code === 'git_not_found') throw err;
    return null; // the directory does not exist or is not readable
  }
}

/** A remote URL as reported: a password is removed from any URL, and for http(s) the user name too
 *  (a token is often put there: https://x-access-token:<token>@host/…). The user of ssh://user@host
 *  and of scp-like `git@host:owner/repo.git` is not a secret and stays. */
export function redactUrl(url: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    try {
      const u = new URL(url);
      if (u.protocol === 'http:' || u.protocol === 'https:') u.username = '';
      u.password = '';
      return u.toString();
    } catch {
      return url.replace(/\/\/[^/@]*@/, '//');
    }
  }
  return url;
}

interface Worktree {
  path: string;
  head: string | null;
  branch: string | null;
}

export function parseWorktrees(text: string): Worktree[] {
  return text
    .split(/\n\n+/)
    .map((block) => {
      const lines = block.split('\n');
      const field = (name: string) => lines.find((l) => l.startsWith(name + ' '))?.slice(name.length + 1) ?? null;
      const branch = field('branch');
      return { path: field('worktree') ?? '', head: field('HEAD'), branch: branch ? branch.replace(/^refs\/heads\//, '') : null };
    })
    .filter((w) => w.path);
}

async function defaultBranch(top: string, remote: string | null, current: string | null): Promise<string | null> {
  if (remote) {
    const ref = await out(top, ['symbolic-ref', '-q', '--short', `refs/remotes/${remote}/HEAD`]);
    if (ref) return ref.slice(remote.length + 1);
  }
  for (const name of ['main', 'master']) if ((await git(top, ['rev-parse', '--verify', '-q', `refs/heads/${name}`])).code === 0) return name;
  return current;
}

/** Everything project.inspect/refresh report about the repository whose top directory is `top`. */
export async function readRepository(top: string) {
  const names = ((await out(top, ['remote'])) ?? '').split('\n').filter(Boolean);
  const remotes = await Promise.all(names.map(async (name) => ({ name, url: redactUrl((await out(top, ['remote', 'get-url', name])) ?? '') })));
  const remote = remotes.find((r) => r.name === 'origin') ?? remotes[0] ?? null;
  const head = await out(top, ['rev-parse', '--verify', '-q', 'HEAD^{commit}']);
  const branch = await out(top, ['symbolic-ref', '-q', '--short', 'HEAD']);
  const status = await git(top, ['status', '--porcelain=v1', '--untracked-files=normal']);
  if (status.code !== 0) throw new CommandError('failed', `git status failed: ${status.stderr.trim().slice(0, 300)}`);
  const changes = status.stdout.split('\n').filter(Boolean).length;
  const log = head ? await out(top, ['log', '-1', '--format=%H%x00%ct%x00%s', 'HEAD']) : null;
  const [sha, time, subject] = log ? log.split('\0') : [];
  const listed = parseWorktrees((await out(top, ['worktree', 'list', '--porcelain'])) ?? '');
  const worktrees = [];
  let otherWorktrees = 0;
  for (const w of listed) {
    const c = await confine(w.path, [top]);
    if (!c.ok) {
      otherWorktrees++;
      continue;
    }
    const slot = c.worktree ? basename(c.worktree).slice(`.wt-${basename(top)}-`.length) : null;
    worktrees.push({ path: c.real, main: c.real === top, slot, head: w.head, branch: w.branch });
  }
  return {
    root: top,
    remote,
    remotes,
    defaultBranch: await defaultBranch(top, remote?.name ?? null, branch),
    branch,
    head,
    lastCommit: sha ? { sha, time: new Date(Number(time) * 1000).toISOString(), subject: subject.slice(0, 500) } : null,
    dirty: changes > 0,
    changes,
    worktrees,
    otherWorktrees,
  };
}
