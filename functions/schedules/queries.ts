// The schedules API's statements (functions/schedules/routes.ts reads as validate → call → present).
// Rows are project_schedules (sql/0012_project_schedules.sql); the runner's own claims stay in runner.ts.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { ScheduleRow } from './schedules.ts';
import type { ScheduleSettings } from './schema.ts';

export const listSchedules = (q: Queryable, projectId: string) =>
  q.query<ScheduleRow>(sql`select * from project_schedules where project_id = ${projectId} order by created_at, id`);

export async function scheduleRow(q: Queryable, projectId: string, scheduleId: string, lock = false): Promise<ScheduleRow | null> {
  const [row] = await q.query<ScheduleRow>(
    lock
      ? sql`select * from project_schedules where id = ${scheduleId} and project_id = ${projectId} for update`
      : sql`select * from project_schedules where id = ${scheduleId} and project_id = ${projectId}`,
  );
  return row ?? null;
}

export async function insertSchedule(q: Queryable, s: { id: string; projectId: string; createdBy: string; nextRunAt: Date | null } & ScheduleSettings): Promise<void> {
  await q.query(sql`
    insert into project_schedules (id, project_id, name, cron, timezone, skill, args, profile, model, output, enabled, next_run_at, created_by,
                                   target, target_tags, queue_timeout_minutes, retry_on_runner_loss, cap_usd)
    values (${s.id}, ${s.projectId}, ${s.name}, ${s.cron}, ${s.timezone}, ${s.skill}, ${sql.json(s.args)}, ${s.profile},
            ${s.model}, ${s.output}, ${s.enabled}, ${s.nextRunAt}, ${s.createdBy},
            ${s.target}, ${sql.json(s.targetTags)}, ${s.queueTimeoutMinutes}, ${s.retryOnRunnerLoss}, ${s.capUSD})`);
}

/**
 * Saves a schedule's settings. `timing` (on/off, cron or zone changed): the pending time becomes
 * `nextRunAt`; `enabling` resets the failure count; turning it on clears the reason it was turned off.
 */
export async function updateSchedule(q: Queryable, id: string, s: ScheduleSettings, change: { timing: boolean; enabling: boolean; nextRunAt: Date | null }): Promise<void> {
  await q.query(sql`
    update project_schedules
       set name = ${s.name}, cron = ${s.cron}, timezone = ${s.timezone}, skill = ${s.skill}, args = ${sql.json(s.args)},
           profile = ${s.profile}, model = ${s.model}, output = ${s.output}, enabled = ${s.enabled},
           target = ${s.target}, target_tags = ${sql.json(s.targetTags)}, queue_timeout_minutes = ${s.queueTimeoutMinutes},
           retry_on_runner_loss = ${s.retryOnRunnerLoss}, cap_usd = ${s.capUSD},
           next_run_at = case when ${change.timing} then ${change.nextRunAt}::timestamptz else next_run_at end,
           disabled_reason = case when ${s.enabled} then null else disabled_reason end,
           consecutive_failures = case when ${change.enabling} then 0 else consecutive_failures end,
           updated_at = now()
     where id = ${id}`);
}

export async function deleteSchedule(q: Queryable, id: string): Promise<void> {
  await q.query(sql`delete from project_schedules where id = ${id}`);
}
