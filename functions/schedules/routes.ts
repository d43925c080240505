// Project schedules API (docs/schedules.md): create, list, get, edit (also enable/disable), delete and
// run now. Project admins change and run them (audited); viewers and operators of the project read them;
// anyone else gets 404, and a schedule is found only through its own project's path.
import { randomUUID } from 'node:crypto';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { HttpError, json, notFound } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { nextTime, scheduleRow, settingsOf, toSchedule } from './schedules.ts';
import type { ScheduleRow } from './schedules.ts';
import { projectParams, scheduleCreate, scheduleParams, schedulePatch } from './schema.ts';
import type { ScheduleSettings } from './schema.ts';

const ADMIN = { projectRole: 'admin', param: 'projectId' } as const;
const READ = { projectRole: 'viewer', param: 'projectId' } as const;
const TAG = 'schedules';
type Params = { projectId: string; scheduleId: string };

async function getRow(q: Queryable, p: Params, lock = false): Promise<ScheduleRow> {
  const row = await scheduleRow(q, p.projectId, p.scheduleId, lock);
  if (!row) throw notFound('no such schedule');
  return row;
}

/** The pending time of an enabled schedule: its first time after now (a re-enabled one does not catch up). */
const pending = (ctx: AppContext, s: ScheduleSettings) => (s.enabled ? nextTime(s.cron, s.timezone, ctx.clock.now()) : null);

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/projects/:projectId/schedules',
    summary: "The project's schedules with their next run and last result",
    tag: TAG,
    access: READ,
    params: projectParams,
    async handler({ params }, ctx) {
      const rows = await ctx.db.query<ScheduleRow>(sql`select * from project_schedules where project_id = ${params.projectId} order by created_at, id`);
      return json({ schedules: rows.map(toSchedule) });
    },
  }),
  route({
    method: 'POST',
    path: '/api/projects/:projectId/schedules',
    summary: 'Create a schedule: a skill run on a cron expression in an IANA time zone, on behalf of its creator',
    tag: TAG,
    access: ADMIN,
    status: 201,
    params: projectParams,
    body: scheduleCreate,
    async handler({ principal, params, body, requestId }, ctx) {
      const id = randomUUID();
      const row = await audited(
        ctx.db,
        (r: ScheduleRow) => ({ actor: principal!, action: 'schedule.create', target: { type: 'schedule', id: r.id }, diff: { projectId: r.project_id, after: settingsOf(r) }, requestId }),
        async (tx) => {
          await tx.query(sql`
            insert into project_schedules (id, project_id, name, cron, timezone, skill, args, profile, model, output, enabled, next_run_at, created_by)
            values (${id}, ${params.projectId}, ${body.name}, ${body.cron}, ${body.timezone}, ${body.skill}, ${sql.json(body.args)}, ${body.profile},
                    ${body.model}, ${body.output}, ${body.enabled}, ${pending(ctx, body)}, ${principal!.user.id})`);
          return getRow(tx, { projectId: params.projectId, scheduleId: id });
        },
      );
      ctx.schedules?.kick();
      return json(toSchedule(row), { status: 201 });
    },
  }),
  route({
    method: 'GET',
    path: '/api/projects/:projectId/schedules/:scheduleId',
    summary: 'One schedule with its next run and last result',
    tag: TAG,
    access: READ,
    params: scheduleParams,
    handler: async ({ params }, ctx) => json(toSchedule(await getRow(ctx.db, params))),
  }),
  route({
    method: 'PATCH',
    path: '/api/projects/:projectId/schedules/:scheduleId',
    summary: 'Edit a schedule (its project is fixed); enabled: true/false turns it on or off, and turning it on resets its failure count',
    tag: TAG,
    access: ADMIN,
    params: scheduleParams,
    body: schedulePatch,
    async handler({ principal, params, body, requestId }, ctx) {
      const { after } = await audited(
        ctx.db,
        (r: { before: ScheduleRow; after: ScheduleRow }) => ({ actor: principal!, action: 'schedule.update', target: { type: 'schedule', id: params.scheduleId }, diff: { before: settingsOf(r.before), after: settingsOf(r.after) }, requestId }),
        async (tx) => {
          const before = await getRow(tx, params, true);
          const given = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as Partial<ScheduleSettings>;
          const s: ScheduleSettings = { ...settingsOf(before), ...given };
          const timing = s.enabled !== before.enabled || s.cron !== before.cron || s.timezone !== before.timezone;
          const enabling = s.enabled && !before.enabled;
          await tx.query(sql`
            update project_schedules
               set name = ${s.name}, cron = ${s.cron}, timezone = ${s.timezone}, skill = ${s.skill}, args = ${sql.json(s.args)},
                   profile = ${s.profile}, model = ${s.model}, output = ${s.output}, enabled = ${s.enabled},
                   next_run_at = case when ${timing} then ${pending(ctx, s)}::timestamptz else next_run_at end,
                   disabled_reason = case when ${s.enabled} then null else disabled_reason end,
                   consecutive_failures = case when ${enabling} then 0 else consecutive_failures end,
                   updated_at = now()
             where id = ${params.scheduleId}`);
          return { before, after: await getRow(tx, params) };
        },
      );
      ctx.schedules?.kick();
      return json(toSchedule(after));
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/projects/:projectId/schedules/:scheduleId',
    summary: 'Delete a schedule; runs it started go on',
    tag: TAG,
    access: ADMIN,
    status: 204,
    params: scheduleParams,
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, (r: ScheduleRow) => ({ actor: principal!, action: 'schedule.delete', target: { type: 'schedule', id: params.scheduleId }, diff: { before: settingsOf(r) }, requestId }), async (tx) => {
        const before = await getRow(tx, params);
        await tx.query(sql`delete from project_schedules where id = ${params.scheduleId}`);
        return before;
      });
      return empty(204);
    },
  }),
  route({
    method: 'POST',
    path: '/api/projects/:projectId/schedules/:scheduleId/run',
    summary: "Run a schedule now (also when disabled), on behalf of its creator; answers with the runner's answer: started with the run id, skipped or failed with the reason",
    tag: TAG,
    access: ADMIN,
    status: 202,
    params: scheduleParams,
    async handler({ principal, params, requestId }, ctx) {
      if (!ctx.schedules) throw new HttpError(503, 'unavailable', 'schedules do not run in this process');
      const row = await audited(ctx.db, { actor: principal!, action: 'schedule.run', target: { type: 'schedule', id: params.scheduleId }, requestId }, (tx) => getRow(tx, params));
      const outcome = await ctx.schedules.runNow(row);
      if (!outcome) throw new HttpError(409, 'already_running', 'this schedule is being run at this very time');
      return json({ scheduleId: row.id, ...outcome }, { status: 202 });
    },
  }),
];
