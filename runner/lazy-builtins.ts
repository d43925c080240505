// Built-ins that some calls of a module need (hashing, running a CLI, a worker thread), loaded at the first
// call rather than when the module is evaluated (esbuild.config.mjs's lazyBuiltins loads an imported built-in
// there): `svc-runner usage` evaluates every runtime and the scan, and node:crypto, node:child_process and
// node:worker_threads took ~2, ~0.6 and ~0.4 ms of each such call to load (docs/performance.md, #41 part 2).
import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

/** SHA-256 of `s`, hex. */
export const sha256Hex = (s: string): string => (load('node:crypto') as typeof import('node:crypto')).createHash('sha256').update(s).digest('hex');

/** node:child_process. */
export const childProcess = (): typeof import('node:child_process') => load('node:child_process');

/** node:worker_threads. */
export const workerThreads = (): typeof import('node:worker_threads') => load('node:worker_threads');

/** A record reader's stamp of what it read: '' for nothing, else a hash of the list (no crypto when there is nothing). */
export const stampOf = (parts: readonly string[]): string => (parts.length ? sha256Hex(parts.join('\n')).slice(0, 32) : '');
