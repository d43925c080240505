// A database that cannot be reached right now (PostgreSQL restarting or down, a network fault) is not a
// bug in the request: the API answers 503 `database_unavailable` with Retry-After, at once rather than
// hanging, and the request can be sent again (docs/operations.md "When PostgreSQL goes away").
import { HttpError } from '../errors.ts';

/** What a query refused at once by the circuit (lib/db/circuit.ts) fails with while the database is away. */
export const UNREACHABLE_CODE = 'DATABASE_UNREACHABLE';

/** Node socket errors, postgres.js connection errors, and PostgreSQL's own "shutting down / starting up". */
const CODES = new Set([
  UNREACHABLE_CODE,
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down)
]);

/** Seconds a client is told to wait before it tries again. */
export const RETRY_AFTER_SECONDS = 5;

export function isDatabaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code); // class 08: connection exception
}

export const databaseUnavailable = () =>
  new HttpError(503, 'database_unavailable', 'the database cannot be reached right now; try again shortly', undefined, { 'retry-after': String(RETRY_AFTER_SECONDS) });

/**
 * Run `fn` again, every `everyMs`, while it fails because the database cannot be reached, until
 * `deadline` (ms since the epoch); then its last error. For work that must be recorded once the
 * database is back (a runner's answer, a trigger delivery's outcome), never for a request's own
 * queries: those answer 503 at once.
 */
export async function whenReachable<T>(fn: () => Promise<T>, deadline: number, everyMs = 250): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() + everyMs > deadline) throw err;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}
