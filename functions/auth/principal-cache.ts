// Who a personal API token or a browser session is, kept a few seconds per process so that a READ does
// not pay a second round trip to the database before its own statement (docs/security.md, "Credentials
// cache"; docs/performance.md, "The event list"). What keeps it correct:
//   - authenticate() consults it for safe methods (GET, HEAD, OPTIONS) only: every state-changing request
//     reads the credential from the database, so a revoked token or an ended session can change nothing
//     from the moment its change commits.
//   - Negative answers are never kept: a new token works at once.
//   - Every change that can end or alter a credential (a token revoked, expiring or deleted, a session
//     ended, a user deactivated, renamed or (no longer) instance admin) empties it: on every process by
//     the svc_auth_changed notification (sql/0042, fired by the database itself, so also for changes made
//     by hand or by `svc admin`), and a re-made listening connection (notifications may have been missed)
//     empties it too. A read that raced with such a change is not kept (the generation mark).
//   - In this process, the route that made such a change also empties it before it answers
//     (credentialsChanged): the notification comes asynchronously, and the caller's next read must not
//     beat it.
//   - In any case an entry lives at most TTL_MS, and never past the token's or session's own expiry.
// So a read with a just-revoked credential can succeed on another process only until that process hears
// the notification (milliseconds), or at worst for TTL_MS if the notification was lost.
import type { AppContext, CachedPrincipal, PrincipalStore } from '../lib/context.ts';
import { TtlCache } from '../lib/ttl-cache.ts';

export const AUTH_CHANGED_CHANNEL = 'svc_auth_changed';
export const PRINCIPAL_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export type { CachedPrincipal };

export class PrincipalCache extends TtlCache<CachedPrincipal> implements PrincipalStore {
  constructor(ttlMs = PRINCIPAL_TTL_MS, maxEntries = MAX_ENTRIES, now: () => number = Date.now) {
    super(ttlMs, maxEntries, now);
  }

  /** Keep a credential read after `mark`, until the TTL or its own expiry (ms; null = none). */
  set(key: string, value: CachedPrincipal, mark: number, expiresMs: number | null): void {
    this.keep(key, value, mark, expiresMs ?? Infinity);
  }

  /** A credential may have changed: forget them all, and any read under way. */
  invalidate(): void {
    this.drop();
  }
}

/** A route changed a credential (or a user): this process forgets them now; the others on the notification. */
export const credentialsChanged = (ctx: Pick<AppContext, 'principals'>): void => ctx.principals?.invalidate();
