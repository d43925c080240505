// Project schedules API (docs/schedules.md): create, list, get, edit (also enable/disable), delete and
// run now. Project admins change and run them (audited); viewers and operators of the project read them;
// anyone else gets 404, and a schedule is found only through its own project's path.
import { randomUUID } from 'node:crypto';
import { scheduleAnswer, scheduleList, scheduleRunAnswer } from '../../protocol/api/schedules.ts';
import { audited } from '../audit/audit.ts';
import type { AppContext, Route } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { HttpError, json, notFound } from '../lib/errors.ts';
import { idParam, projectRoute } from '../lib/project-routes.ts';
import { empty } from '../lib/respond.ts';
import { deleteSchedule, insertSchedule, listSchedules, scheduleRow, updateSchedule } from './queries.ts';
import { nextTime, settingsOf, toSchedule } from './schedules.ts';
import type { ScheduleRow } from './schedules.ts';
import { scheduleCreate, schedulePatch, settle } from './schema.ts';
import type { ScheduleSettings } from './schema.ts';

const TAG = 'schedules';
const one = { scheduleId: idParam('schedule') };
type Params = { projectId: string; scheduleId: string };

async function getRow(q: Queryable, p: Params, lock = false): Promise<ScheduleRow> {
  const row = await scheduleRow(q, p.projectId, p.scheduleId, lock);
  if (!row) throw notFound('no such schedule');
  return row;
}

/** The pending time of an enabled schedule: its first time after now (a re-enabled one does not catch up). */
const pending = (ctx: AppContext, s: ScheduleSettings) => (s.enabled ? nextTime(s.cron, s.timezone, ctx.clock.now()) : null);

export const routes: Route[] = [
  projectRoute('viewer', { method: 'GET', path: '/schedules', tag: TAG,
    summary: "The project's schedules with their next run and last result",
    responses: { 200: { description: 'the schedules', schema: scheduleList } },
    async handler({ params }, ctx) {
      const rows = await listSchedules(ctx.db, params.projectId);
      return json({ schedules: rows.map(toSchedule) });
    },
  }),
  projectRoute('admin', { method: 'POST', path: '/schedules', tag: TAG,
    summary: 'Create a schedule: a skill run on a cron expression in an IANA time zone, on behalf of its creator',
    responses: { 201: { description: 'the new schedule', schema: scheduleAnswer } },
    status: 201,
    body: scheduleCreate,
    async handler({ principal, params, body: given, requestId }, ctx) {
      const body = settle(given, given);
      const id = randomUUID();
      const row = await audited(
        ctx.db,
        (r: ScheduleRow) => ({ actor: principal!, action: 'schedule.create', target: { type: 'schedule', id: r.id }, diff: { projectId: r.project_id, after: settingsOf(r) }, requestId }),
        async (tx) => {
          await insertSchedule(tx, { ...body, id, projectId: params.projectId, createdBy: principal!.user.id, nextRunAt: pending(ctx, body) });
          return getRow(tx, { projectId: params.projectId, scheduleId: id });
        },
      );
      ctx.schedules?.kick();
      return json(toSchedule(row), { status: 201 });
    },
  }),
  projectRoute('viewer', { method: 'GET', path: '/schedules/:scheduleId', tag: TAG,
    summary: 'One schedule with its next run and last result',
    responses: { 200: { description: 'the schedule', schema: scheduleAnswer } },
    params: one,
    handler: async ({ params }, ctx) => json(toSchedule(await getRow(ctx.db, params))),
  }),
  projectRoute('admin', { method: 'PATCH', path: '/schedules/:scheduleId', tag: TAG,
    summary: 'Edit a schedule (its project is fixed); enabled: true/false turns it on or off, and turning it on resets its failure count',
    responses: { 200: { description: 'the schedule as saved', schema: scheduleAnswer } },
    params: one,
    body: schedulePatch,
    async handler({ principal, params, body, requestId }, ctx) {
      const { after } = await audited(
        ctx.db,
        (r: { before: ScheduleRow; after: ScheduleRow }) => ({ actor: principal!, action: 'schedule.update', target: { type: 'schedule', id: params.scheduleId }, diff: { before: settingsOf(r.before), after: settingsOf(r.after) }, requestId }),
        async (tx) => {
          const before = await getRow(tx, params, true);
          const given = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as Partial<ScheduleSettings>;
          const s = settle({ ...settingsOf(before), ...given }, given);
          const timing = s.enabled !== before.enabled || s.cron !== before.cron || s.timezone !== before.timezone;
          const enabling = s.enabled && !before.enabled;
          await updateSchedule(tx, params.scheduleId, s, { timing, enabling, nextRunAt: pending(ctx, s) });
          return { before, after: await getRow(tx, params) };
        },
      );
      ctx.schedules?.kick();
      return json(toSchedule(after));
    },
  }),
  projectRoute('admin', { method: 'DELETE', path: '/schedules/:scheduleId', tag: TAG, status: 204, params: one,
    summary: 'Delete a schedule; runs it started go on',
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, (r: ScheduleRow) => ({ actor: principal!, action: 'schedule.delete', target: { type: 'schedule', id: params.scheduleId }, diff: { before: settingsOf(r) }, requestId }), async (tx) => {
        const before = await getRow(tx, params);
        await deleteSchedule(tx, params.scheduleId);
        return before;
      });
      return empty(204);
    },
  }),
  projectRoute('admin', { method: 'POST', path: '/schedules/:scheduleId/run', tag: TAG,
    summary: "Run a schedule now (also when disabled), on behalf of its creator; answers with the runner's answer: started with the run id, skipped or failed with the reason",
    responses: { 202: { description: "the runner's answer for this run", schema: scheduleRunAnswer } },
    status: 202,
    params: one,
    async handler({ principal, params, requestId }, ctx) {
      if (!ctx.schedules) throw new HttpError(503, 'unavailable', 'schedules do not run in this process');
      const row = await audited(ctx.db, { actor: principal!, action: 'schedule.run', target: { type: 'schedule', id: params.scheduleId }, requestId }, (tx) => getRow(tx, params));
      const outcome = await ctx.schedules.runNow(row);
      if (!outcome) throw new HttpError(409, 'already_running', 'this schedule is being run at this very time');
      return json({ scheduleId: row.id, ...outcome }, { status: 202 });
    },
  }),
];
