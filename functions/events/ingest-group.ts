// Group commit of runner event batches (docs/performance.md "1,000 runners"). With many runners each
// sending small batches, one INSERT and one commit per `events` frame made PostgreSQL's commits the
// limit (WAL flushes; the pool's connections all busy with them, so command round trips queued behind).
// Frames that arrive while this process's earlier inserts are running wait for them and are then stored
// together by ONE statement — each row under its own runner, idempotently on (runner, event id) as
// before — and each frame's promise settles when that statement has committed, so its runner is acked
// only after its rows are safe, exactly as alone. Nothing waits when nothing else runs: a lone frame is
// stored at once by itself. When a group's statement fails (one frame the database refuses fails them
// all), every frame of it is stored by itself instead (`alone`, ingest.ts's own path): one bad frame
// never fails another's, and a failure of its own is its own. Only frames no 'transaction' sink wants
// are grouped (the sinks' work commits with each frame's rows: ingest.ts).
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';

/** Group statements running at once per database (the rest of the pool serves everything else). */
const IN_FLIGHT = 2;
/** Frames, and characters of frame text, one statement takes at most. */
const MAX_FRAMES = 100;
const MAX_CHARS = 4 * 1024 * 1024;

interface Item {
  runnerId: string;
  frameText: string;
  alone: () => Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

class Grouper {
  private queue: Item[] = [];
  private running = 0;

  constructor(private readonly db: Db) {}

  store(runnerId: string, frameText: string, alone: () => Promise<void>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ runnerId, frameText, alone, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.running < IN_FLIGHT && this.queue.length > 0) {
      let chars = 0;
      let n = 0;
      while (n < this.queue.length && n < MAX_FRAMES && (n === 0 || chars + this.queue[n].frameText.length <= MAX_CHARS)) chars += this.queue[n++].frameText.length;
      const group = this.queue.splice(0, n);
      this.running++;
      void this.write(group).finally(() => {
        this.running--;
        this.next();
      });
    }
  }

  private async write(group: Item[]): Promise<void> {
    if (group.length > 1) {
      // Each frame text is a validated JSON object (socket.ts parsed it): the array is valid JSON.
      const text = '[' + group.map((i) => `{"r":${JSON.stringify(i.runnerId)},"f":${i.frameText}}`).join(',') + ']';
      const stored = await this.db
        .query(sql`
          insert into runner_events (runner_id, event_id, source, kind, ts, payload)
          select g.r, x.id, x.source, x.kind, x.ts, x.payload
            from jsonb_to_recordset(${sql.jsonText(text)}) as g(r text, f jsonb)
            cross join lateral jsonb_to_recordset(g.f -> 'events') as x(id text, source text, kind text, ts timestamptz, payload jsonb)
          on conflict (runner_id, event_id) do nothing`)
        .then(
          () => true,
          () => false,
        );
      if (stored) return group.forEach((i) => i.resolve());
    }
    await Promise.all(group.map((i) => i.alone().then(i.resolve, i.reject)));
  }
}

const groupers = new WeakMap<Db, Grouper>();

/** Store one frame's rows (no 'transaction' sink wants them) with whatever other frames are waiting; `alone` stores it by itself. */
export function storeGrouped(db: Db, runnerId: string, frameText: string, alone: () => Promise<void>): Promise<void> {
  let g = groupers.get(db);
  if (!g) groupers.set(db, (g = new Grouper(db)));
  return g.store(runnerId, frameText, alone);
}
