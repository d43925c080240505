// The statements of a project's pool (functions/projects/pool-routes.ts; sql/0030 project_runners): its
// runners as the API lists them, and adding, changing and removing a member.
import { POOL_CAPABILITY } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { onlineSql } from '../runners/presence.ts';

export interface PoolRunnerRow {
  runner_id: string;
  name: string;
  primary: boolean;
  online: boolean;
  tags: string[];
  root_path: string | null;
  root_state: 'ok' | 'unchecked' | 'failed' | null;
  root_message: string | null;
  max_concurrent_runs: number | null;
  running_runs: number | null;
  takes_pool_runs: boolean;
}

const runnerFields = sql`r.id as runner_id, r.name, ${onlineSql} as online, r.tags, r.max_concurrent_runs, r.running_runs,
  r.capabilities @> ${sql.json([POOL_CAPABILITY])}::jsonb as takes_pool_runs`;

/** The primary runner (when the project has one) first, then the members by name. */
export const poolRunners = (q: Queryable, projectId: string) =>
  q.query<PoolRunnerRow>(sql`
    select * from (
      select ${runnerFields}, true as primary, p.root_path, p.root_check as root_state, p.root_check_message as root_message
        from projects p join runners r on r.id = p.runner_id where p.id = ${projectId}
      union all
      select ${runnerFields}, false as primary, m.root_path, m.root_state, m.root_message
        from project_runners m join runners r on r.id = m.runner_id where m.project_id = ${projectId}
    ) x order by x.primary desc, lower(x.name), x.runner_id`);

/** A member's root as stored; null when the runner is no member of the project's pool. */
export async function poolMember(q: Queryable, projectId: string, runnerId: string): Promise<{ root_path: string; root_state: string; root_message: string | null } | null> {
  const [m] = await q.query<{ root_path: string; root_state: string; root_message: string | null }>(sql`
    select root_path, root_state, root_message from project_runners where project_id = ${projectId} and runner_id = ${runnerId}`);
  return m ?? null;
}

/** Add a runner to the pool or change its root (with the check's result). */
export async function setPoolMember(q: Queryable, projectId: string, runnerId: string, rootPath: string, state: 'ok' | 'unchecked', message: string | null): Promise<void> {
  await q.query(sql`
    insert into project_runners (project_id, runner_id, root_path, root_state, root_message) values (${projectId}, ${runnerId}, ${rootPath}, ${state}, ${message})
    on conflict (project_id, runner_id) do update set root_path = excluded.root_path, root_state = excluded.root_state, root_message = excluded.root_message`);
}

/** Remove a runner from the pool; false when it was none. */
export async function removePoolMember(q: Queryable, projectId: string, runnerId: string): Promise<boolean> {
  const [gone] = await q.query(sql`delete from project_runners where project_id = ${projectId} and runner_id = ${runnerId} returning 1`);
  return Boolean(gone);
}

/** The roots on a runner of other projects, as primary root or pool member: a new root must overlap none. */
export const rootsOnRunner = (q: Queryable, runnerId: string, except: string) =>
  q.query<{ name: string; root_path: string }>(sql`
    select name, root_path from projects where runner_id = ${runnerId} and root_path is not null and id <> ${except}
    union all
    select p.name, m.root_path from project_runners m join projects p on p.id = m.project_id where m.runner_id = ${runnerId} and m.project_id <> ${except}`);
