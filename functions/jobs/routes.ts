// System jobs next to their next run and last result (spec: the admin Schedules page).
import * as z from 'zod';
import { jobRunAccepted } from '../../protocol/api/jobs.ts';
import { schedulesOverview } from '../../protocol/api/schedules.ts';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { notFound, json } from '../lib/errors.ts';
import { toSchedule } from '../schedules/schedules.ts';
import { lastRuns, schedulesOfProjects } from './queries.ts';

const jobParams = z.strictObject({ name: z.string().regex(/^[a-z0-9_.-]{1,64}$/, { message: 'must be a job name' }) });

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/schedules', tag: 'schedules', access: 'user',
    summary: "System jobs (instance admins only) and the project schedules of the caller's projects, each with its schedule, next run and last result",
    responses: { 200: { description: 'system jobs and project schedules', schema: schedulesOverview } },
    async handler({ principal }, { db, scheduler }) {
      const user = principal!.user;
      const projectSchedules = await schedulesOfProjects(db, user);
      const schedules = projectSchedules.map((r) => ({ ...toSchedule(r), kind: 'project', projectName: r.project_name }));
      if (!user.instanceAdmin) return json({ jobs: [], schedules });
      const defs = scheduler.definitions();
      const last = await lastRuns(db, defs.map((d) => d.name));
      const byJob = new Map(last.map((r) => [r.job, r]));
      return json({
        jobs: defs.map((d) => {
          const r = byJob.get(d.name);
          return {
            name: d.name,
            kind: 'system',
            description: d.description,
            cron: d.cron,
            nextRunAt: scheduler.nextRun(d.name)?.toISOString() ?? null,
            lastRun: r
              ? {
                  scheduledFor: new Date(r.scheduled_for).toISOString(),
                  status: r.status,
                  attempt: r.attempt,
                  startedAt: new Date(r.started_at).toISOString(),
                  finishedAt: r.finished_at ? new Date(r.finished_at).toISOString() : null,
                  result: r.result,
                  error: r.error,
                }
              : null,
          };
        }),
        schedules,
      });
    },
  }),
  route({ method: 'POST', path: '/api/schedules/:name/run', tag: 'schedules', access: 'instanceAdmin', status: 202, params: jobParams,
    summary: 'Run a system job now (it runs once across replicas)',
    responses: { 202: { description: 'the run asked for', schema: jobRunAccepted } },
    async handler({ params, principal, requestId }, { db, scheduler }) {
      const { name } = params;
      if (!scheduler.definitions().some((d) => d.name === name)) throw notFound(`no system job named ${name}`);
      await audited(db, { actor: principal!, action: 'schedule.run', target: { type: 'job', id: name }, requestId }, async () => {});
      const at = await scheduler.runNow(name);
      return json({ job: name, scheduledFor: at?.toISOString() ?? null, started: at !== null }, { status: 202 });
    },
  }),
];
