// The one-file runner's loader: the ES module that dist/svc-runner.mjs is (scripts/runner-pack.mjs). The runner
// itself is the comment of the function svcRunnerBody at the top of that file, a CommonJS-style function built
// from runner/cli.ts. Node 20 keeps no compiled code of an ES module between runs, so every command used to
// compile the whole 690 KB file before it read its arguments. Compiled here with node:vm instead, a command
// reuses the code V8 made for it in an earlier run, kept in $XDG_CACHE_HOME/svc/compile-cache/ (docs/runner.md,
// "Compile cache"). The source given to V8 is a slice of this module's own source text, not a copy, so a
// daemon holds the file's text once, as before.
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { cacheDir, type Env } from './paths.ts';

/** Commands whose compiled code is not kept: the daemon runs for days and nobody waits on its start. */
const UNCACHED = new Set(['run']);
/** When a command that runs long (exec-run waits on its agent) writes the cache it lacked, if it has not exited. */
export const SAVE_AFTER_MS = 1000;

/** Where the commands' compiled code is kept: $XDG_CACHE_HOME/svc/compile-cache/. */
export const compileCacheDir = (env: Env) => join(cacheDir(env), 'compile-cache');

export interface CachePlan {
  dir: string;
  /** The command's cache files start with this; older ones are removed when a new one is written. */
  prefix: string;
  file: string;
}

/**
 * Where this command's compiled code is kept, or null when it is not: SVC_RUNNER_COMPILE_CACHE=0, the daemon,
 * a platform without user ids. The name carries what V8 itself does not check: the body's hash (V8 checks
 * only the source's length) and the runner file's size and modification time (a hand-edited file), besides
 * Node's version (V8 checks its own and its flags, and rejects a cache made for others).
 */
export function cachePlan(argv: readonly string[], env: Env, self: string, bodyHash: string): CachePlan | null {
  if (env.SVC_RUNNER_COMPILE_CACHE === '0' || typeof process.getuid !== 'function') return null;
  const arg = argv[0] ?? '';
  const command = /^[a-z][a-z-]{0,39}$/.test(arg) ? arg : 'other';
  if (UNCACHED.has(command)) return null;
  let st;
  try {
    st = statSync(self);
  } catch {
    return null;
  }
  const dir = compileCacheDir(env);
  const prefix = `${command}.`;
  const key = [bodyHash, st.size.toString(36), Math.trunc(st.mtimeMs).toString(36), process.version, process.arch].join('.');
  return { dir, prefix, file: join(dir, `${prefix}${key}.bin`) };
}

/** Owned by this user and writable by no one else: V8 runs what a cache file holds as this user's code. */
const ownOnly = (st: { uid: number; mode: number }) => st.uid === process.getuid!() && (st.mode & 0o022) === 0;

/** A cache file: `svcC`, its generation (0 for the first run's, then one more for each run that added to it),
 *  three zero bytes, and V8's data (eight bytes in, as V8 wants it aligned). */
const MAGIC = 0x43637673;
const HEADER = 8;
/**
 * How many runs write the cache: the first, and the next ones add the functions they compiled that it lacked.
 * A command's paths differ from run to run (`usage`: a full scan the first time, then the index, then an append
 * merged), and V8 can only save what has been compiled. After that, a run only reads it.
 */
export const GENERATIONS = 3;

export interface Cached {
  data: Buffer;
  generation: number;
}

