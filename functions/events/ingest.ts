// The ingest pipeline for runner events (DESIGN §3; docs/architecture.md, "A runner event"). The hub
// (runners/socket.ts) hands it each `events` frame; it returns once the batch is safe, and only then is
// the runner acked. For one batch, in this order:
//   1. the events of each sink's kinds are picked out (sinks.ts lists the sinks, sink.ts the rule);
//   2. one transaction stores the rows in `runner_events` — idempotently, on (runner, event id), so a
//      re-sent event is stored once — and runs the 'transaction' sinks (outbox, notifications) on it;
//      a batch none of them wants is stored by its single insert, which is its own transaction — one
//      shared with the other runners' batches waiting meanwhile (ingest-group.ts: group commit);
//   3. after commit, the 'after-commit' sinks run one after another (skill runs, cost, fleet notices).
// A failure anywhere leaves the batch unacked: the runner keeps it spooled and sends it again, whole, and
// every sink sees it again (each is idempotent). A process that dies before the commit stored nothing;
// one that dies after it is completed by the re-send.
import type { RunnerEvent } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable, Sql } from '../lib/db/index.ts';
import { storeGrouped } from './ingest-group.ts';
import { kindMatcher } from './sink.ts';
import type { Batch, Sink } from './sink.ts';
import { SINKS } from './sinks.ts';

/**
 * A number with an exponent of three digits or more in a frame's text: a number token where JSON puts a
 * value (after `:`, `,`, `[` or white space). Inside a string only such text matches too (`"a,1e400"`),
 * which costs the slower way; a git SHA or base64 (`"3e1234…"`) no longer does.
 */
const BIG_EXPONENT = /[:,[\s]-?\d+(?:\.\d+)?[eE][+-]?\d{3}/;

type Matched = { sink: Sink; wants: (kind: string) => boolean };
const matchers = new WeakMap<readonly Sink[], Matched[]>();
const matched = (sinks: readonly Sink[]) => {
  let m = matchers.get(sinks);
  if (!m) matchers.set(sinks, (m = sinks.map((sink) => ({ sink, wants: kindMatcher(sink.kinds) }))));
  return m;
};

function insertRows(q: Queryable, runnerId: string, batch: Sql) {
  return q.query(sql`
    insert into runner_events (runner_id, event_id, source, kind, ts, payload)
    select ${runnerId}, x.id, x.source, x.kind, x.ts, x.payload
      from jsonb_to_recordset(${batch}) as x(id text, source text, kind text, ts timestamptz, payload jsonb)
    on conflict (runner_id, event_id) do nothing`);
}

/**
 * Store a batch and feed it to the sinks (see the header). `frameText`, the `events` frame as received
 * (already validated into `events`), goes to the database as it is, which takes the events out of it:
 * this process does not serialise its parsed copy again.
 */
export async function ingestEvents(db: Db, runnerId: string, events: RunnerEvent[], frameText?: string, sinks: readonly Sink[] = SINKS): Promise<void> {
  const work: { sink: Sink; batch: Batch }[] = [];
  for (const { sink, wants } of matched(sinks)) {
    const mine = events.filter((e) => wants(e.kind));
    if (mine.length) work.push({ sink, batch: { runnerId, events: mine } });
  }
  const inTransaction = work.filter((w) => w.sink.phase === 'transaction');
  const store = async (rows: Sql): Promise<void> => {
    if (inTransaction.length === 0) return void (await insertRows(db, runnerId, rows));
    await db.transaction(async (tx) => {
      await insertRows(tx, runnerId, rows);
      for (const { sink, batch } of inTransaction) if (sink.phase === 'transaction') await sink.handle(tx, batch);
    });
  };
  // Numbers are where the database and JSON.parse read the same text differently: 1e400 is Infinity
  // here (stored as null, as JSON.stringify writes it) but 400 digits there, and numeric refuses what
  // is beyond its range. So a frame with a three-digit exponent anywhere (or an "e123" inside a
  // string: rare, and then merely slower) goes through the parsed copy, and so does a frame the
  // database refuses as out of range (22003: a literal of more digits than numeric holds) — the whole
  // step again, as the refusal ended its transaction.
  if (frameText === undefined || BIG_EXPONENT.test(frameText)) {
    await store(sql.json(events));
  } else {
    const alone = () =>
      store(sql`(${sql.jsonText(frameText)} -> 'events')`).catch((err: unknown) => {
        if ((err as { code?: unknown }).code !== '22003') throw err;
        return store(sql.json(events));
      });
    // Rows alone in their transaction are stored with other runners' frames waiting meanwhile (ingest-group.ts).
    await (inTransaction.length === 0 ? storeGrouped(db, runnerId, frameText, alone) : alone());
  }
  for (const { sink, batch } of work) if (sink.phase === 'after-commit') await sink.handle(db, batch);
}
