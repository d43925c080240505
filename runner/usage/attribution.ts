// Which project, slot, issue and skill run a transcript's request or session belongs to (docs/cost.md
// "Attribution"): from its working directory and branch against the watch list's roots, else the skill
// run whose stream.jsonl names its session id.
import type { Runtime } from '../../protocol/usage.ts';
import { closeSync, openSync, readdirSync, readSync, realpathSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import type { ProjectEntry } from '../config.ts';
import { stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';
import { fileContext } from '../runtimes/claude/transcript.ts';

export const under = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

export interface Attribution {
  project: string | null;
  slot: string | null;
  issue: string | null;
  run: string | null;
}

/** A project's root, and its real path when that differs (a symlinked root). */
export type ProjectRoots = { id: string; roots: string[] };

/**
 * Which project, slot and run a working directory belongs to: the project whose root is the longest
 * prefix of `cwd`, or whose slot worktree `<parent>/.wt-<repo>-<slot>` / run worktree
 * `.wt-<repo>-run-<runId>` holds it. A slot branch `svc/<slot>/issue-<n>` gives the issue.
 */
export function attribute(cwd: string | null, branch: string | null, projects: readonly ProjectRoots[]): Attribution {
  const a: Attribution = { project: null, slot: null, issue: null, run: null };
  let best = -1;
  if (cwd) {
    for (const p of projects) {
      for (const root of p.roots) {
        if (under(cwd, root) && root.length > best) {
          best = root.length;
          Object.assign(a, { project: p.id, slot: null, run: null });
        }
        const prefix = join(dirname(root), `.wt-${basename(root)}-`);
        if (cwd.startsWith(prefix)) {
          const name = cwd.slice(prefix.length).split(sep)[0];
          const len = prefix.length + name.length;
          if (name && len > best) {
            best = len;
            Object.assign(a, { project: p.id, slot: name.startsWith('run-') ? null : name.slice(0, 64), run: name.startsWith('run-') ? name.slice(4, 260) : null });
          }
        }
      }
    }
  }
  const m = branch ? /^svc\/([^/]+)\/issue-(\d+)$/.exec(branch) : null;
  if (m && a.project) {
    a.slot ??= m[1].slice(0, 64);
    a.issue = m[2];
  }
  return a;
}

/** The first `cwd` in a transcript's first 256 KiB (Claude: top level; Codex: session_meta / turn_context). */
export function headCwd(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const buf = Buffer.alloc(256 * 1024);
    const got = readSync(fd, buf, 0, buf.length, 0);
    for (const line of buf.subarray(0, got).toString('utf8').split('\n')) {
      if (!line.includes('"cwd"')) continue;
      try {
        const o = JSON.parse(line);
        const cwd = o?.cwd ?? o?.payload?.cwd;
        if (typeof cwd === 'string' && cwd) return cwd;
      } catch {}
    }
    return null;
  } finally {
    closeSync(fd);
  }
}

/** A Claude file without a cwd in its head: its projects/ directory is the root with every
 *  non-alphanumeric character replaced by `-`. */
export function claudeDirMatches(path: string, project: readonly ProjectRoots[]): boolean {
  const dir = fileContext(path).projectDir;
  return project.some((p) => p.roots.some((r) => r.replace(/[^A-Za-z0-9]/g, '-') === dir));
}

/** Attribution against the current watch list, with the skill runs' sessions learnt as they appear. */
export class Attributor {
  private readonly runSessions = new Map<string, string>();
  private readonly scannedRuns = new Set<string>();

  constructor(
    private readonly env: Env,
    private readonly projects: () => readonly ProjectEntry[],
  ) {}

  projectRoots(): ProjectRoots[] {
    return this.projects().map((p) => {
      let real = p.root;
      try {
        real = realpathSync(p.root);
      } catch {}
      return { id: p.id, roots: real === p.root ? [p.root] : [p.root, real] };
    });
  }

  of(runtime: Runtime, sessionId: string, cwd: string | null | undefined, branch: string | null | undefined): Attribution {
    const a = attribute(cwd ?? null, branch ?? null, this.projectRoots());
    a.run ??= this.runOf(runtime, sessionId);
    return a;
  }

  /** A skill run's session: its stream.jsonl names the agent's session id (report runs work in the root). */
  private runOf(_runtime: string, sessionId: string): string | null {
    const dir = join(stateDir(this.env), 'runs');
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return null;
    }
    for (const runId of names) {
      if (this.scannedRuns.has(runId)) continue;
      const stream = join(dir, runId, 'stream.jsonl');
      let text = '';
      try {
        const fd = openSync(stream, 'r');
        try {
          const buf = Buffer.alloc(64 * 1024);
          text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
        } finally {
          closeSync(fd);
        }
      } catch {
        continue;
      }
      const m = /"(?:session_id|thread_id)":"([^"]{1,256})"/.exec(text);
      if (m) {
        this.runSessions.set(m[1], runId);
        this.scannedRuns.add(runId);
      }
    }
    return this.runSessions.get(sessionId) ?? null;
  }
}
