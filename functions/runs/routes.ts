// Skill run records over HTTP (docs/skill-runs.md, "On the server"): GET /api/runs lists the runs of
// the projects you can see (at least viewer; instance admins see all), newest first; GET
// /api/runs/:runId is one run with its report, at most 128 KiB of its patch and its progress lines.
// A run of a project you have no role on does not exist for you (404). GET /api/failed-starts lists the
// runs that did not start (trigger deliveries and scheduled runs; runs/start-failures.ts) the same way.
// Statements: runs/queries.ts; answers: protocol/api/runs.ts.
import * as z from 'zod';
import { failedStartList, runDetail, runList } from '../../protocol/api/runs.ts';
import { RUN_STATES } from '../../protocol/runs.ts';
import { projectRole, requireProjectRole } from '../auth/auth.ts';
import { route } from '../lib/context.ts';
import type { Principal, Route } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { listFailedStarts, listRuns, runProgress, runRow } from './queries.ts';
import { toDetail, toFailedStart, toSummary } from './rows.ts';
import { runId } from './schema.ts';

const projectId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a project id' }).optional();
const limit = z.coerce.number().int().min(1).max(200).default(50);

const listQuery = z.strictObject({
  projectId,
  state: z.enum(RUN_STATES).optional(),
  skill: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a skill name' }).optional(),
  limit,
  before: runId.optional().describe('The last run id of the previous page (nextBefore)'),
});

const failedQuery = z.strictObject({
  projectId,
  limit,
  before: z.string().regex(/^\d{1,19}$/, { message: 'must be a failed start id' }).optional().describe('The last id of the previous page (nextBefore)'),
});

/** A page of `limit` rows out of limit + 1 read, and the key of its last row when more follow. */
function page<R, K>(rows: R[], limit: number, key: (r: R) => K): { page: R[]; nextBefore: K | null } {
  const page = rows.slice(0, limit);
  return { page, nextBefore: rows.length > limit ? key(page[page.length - 1]) : null };
}

/** The caller names a project: it must be at least its viewer (otherwise it does not exist for them). */
async function mayView(db: Queryable, principal: Principal, projectId: string | undefined): Promise<void> {
  if (projectId) await requireProjectRole(db, principal, projectId, 'viewer');
}

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/failed-starts', tag: 'runs', access: 'user',
    summary: 'Runs that did not start (trigger deliveries and scheduled runs) of the projects you can see, newest first, each with its reason in code and in words',
    query: failedQuery,
    responses: { 200: { description: 'runs that did not start, newest first', schema: failedStartList } },
    async handler({ principal, query }, ctx) {
      await mayView(ctx.db, principal!, query.projectId);
      const { page: rows, nextBefore } = page(await listFailedStarts(ctx.db, principal!, query), query.limit, (f) => String(f.id));
      return json({ failedStarts: rows.map(toFailedStart), nextBefore });
    },
  }),
  route({ method: 'GET', path: '/api/runs',
    summary: 'Skill runs of the projects you can see (viewer or more), newest first; filter by project, state, skill; page with before',
    query: listQuery,
    responses: { 200: { description: 'runs, newest first', schema: runList } },
    tag: 'runs',
    access: 'user',
    async handler({ principal, query }, ctx) {
      await mayView(ctx.db, principal!, query.projectId);
      const { page: rows, nextBefore } = page(await listRuns(ctx.db, principal!, query), query.limit, (r) => r.id);
      return json({ runs: rows.map(toSummary), nextBefore });
    },
  }),
  route({ method: 'GET', path: '/api/runs/:runId', tag: 'runs', access: 'user', params: z.strictObject({ runId }),
    summary: 'One skill run: state, report, at most 128 KiB of its patch (patchTruncated says when cut), progress lines',
    responses: { 200: { description: 'the run', schema: runDetail } },
    async handler({ principal, params }, ctx) {
      const r = await runRow(ctx.db, params.runId);
      if (!r || !(await projectRole(ctx.db, principal!.user, r.project_id))) throw notFound('no such run');
      return json(toDetail(r, await runProgress(ctx.db, r.id)));
    },
  }),
];
