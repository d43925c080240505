// The runs API's statements (functions/runs/routes.ts reads as validate → call → present). Rows are
// skill_runs and skill_run_lines (written by runs/ingest.ts) and run_start_failures (runs/start-failures.ts).
import type { Principal } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { visibleProjects } from '../cost/queries.ts';
import type { FailedStartRow, RunDetailRow, RunRow } from './rows.ts';

const SUMMARY_COLUMNS = sql.raw(
  'r.id, r.runner_id, r.project_id, r.skill, r.args, r.output, r.profile_id, r.runtime, r.model, r.timeout_sec, r.state, r.error, r.branch, r.created_at, r.started_at, r.finished_at, r.updated_at, r.cost_usd, r.progress_lines, r.last_progress, r.reason, r.retry_of',
);

/**
 * A queued pool run's place in its project's queue (1 = next) and why it waits (runs/pool.ts keeps
 * waiting_reason); null columns for every other run. A run being sent to its runner (`dispatching`) is
 * still queued until the runner takes it, and says so, ahead of those still waiting.
 */
const QUEUE_JOIN = sql.raw(`
  left join lateral (
    select case when d.status = 'dispatching' then 'being sent to a runner' else d.waiting_reason end as queue_reason,
           (select count(*) from pool_runs e where e.project_id = d.project_id and e.status in ('queued', 'dispatching') and e.seq <= d.seq) as queue_position
      from pool_runs d where d.run_id = r.id and d.status in ('queued', 'dispatching')) q on true`);

/** One page and one more row (so the caller knows whether a next page exists), newest first. */
export const listFailedStarts = (q: Queryable, principal: Principal, f: { projectId?: string; before?: string; limit: number }) =>
  q.query<FailedStartRow>(sql`
    select f.* from run_start_failures f
     where ${visibleProjects(principal, sql`f.project_id`)}
       and ${f.projectId ? sql`f.project_id = ${f.projectId}` : sql`true`}
       and ${f.before ? sql`f.id < ${f.before}::bigint` : sql`true`}
     order by f.id desc limit ${f.limit + 1}`);

/** One page and one more row of the runs the principal can see (instance admins: all), newest first. */
export function listRuns(q: Queryable, principal: Principal, f: { projectId?: string; state?: string; skill?: string; before?: string; limit: number }) {
  const user = principal.user;
  const where = [
    user.instanceAdmin ? sql`true` : sql`exists (select 1 from project_members m where m.project_id = r.project_id and m.user_id = ${user.id})`,
    f.projectId ? sql`r.project_id = ${f.projectId}` : sql`true`,
    f.state ? sql`r.state = ${f.state}` : sql`true`,
    f.skill ? sql`r.skill = ${f.skill}` : sql`true`,
    f.before ? sql`(r.created_at, r.id) < (select created_at, id from skill_runs where id = ${f.before})` : sql`true`,
  ];
  return q.query<RunRow>(sql`
    select ${SUMMARY_COLUMNS}, q.queue_reason, q.queue_position from skill_runs r ${QUEUE_JOIN} where ${sql.join(where, ' and ')}
     order by r.created_at desc, r.id desc limit ${f.limit + 1}`);
}

export async function runRow(q: Queryable, runId: string): Promise<RunDetailRow | null> {
  const [r] = await q.query<RunDetailRow>(sql`select r.*, q.queue_reason, q.queue_position from skill_runs r ${QUEUE_JOIN} where r.id = ${runId}`);
  return r ?? null;
}

export const runProgress = (q: Queryable, runId: string) =>
  q.query<{ seq: number; text: string }>(sql`select seq, text from skill_run_lines where run_id = ${runId} order by seq`);
