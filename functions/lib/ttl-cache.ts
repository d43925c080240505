// A small in-process cache in front of a database read, kept correct by invalidation (a route that
// changed the row, and a NOTIFY from every other process) and bounded by a time to live and a size.
// The generation counter closes the race between a read and an invalidation: take mark() before the
// read, pass it to set(); if anything was invalidated meanwhile the answer (which may predate the
// change) is not kept. Used by the hook's trigger cache (functions/triggers/cache.ts) and the
// credentials' cache (functions/auth/principal-cache.ts).

interface Entry<V> {
  value: V;
  expiresAt: number;
}

export class TtlCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Call before reading from the database; pass the answer to set(). */
  mark(): number {
    return this.generation;
  }

  /** Keep a value read after `mark`, unless something was invalidated since; at most until `untilMs` when given. */
  protected keep(key: string, value: V, mark: number, untilMs = Infinity): void {
    if (mark !== this.generation) return;
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) {
      this.entries.delete(this.entries.keys().next().value as string); // the oldest
    }
    this.entries.set(key, { value, expiresAt: Math.min(this.now() + this.ttlMs, untilMs) });
  }

  /** Drop the entries `which` picks (all when none), and any read under way. */
  protected drop(which?: (value: V) => boolean): void {
    this.generation++;
    if (!which) return this.entries.clear();
    for (const [k, e] of this.entries) if (which(e.value)) this.entries.delete(k);
  }

  get size(): number {
    return this.entries.size;
  }
}
