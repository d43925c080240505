// `svc-runner emit <type> …` (docs/orchestrator.md): what an agent runs to append one well-formed line
// to its project's `.svc/events.jsonl`. The agent passes plain flags (--slot, --issue, --summary,
// --pr, …) and never writes JSON by hand; `--data` takes a JSON object for anything else. The project
// is found from --project-root, then $SVC_PROJECT_ROOT, then the working directory; inside a slot's
// worktree `.wt-<repo>-<slot>` the line goes to the main project's file and the slot is implied.
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { loadConfig, primaryProjects } from './config.ts';
import { appendEventLine, eventLine, MAX_LINE_BYTES, SLOT, typeProblems } from './events-file.ts';
import type { EventLine } from './events-file.ts';
import { EMIT_TEXT_FLAGS, jsonObjectFlag, UsageError } from './cli-options.ts';
import { configPath, isDir } from './paths.ts';
import type { Env } from './paths.ts';


export interface Located {
  root: string;
  /** The slot whose worktree the directory is in, when it is one. */
  slot?: string;
}

/** The project a directory belongs to: the nearest ancestor that is a `.wt-<repo>-<slot>` worktree
 *  (whose root is the sibling `<repo>`) or a directory with `.git`. */
export function locateProject(dir: string): Located | null {
  let at: string;
  try {
    at = realpathSync(dir);
  } catch {
    return null;
  }
  for (;;) {
    const name = basename(at);
    if (name.startsWith('.wt-')) {
      const rest = name.slice(4);
      // `.wt-my-repo-a`: try the longest repo name first (repo `my-repo`, slot `a`).
      for (let i = rest.lastIndexOf('-'); i > 0; i = rest.lastIndexOf('-', i - 1)) {
        const repo = rest.slice(0, i);
        const slot = rest.slice(i + 1);
        if (SLOT.test(slot) && isDir(join(dirname(at), repo))) return { root: join(dirname(at), repo), slot };
      }
    }
    if (existsSync(join(at, '.git'))) return { root: at };
    const up = dirname(at);
    if (up === at) return null;
    at = up;
  }
}

function text(args: Record<string, unknown>, name: string): string | undefined {
  const v = args[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') throw new UsageError(`emit: --${name} needs a value`);
  return v;
}

function integer(args: Record<string, unknown>, name: string): number | undefined {
  const v = text(args, name);
  if (v === undefined) return undefined;
  const n = Number(v.replace(/^#/, ''));
  if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1) throw new UsageError(`emit: --${name} must be a positive whole number`);
  return n;
}

/** Build and check the line; `UsageError` names what is wrong. */
export function buildLine(type: string, args: Record<string, unknown>, env: Env, cwd: string): { root: string; line: EventLine } {
  const where = text(args, 'project-root') ?? env.SVC_PROJECT_ROOT ?? cwd;
  const located = locateProject(resolve(cwd, where));
  if (!located) throw new UsageError(`emit: ${where} is not inside a git project or a .wt-<repo>-<slot> worktree; pass --project-root`);
  const data = jsonObjectFlag(text(args, 'data'), 'emit: --data must be a JSON object');
  for (const k of EMIT_TEXT_FLAGS) {
    const v = text(args, k);
    if (v !== undefined) data[k] = v;
  }
  const pr = integer(args, 'pr');
  const url = text(args, 'url');
  if (url !== undefined && pr === undefined) throw new UsageError('emit: --url goes with --pr');
  if (pr !== undefined) data.pr = { number: pr, ...(url ? { url } : {}) };
  const slot = text(args, 'slot') ?? env.SVC_SLOT ?? located.slot;
  const issue = integer(args, 'issue') ?? (env.SVC_ISSUE ? Number(env.SVC_ISSUE) : undefined);
  const parsed = eventLine.safeParse({ time: new Date().toISOString(), type, ...(slot ? { slot } : {}), ...(issue ? { issue } : {}), data });
  if (!parsed.success) throw new UsageError(`emit: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'line'} ${i.message}`).join('; ')}`);
  const problems = typeProblems(parsed.data);
  if (problems.length) throw new UsageError(`emit: ${problems.join('; ')}`);
  if (Buffer.byteLength(JSON.stringify(parsed.data)) > MAX_LINE_BYTES - 64) throw new UsageError(`emit: the event is larger than ${MAX_LINE_BYTES} bytes; shorten --summary or --data`);
  return { root: located.root, line: parsed.data };
}

/** The command: append, print the line written; warn when the runner does not watch the project. */
export function emitCommand(args: { _: unknown[] } & Record<string, unknown>, env: Env, out: { write: (s: string) => unknown }, err: { write: (s: string) => unknown }): number {
  const type = String(args._[1]);
  const { root, line } = buildLine(type, args, env, process.cwd());
  const written = appendEventLine(root, line);
  out.write(written);
  try {
    // A pool-only entry's `.svc/events.jsonl` is not tailed (its primary runner serves the orchestrator).
    const projects = primaryProjects(loadConfig(configPath(env)).config.projects);
    const watched = projects.some((p) => {
      try {
        return realpathSync(p.root) === root;
      } catch {
        return false;
      }
    });
    if (!watched) err.write(`svc-runner: note: ${root} is not on this runner's watch list; the line is written but not sent until the project is connected\n`);
  } catch {
    // no readable runner.json: the line is written all the same
  }
  return 0;
}
