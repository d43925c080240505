// The statements of GET /api/schedules (functions/jobs/routes.ts reads as validate → call → present):
// the caller's projects' schedules, and each system job's latest run. The scheduler's own claims stay in
// scheduler.ts.
import type { User } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { ScheduleRow } from '../schedules/schedules.ts';

/** The schedules of the projects `user` is a member of (instance admins: every project's). */
export const schedulesOfProjects = (q: Queryable, user: Pick<User, 'id' | 'instanceAdmin'>) =>
  q.query<ScheduleRow & { project_name: string }>(sql`
    select s.*, p.name as project_name from project_schedules s join projects p on p.id = s.project_id
     where ${user.instanceAdmin ? sql`true` : sql`s.project_id in (select m.project_id from project_members m where m.user_id = ${user.id})`}
     order by p.name, s.created_at, s.id`);

export interface LastRun {
  job: string;
  scheduled_for: Date;
  status: string;
  attempt: number;
  started_at: Date;
  finished_at: Date | null;
  result: unknown;
  error: string | null;
}

/** The latest run of each of the `jobs` that ran at all. */
export const lastRuns = (q: Queryable, jobs: string[]) =>
  q.query<LastRun>(sql`
    select distinct on (job) job, scheduled_for, status, attempt, started_at, finished_at, result, error
      from job_runs where job = any(${jobs})
     order by job, scheduled_for desc`);
