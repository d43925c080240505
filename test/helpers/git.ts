// A project root as the server expects one on a runner (functions/projects/root-check.ts): a git work tree.
// needs: git
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';

/** Make `dir` (and its parents) and `git init` it; returns dir. */
export function gitWorkTree(dir: string): string {
  mkdirSync(dir, { recursive: true });
  execFileSync('git', ['-C', dir, 'init', '-q', '-b', 'main']);
  return dir;
}
