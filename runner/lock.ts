// One daemon per machine (spec: Runner state directory, `spool/runner.lock`). The lock file is created
// with O_EXCL and holds the owner's pid. A lock whose pid is gone (the daemon was killed) is stale and
// taken over: it is renamed aside first, so two starters racing for it cannot both win.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync, fsyncSync } from 'node:fs';
import { dirname } from 'node:path';

export interface Lock {
  path: string;
  release: () => void;
}

export class LockHeld extends Error {
  constructor(
    readonly path: string,
    readonly pid: number | null,
  ) {
    super(`another svc-runner daemon is running${pid ? ` (pid ${pid})` : ''}: only one daemon per machine (lock ${path})`);
  }
}

/** Whether the process is alive (EPERM: alive but another user's). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !pidReused(pid);
}

/** On Linux, a live pid whose command line has no `run` argument is not a daemon: the pid was reused
 *  (typical after a container restart). Elsewhere a live pid counts as the owner. */
function pidReused(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return !argv.includes('run');
  } catch {
    return false;
  }
}

/** The pid written in a lock file, or null when unreadable or not (yet) written. */
export function lockOwner(path: string): number | null {
  try {
    const pid = Number(JSON.parse(readFileSync(path, 'utf8')).pid);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Whether a daemon currently holds the lock (for `status`). */
export function lockHolder(path: string): number | null {
  const pid = lockOwner(path);
  return pid !== null && pidAlive(pid) ? pid : null;
}

function create(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() }) + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return true;
}

export function acquireLock(path: string): Lock {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 3; attempt++) {
    if (create(path)) return { path, release: () => releaseLock(path) };
    const pid = lockOwner(path);
    if (pid !== null && pidAlive(pid) && pid !== process.pid) throw new LockHeld(path, pid);
    if (pid === null && recentlyWritten(path)) throw new LockHeld(path, null); // its owner is writing it now
    // Stale: move it aside (atomic; only one racer succeeds), then try to create ours again.
    const aside = `${path}.stale-${process.pid}`;
    try {
      renameSync(path, aside);
      unlinkSync(aside);
    } catch {
      // Someone else took it over first; the next create() tells.
    }
  }
  throw new LockHeld(path, lockOwner(path));
}

function recentlyWritten(path: string): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs < 2000;
  } catch {
    return false;
  }
}

/** Remove the lock only when it is still ours. */
export function releaseLock(path: string): void {
  if (existsSync(path) && lockOwner(path) === process.pid) {
    try {
      unlinkSync(path);
    } catch {
      // already gone
    }
  }
}
