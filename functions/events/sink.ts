// What a consumer of runner events is (docs/architecture.md, "A runner event"): a sink names the event
// kinds it handles and when it runs, and ingest.ts calls it for each batch that holds such events.
//   'transaction'   in the transaction that stores the batch's rows: what it writes exists exactly when
//                   the events do (outbox envelopes, notifications). It gets the transaction, never the pool.
//   'after-commit'  once the rows are committed, before the runner is acked: a failure leaves the batch
//                   unacked, so the runner sends it again and the sink runs again.
// Either way a sink must be idempotent: a batch stored but not acked (a crash, a lost ack) is sent again
// whole, and every sink sees its events again.
import type { RunnerEvent } from '../../protocol/frames.ts';
import type { Db, Queryable } from '../lib/db/index.ts';

/** One runner's batch, as the sink is given it: only the kinds it asked for, in the order received. */
export interface Batch {
  runnerId: string;
  events: RunnerEvent[];
}

interface SinkBase {
  /** For logs and docs: what the sink feeds. */
  name: string;
  /** Event kinds it handles: exact names (`pane.quota_hit`) or a family (`slot.*`). */
  kinds: readonly string[];
}

export type Sink =
  | (SinkBase & { phase: 'transaction'; handle(tx: Queryable, batch: Batch): Promise<unknown> })
  | (SinkBase & { phase: 'after-commit'; handle(db: Db, batch: Batch): Promise<unknown> });

/** Whether `kind` is one of `kinds` (exact, or `family.*` for every kind that starts `family.`). */
export function kindMatcher(kinds: readonly string[]): (kind: string) => boolean {
  const exact = new Set(kinds.filter((k) => !k.endsWith('.*')));
  const families = kinds.filter((k) => k.endsWith('.*')).map((k) => k.slice(0, -1));
  return (kind) => exact.has(kind) || families.some((f) => kind.startsWith(f));
}