/** The cache, or undefined when there is none or it cannot be trusted (another owner, writable by others). */
export function readCache(plan: CachePlan): Cached | undefined {
  try {
    if (!ownOnly(statSync(plan.dir))) return undefined;
    const fd = openSync(plan.file, 'r');
    try {
      if (!ownOnly(fstatSync(fd))) return undefined;
      const bytes = readFileSync(fd);
      return bytes.length > HEADER && bytes.readUInt32LE(0) === MAGIC ? { data: bytes.subarray(HEADER), generation: bytes[4] } : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/**
 * Writes the cache whole (a temporary file renamed over it, 0600 in a 0700 directory) and removes the
 * command's older ones. A cache is an optimisation: when it cannot be written (a read-only home, a full disk,
 * a directory someone else owns) the command runs as it would have, and the next run compiles again.
 */
export function writeCache(plan: CachePlan, data: Buffer, generation: number): boolean {
  try {
    mkdirSync(plan.dir, { recursive: true, mode: 0o700 });
    if (!ownOnly(statSync(plan.dir))) return false;
    const tmp = `${plan.file}.${process.pid}.tmp`;
    const header = Buffer.alloc(HEADER);
    header.writeUInt32LE(MAGIC, 0);
    header[4] = generation;
    writeFileSync(tmp, Buffer.concat([header, data]), { mode: 0o600 });
    renameSync(tmp, plan.file);
    const name = basename(plan.file);
    for (const f of readdirSync(plan.dir)) {
      if (!f.startsWith(plan.prefix) || f === name) continue;
      try {
        unlinkSync(join(plan.dir, f));
      } catch {
        // another command of the same name removed it first
      }
    }
    return true;
  } catch {
    return false;
  }
}

/** Compiles `source` (the body, on `line` of `file` after `column` characters) with this command's cache, and runs it. */
export function boot(opts: { source: string; file: string; url: string; line: number; column: number; hash: string; argv: readonly string[]; env: Env }): void {
  const plan = cachePlan(opts.argv, opts.env, opts.file, opts.hash);
  const cached = plan ? readCache(plan) : undefined;
  const script = new vm.Script(opts.source, {
    filename: opts.file,
    lineOffset: opts.line,
    columnOffset: opts.column,
    cachedData: cached?.data,
    // import() in the body (node:sqlite) resolves as in the file itself; before Node 20.12 it rejects, and the
    // one caller falls back to the sqlite3 shell, as it does where node:sqlite does not exist (Node < 22.5).
    ...(vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER ? { importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER } : {}),
  });
  // None, or rejected by V8 (another V8, other flags, damaged): written anew. Used: written again by the next
  // GENERATIONS - 1 runs, with what they compiled besides.
  const generation = cached && !script.cachedDataRejected ? cached.generation + 1 : 0;
  if (plan && generation < GENERATIONS) {
    // After the run, so the cache holds the functions it compiled as they were needed, not only the top level;
    // and only after a run that succeeded (`svc-runner frobnicate` exits 2 and leaves no cache behind).
    let saved = false;
    const save = () => {
      if (saved) return;
      saved = true;
      writeCache(plan, script.createCachedData(), generation);
    };
    process.once('exit', (code) => code === 0 && save());
    setTimeout(save, SAVE_AFTER_MS).unref();
  }
  const module = { exports: {} };
  (script.runInThisContext() as (...a: unknown[]) => void)(createRequire(opts.url), module, module.exports, opts.url);
}

declare function svcRunnerBody(): void;
declare const __SVC_BODY_HASH__: string;
declare const __SVC_BODY_HEAD__: string;
declare const __SVC_BODY_TAIL__: string;
declare const __SVC_BODY_LINE_OFFSET__: number;

/** The packed file's entry (esbuild.config.mjs, buildRunner): the body from the comment of svcRunnerBody. */
export function bootPacked(url: string): void {
  const text = svcRunnerBody.toString();
  if (!text.startsWith(__SVC_BODY_HEAD__) || !text.endsWith(__SVC_BODY_TAIL__)) throw new Error('svc-runner: this file is damaged (its body does not start or end where the loader expects); download it again');
  const source = text.slice(__SVC_BODY_HEAD__.length, text.length - __SVC_BODY_TAIL__.length);
  boot({ source, file: fileURLToPath(url), url, line: __SVC_BODY_LINE_OFFSET__, column: __SVC_BODY_HEAD__.length, hash: __SVC_BODY_HASH__, argv: process.argv.slice(2), env: process.env });
}
