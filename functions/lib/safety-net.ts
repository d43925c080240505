// The process-level safety net (docs/operations.md, "Errors that escape"): the server's handler for
// errors nobody caught (`uncaughtException`, `unhandledRejection`).
// How broad it is, and why:
//   - Work marked with runContained() (each webhook delivery attempt) is contained: an
//     error escaping from it is logged at ERROR with its stack and the process keeps running. That work
//     talks to receivers that anyone with a webhook's DNS controls, its state lives in the database
//     under leases (an attempt that never finishes is retried when its lease expires), and an exit
//     would come back with the retry after every restart — the receiver would own our uptime.
//   - Any other escaped error is logged the same way and the process exits with status 1, as Node
//     would: its origin is unknown, in-memory state (the runner hub, sessions, the scheduler) may be
//     half-updated, and a supervisor restart is the safer answer.
// Nothing secret is logged: credentials and query strings of URLs in the message and stack are masked.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from './log.ts';

export interface Contained {
  /** What the work is, for the log line ("webhook delivery"). */
  area: string;
  /** Extra log fields naming the work (ids only, never secrets). */
  fields?: Record<string, unknown>;
}

const storage = new AsyncLocalStorage<Contained>();

// The tracking costs every request: while an AsyncLocalStorage is enabled, Node runs a hook for every
// promise, timer and socket the process creates (about a tenth of GET /health's throughput:
// docs/performance.md). So it is on only while contained work runs, and for CONTAIN_LINGER_MS after the
// last of it ends (a callback it scheduled may still run, and throw, a little later; a delivery attempt
// opens a connection of its own and closes it when it ends). Off, getStore() answers undefined.
export const CONTAIN_LINGER_MS = 30_000;
let lingerMs = CONTAIN_LINGER_MS;
let running = 0;
let lingering: NodeJS.Timeout | undefined;

const release = () => {
  if (--running === 0) linger();
};

const linger = () => {
  clearTimeout(lingering);
  // New work clears this timer (runContained), so it fires only with nothing running.
  lingering = setTimeout(() => {
    lingering = undefined;
    storage.disable();
  }, lingerMs);
  lingering.unref();
};

/**
 * Run `fn` — and every callback, timer and promise it starts — as contained work. Work that returns a
 * promise runs until the promise settles; other work until `fn` returns (what it scheduled is still
 * contained, within the linger).
 */
export function runContained<T>(work: Contained, fn: () => T): T {
  running++;
  clearTimeout(lingering);
  lingering = undefined;
  let result: T;
  try {
    result = storage.run(work, fn);
  } catch (err) {
    release();
    throw err;
  }
  if (result instanceof Promise) result.then(release, release);
  else release();
  return result;
}

/** Whether contained work is being tracked now (tests), and the linger to use (tests shorten it). */
export const containmentTracking = (): boolean => running > 0 || lingering !== undefined;
export function setContainLinger(ms: number): void {
  lingerMs = ms;
  if (lingering) linger();
}

/** URL credentials and query strings (where tokens tend to be) masked in a text. */
export const maskUrls = (text: string) =>
  text.replace(/\b([a-z][\w+.-]*:\/\/)[^\s/@]*@/gi, '$1***@').replace(/\b(https?:\/\/[^\s?#]*)\?[^\s#)'"]*/gi, '$1?***');

function describe(err: unknown): { error: string; stack?: string } {
  if (err instanceof Error) return { error: maskUrls(`${err.name}: ${err.message}`), stack: err.stack ? maskUrls(err.stack) : undefined };
  return { error: maskUrls(String(err)) };
}

/**
 * Install the handlers; returns a function that removes them. `exit` is process.exit unless a test
 * passes its own.
 */
export function installSafetyNet(log: Logger, exit: (code: number) => void = (code) => process.exit(code)): () => void {
  const onError = (err: unknown, origin: string) => {
    const work = storage.getStore();
    const fields = { origin, ...describe(err) };
    if (work) {
      log.error(`an error escaped from ${work.area}; the server keeps running`, { ...work.fields, ...fields });
      return;
    }
    log.error('an error escaped and nothing contains it; the process exits', fields);
    exit(1);
  };
  const onException = (err: Error, origin: string) => onError(err, origin);
  const onRejection = (reason: unknown) => onError(reason, 'unhandledRejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
