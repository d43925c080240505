// The hook's cache of enabled triggers' verification material (docs/performance.md, Inbound triggers):
// the row and its decrypted secrets (as HMAC keys), by publicId, so a delivery — and above all a refused
// one — costs no lookup query. What keeps it correct:
//   - It only ever serves ENABLED triggers; unknown and disabled ids always go to the database, so a 404
//     takes the same time whether or not the id exists (spec: Inbound trigger responses).
//   - It never decides an acceptance: hook.ts records a delivery only if the trigger row's version
//     (xmin, new on every UPDATE) is still the one the cached entry was read at, in the same statement
//     that records it; if not, the entry is dropped and the request is checked again from the database.
//     So a disabled, deleted, rotated or edited trigger is refused at once, on every process.
//   - Entries are dropped when the row changes: in this process synchronously by the route that changed
//     it (invalidate), in the others by the svc_trigger_changed notification (sql/0018), and in any case
//     after TTL_MS. A load that raced with an invalidation is not stored (generation counter).
// Until another process hears of a change, its stale entry can at worst answer 401 where the database
// would now answer 404 (a just-disabled trigger, bad signature) or refuse a just-rotated trigger's NEW
// secret; it never accepts what the database would refuse.
import type { KeyObject } from 'node:crypto';
import { TtlCache } from '../lib/ttl-cache.ts';
import type { TriggerRow } from './triggers.ts';

export const TRIGGER_CHANGED_CHANNEL = 'svc_trigger_changed';
const TTL_MS = 10_000;
const MAX_ENTRIES = 1000;

export interface CachedTrigger {
  row: TriggerRow;
  /** The row version (xmin) it was read at: hook.ts records only while it is still current. */
  version: string;
  /** Decrypted: the current secret, and the previous one with the end of its overlap (ms), or null when none decrypts. */
  secrets: { current: KeyObject; previous: KeyObject | null; previousUntilMs: number } | null;
}

export class TriggerCache extends TtlCache<CachedTrigger> {
  constructor(ttlMs = TTL_MS, maxEntries = MAX_ENTRIES, now: () => number = Date.now) {
    super(ttlMs, maxEntries, now);
  }

  /** Keep an enabled trigger, unless something was invalidated since `mark` (the read may predate it). */
  set(publicId: string, value: CachedTrigger, mark: number): void {
    if (value.row.enabled) this.keep(publicId, value, mark);
  }

  /** The trigger changed (or: anything may have, when no id): drop it, and any read under way. */
  invalidate(triggerId?: string): void {
    this.drop(triggerId === undefined ? undefined : (v) => v.row.id === triggerId);
  }
}
