// The database port (DESIGN §2): one small interface above PGlite, postgres.js and Neon, so every
// query and migration runs unchanged on all three. SQL stays SQL: a tagged template collects values
// as $n parameters, and a nested sql`` fragment is spliced in with its parameters renumbered.
export type Row = Record<string, unknown>;

export class Sql {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}

  /** Flatten into text with $1…$n and the matching parameter list. */
  compile(): { text: string; params: unknown[] } {
    const params: unknown[] = [];
    const walk = (q: Sql): string => {
      let text = q.strings[0];
      q.values.forEach((value, i) => {
        if (value instanceof Sql) text += walk(value);
        else {
          params.push(value);
          text += `$${params.length}`;
        }
        text += q.strings[i + 1];
      });
      return text;
    };
    return { text: walk(this), params };
  }
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  return new Sql(strings, values);
}

/** Trusted SQL text (identifiers chosen by our code, never by a request). */
sql.raw = (text: string): Sql => new Sql([text], []);

/** Join fragments with a separator, e.g. a list of values or conditions. */
sql.join = (parts: Sql[], separator: string): Sql => {
  if (parts.length === 0) return sql.raw('');
  const strings = ['', ...parts.slice(1).map(() => separator), ''];
  return new Sql(strings, parts);
};


/**
 * A jsonb value: JSON text bound as a text parameter, then cast. The drivers disagree on how they
 * bind a JS value to a jsonb parameter (postgres.js JSON-encodes strings, PGlite sends them raw), so
 * jsonb values are always written through this.
 */
sql.json = (value: unknown): Sql => sql.jsonText(value === undefined ? null : JSON.stringify(value));

/** A jsonb value from JSON text as it arrived (a runner's frame): the database parses it, nothing re-serialises it. */
sql.jsonText = (text: string | null): Sql => new Sql(['', '::text::jsonb'], [text]);

export interface Queryable {
  query<T = Row>(q: Sql): Promise<T[]>;
  /** Several statements without parameters (migrations, the seed). */
  exec(text: string): Promise<void>;
  /**
   * Only on a transaction's Queryable: run `hook` at the end of the transaction, after its function
   * returned and just before COMMIT (hooks in the order given; a hook may add more). The event list takes
   * its commit-order lock there (functions/event-list/store.ts), so the lock is held for the insert and
   * the commit alone.
   */
  beforeCommit?(hook: () => Promise<void>): void;
}

/** Run a transaction's function with beforeCommit available on `tx`, then the hooks it registered. */
export async function withCommitHooks<T>(tx: Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const hooks: (() => Promise<void>)[] = [];
  const result = await fn({ query: (q) => tx.query(q), exec: (text) => tx.exec(text), beforeCommit: (hook) => void hooks.push(hook) });
  for (let i = 0; i < hooks.length; i++) await hooks[i]();
  return result;
}

export interface Db extends Queryable {
  readonly driver: 'pglite' | 'postgres' | 'neon';
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Subscribe to NOTIFY on a channel; returns the unsubscribe function. `onListen` is called each time
   * the subscription is (re)made after the first: notifications sent meanwhile were lost.
   */
  listen(channel: string, onPayload: (payload: string) => void, onListen?: () => void): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

export const quoteIdent = (name: string) => '"' + name.replace(/"/g, '""') + '"';
