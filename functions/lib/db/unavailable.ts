// A database that cannot be reached right now (PostgreSQL restarting or down, a network fault) is not a
// bug in the request: the API answers 503 `database_unavailable` with Retry-After, at once rather than
// hanging, and the request can be sent again (docs/operations.md "When PostgreSQL goes away").
import { HttpError } from '../errors.ts';

/** Node socket errors, postgres.js connection errors, and PostgreSQL's own "shutting down / starting up". */
const CODES = new Set([
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
