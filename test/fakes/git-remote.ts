// A git remote to push to: a local bare repository reached over file://, standing in for the code
// host's git side. `branch(name)` answers the commit a branch points to there (null when absent).
// needs: git
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export interface GitRemote {
  path: string;
  url: string;
  branch: (name: string) => string | null;
  files: (ref: string) => string[];
}

/** A bare repository at `<dir>/<owner>/<name>.git`, seeded by pushing `from`'s current branch when given. */
export function gitRemote(dir: string, repo: string, from?: string): GitRemote {
  const path = join(dir, `${repo}.git`);
  mkdirSync(path, { recursive: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path]);
  const url = `file://${path}`;
  if (from) {
    execFileSync('git', ['remote', 'add', 'origin', url], { cwd: from });
    execFileSync('git', ['push', '-q', 'origin', 'HEAD:refs/heads/main'], { cwd: from });
  }
  return {
    path,
    url,
    branch: (name) => {
      try {
        return execFileSync('git', ['rev-parse', '--verify', '-q', `refs/heads/${name}`], { cwd: path, encoding: 'utf8' }).trim();
      } catch {
        return null;
      }
    },
    files: (ref) => execFileSync('git', ['ls-tree', '-r', '--name-only', ref], { cwd: path, encoding: 'utf8' }).split('\n').filter(Boolean),
  };
}
