// `<state>/<name>`: a small JSON report one daemon component writes for `svc-runner status` (another
// process): the component's fields plus the writer's pid and the time. Read only while that daemon (the
// lock holder, same pid) runs, so a reader compares `pid` with the lock.
import { join } from 'node:path';
import type * as z from 'zod';
import { writeFileAtomic } from './config.ts';
import { stateDir } from './paths.ts';
import type { Env } from './paths.ts';
import { readJson } from './runs/files.ts';

export interface DaemonStateFile<T extends { pid: number; at: string }> {
  path(env: Env): string;
  /** Writes `s` with this process's pid and the current time. */
  write(env: Env, s: Omit<T, 'pid' | 'at'>): void;
  /** The last report; null when missing or not valid. */
  read(env: Env): T | null;
}

export function daemonStateFile<S extends z.ZodType<{ pid: number; at: string }>>(name: string, schema: S): DaemonStateFile<z.infer<S>> {
  const path = (env: Env) => join(stateDir(env), name);
  return {
    path,
    write: (env, s) => writeFileAtomic(path(env), JSON.stringify({ ...s, pid: process.pid, at: new Date().toISOString() }) + '\n'),
    read: (env) => readJson(path(env), schema),
  };
}
