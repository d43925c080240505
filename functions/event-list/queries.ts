// The event list's statements (sql/0033_event_list.sql): a page after a cursor, one event, and the
// retention job's prefix delete.
import { visibleProjects } from '../cost/queries.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { Principal } from '../lib/context.ts';

export interface PageQuery {
  after: string | null;
  limit: number;
  types: string[] | null;
  projectId: string | null;
}

/**
 * One statement: how far retention has deleted (`horizon`, always one row) and, beside it, up to `limit`
 * events after `after` that the caller may see (a project's to its members, every one to instance admins;
 * an event with no project, Send test's, to instance admins only), in seq order. No event row: seq null.
 */
export function eventPage(q: Queryable, principal: Principal, p: PageQuery) {
  const where = [
    sql`e.seq > ${p.after ?? '0'}::bigint`,
    visibleProjects(principal, sql`e.project_id`),
    p.projectId ? sql`e.project_id = ${p.projectId}` : sql`true`,
    p.types ? sql`e.type in (select jsonb_array_elements_text(${sql.json(p.types)}))` : sql`true`,
  ];
  return q.query<{ horizon: string; seq: string | null; body: string | null }>(sql`
    select h.pruned_through::text as horizon, e.seq::text as seq, e.body
      from catalogue_events_horizon h
      left join lateral (select e.seq, e.body from catalogue_events e where ${sql.join(where, ' and ')} order by e.seq limit ${p.limit}) e on true
     where h.id = 1
     order by e.seq`);
}

export const eventRow = async (q: Queryable, id: string) =>
  (await q.query<{ project_id: string | null; body: string }>(sql`select project_id, body from catalogue_events where id = ${id}`))[0] ?? null;

const BATCH = 5000;

/**
 * Retention: delete the events stored more than `days` ago, as a prefix of the list (every seq up to the
 * newest such event), in batches, and move the horizon there first so a cursor inside the deleted part
 * answers 410 at once. Idempotent: a run taken over after a crash continues.
 */
export async function pruneEvents(db: Db, days: number, signal?: AbortSignal): Promise<number> {
  const [{ upto }] = await db.query<{ upto: string | null }>(sql`
    update catalogue_events_horizon h
       set pruned_through = greatest(h.pruned_through, coalesce((select max(seq) from catalogue_events where created_at < now() - make_interval(days => ${days})), 0))
     where h.id = 1
    returning h.pruned_through::text as upto`);
  let total = 0;
  for (;;) {
    signal?.throwIfAborted();
    const [{ n }] = await db.query<{ n: number }>(sql`
      with gone as (
        delete from catalogue_events where seq in (select seq from catalogue_events where seq <= ${upto}::bigint order by seq limit ${BATCH}) returning 1
      ) select count(*)::int as n from gone`);
    total += n;
    if (n < BATCH) return total;
  }
}
