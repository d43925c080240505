// Skill run records over HTTP (docs/skill-runs.md, "On the server"): GET /api/runs lists the runs of
// the projects you can see (at least viewer; instance admins see all), newest first; GET
// /api/runs/:runId is one run with its report, at most 128 KiB of its patch and its progress lines.
// A run of a project you have no role on does not exist for you (404). GET /api/failed-starts lists the
// runs that did not start (trigger deliveries and scheduled runs; runs/start-failures.ts) the same way.
import * as z from 'zod';
import { RUN_STATES } from '../../protocol/runs.ts';
import { projectRole, requireProjectRole } from '../auth/auth.ts';
import { visibleProjects } from '../cost/routes.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { failedStartList, runDetail, runId, runList } from './schema.ts';
import { startReasonRemedy, startReasonWords } from '../../protocol/start-reasons.ts';

interface RunRow {
  id: string;
  runner_id: string;
  project_id: string;
  skill: string;
  args: string[];
  output: 'report' | 'pull_request';
  profile_id: string;
  runtime: string;
  model: string | null;
  timeout_sec: number | null;
  state: (typeof RUN_STATES)[number];
  error: string | null;
  branch: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
  cost_usd: string | null;
  progress_lines: number;
  last_progress: string | null;
}
interface RunDetailRow extends RunRow {
  report: string | null;
  report_truncated: boolean;
  exit_code: number | null;
  duration_ms: string | number | null;
  session_id: string | null;
  usage: Record<string, number> | null;
  pull_request: z.infer<typeof runDetail>['pullRequest'];
  patch: string | null;
  patch_bytes: string | number | null;
  patch_sha256: string | null;
  patch_truncated: boolean;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const num = (v: string | number | null) => (v === null ? null : Number(v));

const toSummary = (r: RunRow) => ({
  id: r.id,
  projectId: r.project_id,
  runnerId: r.runner_id,
  skill: r.skill,
  args: r.args,
  output: r.output,
  profileId: r.profile_id,
  runtime: r.runtime,
  model: r.model,
  timeoutSec: r.timeout_sec,
  state: r.state,
  error: r.error,
  branch: r.branch,
  createdAt: iso(r.created_at)!,
  startedAt: iso(r.started_at),
  finishedAt: iso(r.finished_at),
  updatedAt: iso(r.updated_at)!,
  costUsd: num(r.cost_usd),
  progressLines: r.progress_lines,
  lastProgress: r.last_progress,
});

const SUMMARY_COLUMNS = sql.raw(
  'r.id, r.runner_id, r.project_id, r.skill, r.args, r.output, r.profile_id, r.runtime, r.model, r.timeout_sec, r.state, r.error, r.branch, r.created_at, r.started_at, r.finished_at, r.updated_at, r.cost_usd, r.progress_lines, r.last_progress',
);

const listQuery = z.strictObject({
  projectId: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a project id' }).optional(),
  state: z.enum(RUN_STATES).optional(),
  skill: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be a skill name' }).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: runId.optional().describe('The last run id of the previous page (nextBefore)'),
});

interface FailedStartRow {
  id: string | number;
  project_id: string;
  source: 'trigger' | 'schedule';
  source_id: string;
  source_name: string;
  action: 'skill' | 'next_round';
  skill: string | null;
  reason: string;
  detail: string | null;
  delivery_id: string | null;
  created_at: Date;
}

const failedQuery = z.strictObject({
  projectId: listQuery.shape.projectId,
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.string().regex(/^\d{1,19}$/, { message: 'must be a failed start id' }).optional().describe('The last id of the previous page (nextBefore)'),
});

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/failed-starts',
    summary: 'Runs that did not start (trigger deliveries and scheduled runs) of the projects you can see, newest first, each with its reason in code and in words',
    tag: 'runs',
    access: 'user',
    query: failedQuery,
    responses: { 200: { description: 'runs that did not start, newest first', schema: failedStartList } },
    async handler({ principal, query }, ctx) {
      if (query.projectId) await requireProjectRole(ctx.db, principal!, query.projectId, 'viewer');
      const rows = await ctx.db.query<FailedStartRow>(sql`
        select f.* from run_start_failures f
         where ${visibleProjects(principal!, sql`f.project_id`)}
           and ${query.projectId ? sql`f.project_id = ${query.projectId}` : sql`true`}
           and ${query.before ? sql`f.id < ${query.before}::bigint` : sql`true`}
         order by f.id desc limit ${query.limit + 1}`);
      const page = rows.slice(0, query.limit);
      return json({
        failedStarts: page.map((f) => ({
          id: String(f.id),
          projectId: f.project_id,
          source: f.source,
          sourceId: f.source_id,
          sourceName: f.source_name,
          action: f.action,
          skill: f.skill,
          reason: f.reason,
          words: startReasonWords(f.reason),
          remedy: startReasonRemedy(f.reason),
          detail: f.detail,
          deliveryId: f.delivery_id,
          createdAt: iso(f.created_at)!,
        })),
        nextBefore: rows.length > query.limit ? String(page[page.length - 1].id) : null,
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/runs',
    summary: 'Skill runs of the projects you can see (viewer or more), newest first; filter by project, state, skill; page with before',
    tag: 'runs',
    access: 'user',
    query: listQuery,
    responses: { 200: { description: 'runs, newest first', schema: runList } },
    async handler({ principal, query }, ctx) {
      const user = principal!.user;
      if (query.projectId) await requireProjectRole(ctx.db, principal!, query.projectId, 'viewer');
      const where = [
        user.instanceAdmin ? sql`true` : sql`exists (select 1 from project_members m where m.project_id = r.project_id and m.user_id = ${user.id})`,
        query.projectId ? sql`r.project_id = ${query.projectId}` : sql`true`,
        query.state ? sql`r.state = ${query.state}` : sql`true`,
        query.skill ? sql`r.skill = ${query.skill}` : sql`true`,
        query.before ? sql`(r.created_at, r.id) < (select created_at, id from skill_runs where id = ${query.before})` : sql`true`,
      ];
      const rows = await ctx.db.query<RunRow>(sql`
        select ${SUMMARY_COLUMNS} from skill_runs r where ${sql.join(where, ' and ')}
         order by r.created_at desc, r.id desc limit ${query.limit + 1}`);
      const page = rows.slice(0, query.limit);
      return json({ runs: page.map(toSummary), nextBefore: rows.length > query.limit ? page[page.length - 1].id : null });
    },
  }),
  route({
    method: 'GET',
    path: '/api/runs/:runId',
    summary: 'One skill run: state, report, at most 128 KiB of its patch (patchTruncated says when cut), progress lines',
    tag: 'runs',
    access: 'user',
    params: z.strictObject({ runId }),
    responses: { 200: { description: 'the run', schema: runDetail } },
    async handler({ principal, params }, ctx) {
      const [r] = await ctx.db.query<RunDetailRow>(sql`select r.* from skill_runs r where r.id = ${params.runId}`);
      if (!r || !(await projectRole(ctx.db, principal!.user, r.project_id))) throw notFound('no such run');
      const progress = await ctx.db.query<{ seq: number; text: string }>(sql`select seq, text from skill_run_lines where run_id = ${r.id} order by seq`);
      return json({
        ...toSummary(r),
        report: r.report,
        reportTruncated: r.report_truncated,
        exitCode: r.exit_code,
        durationMs: num(r.duration_ms),
        sessionId: r.session_id,
        usage: r.usage,
        pullRequest: r.pull_request,
        patch: r.patch,
        patchBytes: num(r.patch_bytes),
        patchSha256: r.patch_sha256,
        patchTruncated: r.patch_truncated,
        progress,
      });
    },
  }),
];
