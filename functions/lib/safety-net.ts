// The process-level safety net (docs/operations.md, "Errors that escape"): the server's handler for
// errors nobody caught (`uncaughtException`, `unhandledRejection`).
// How broad it is, and why:
//   - Work marked with runContained() (the webhook worker and each delivery attempt) is contained: an
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

/** Run `fn` — and every callback, timer and promise it starts — as contained work. */
export const runContained = <T>(work: Contained, fn: () => T): T => storage.run(work, fn);

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
