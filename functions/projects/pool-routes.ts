// A project's pool (issue #37; docs/runner.md "Runner pools"): the runners besides its primary one that
// take its pool-target skill runs, each with its own clone of the repository. Project viewers see the
// pool; only instance admins change it, as for the primary runner (docs/security.md, "Runners and project
// roots"): a project admin must not point a project at another team's machine. A member's root is
// validated and checked on the runner like the project's (root-check.ts), and the runner is sent its
// watch list again so it serves (or stops serving) the project's runs.
import * as z from 'zod';
import { poolRunnerList, poolRunnerView } from '../../protocol/api/projects.ts';
import type { PoolRunnerView } from '../../protocol/api/projects.ts';
import { audited } from '../audit/audit.ts';
import { requireInstanceAdmin } from '../auth/auth.ts';
import { publish } from '../live/publish.ts';
import type { AppContext, Route } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { HttpError, badRequest, conflict, json, notFound } from '../lib/errors.ts';
import { idParam, projectRoute } from '../lib/project-routes.ts';
import { empty } from '../lib/respond.ts';
import { placementRunner, requireProjectRow } from './queries.ts';
import type { ProjectRow } from './queries.ts';
import { poolMember, poolRunners, removePoolMember, rootsOnRunner, setPoolMember } from './pool-queries.ts';
import type { PoolRunnerRow } from './pool-queries.ts';
import { checkRoot, rootRefused } from './root-check.ts';
import { rootPathField, rootsOverlap } from './routes.ts';

const TAG = 'projects';
const member = { runnerId: idParam('runner') };

const toPoolRunner = (r: PoolRunnerRow): PoolRunnerView => ({
  runnerId: r.runner_id,
  name: r.name,
  primary: r.primary,
  status: r.online ? 'online' : 'offline',
  tags: r.tags ?? [],
  rootPath: r.root_path,
  rootState: r.root_state ?? 'unchecked',
  rootMessage: r.root_message,
  maxConcurrentRuns: r.max_concurrent_runs,
  runningRuns: r.running_runs,
  takesPoolRuns: r.takes_pool_runs,
});

/**
 * The runner must exist, not be revoked and not be the project's primary runner (that one works in the
 * project's own root); its root must not overlap another project's root on that runner (commands are
 * confined to a root, so one holding another project's would let this project's runs act inside it).
 */
async function checkMember(db: Queryable, project: ProjectRow, runnerId: string, rootPath: string): Promise<void> {
  const runner = await placementRunner(db, runnerId);
  if (!runner) throw notFound('no such runner');
  if (runner.revoked_at) throw badRequest('invalid_path', 'invalid fields: runnerId', { runnerId: 'this runner is revoked; pair it again first' });
  if (project.runner_id === runnerId) throw conflict('primary_runner', "this is the project's primary runner: it is in the pool already, with the project's root path");
  const clash = (await rootsOnRunner(db, runnerId, project.id)).find((o) => rootsOverlap(o.root_path, rootPath));
  if (clash) {
    const message = `${rootPath} overlaps ${clash.root_path}, the root of project ${clash.name} on this runner: give each project its own clone`;
    throw new HttpError(422, 'root_overlaps', `invalid fields: rootPath: ${message}`, { rootPath: message });
  }
}

async function listed(db: Queryable, projectId: string, runnerId: string): Promise<PoolRunnerView> {
  const row = (await poolRunners(db, projectId)).find((r) => r.runner_id === runnerId && !r.primary);
  if (!row) throw notFound('that runner is no member of this pool');
  return toPoolRunner(row);
}

/** Tell the runner its watch list changed (it serves the project's pool runs, or no longer). */
const resend = (ctx: AppContext, runnerId: string) => ctx.hub.projectsChanged(runnerId);

export const routes: Route[] = [
  projectRoute('viewer', { method: 'GET', path: '/runners', tag: TAG,
    summary: "The project's pool: its primary runner first (primary: true), then the members, with status, tags, root, capacity and whether each takes pool runs",
    responses: { 200: { description: "the pool's runners", schema: poolRunnerList } },
    async handler({ params }, ctx) {
      return json({ runners: (await poolRunners(ctx.db, params.projectId)).map(toPoolRunner) });
    },
  }),
  projectRoute('admin', { method: 'PUT', path: '/runners/:runnerId', tag: TAG,
    summary: "Add a runner to the project's pool with the root of its clone, or change that root (instance admins; checked on the runner like the project's root)",
    responses: {
      200: { description: "the member's root changed", schema: poolRunnerView },
      201: { description: 'the runner added to the pool', schema: poolRunnerView },
    },
    params: member,
    body: z.strictObject({ rootPath: rootPathField }),
    async handler({ principal, params, body, requestId }, ctx) {
      requireInstanceAdmin(principal!);
      const project = await requireProjectRow(ctx.db, params.projectId);
      await checkMember(ctx.db, project, params.runnerId, body.rootPath);
      // Asked outside any transaction: the runner may take the command's timeout to answer.
      const check = await checkRoot(ctx.db, ctx.hub, params.runnerId, body.rootPath, project.repo, principal!.user.id);
      if (check.state === 'failed') throw rootRefused(check.message);
      if (check.state === 'ok' && check.real !== body.rootPath) await checkMember(ctx.db, project, params.runnerId, check.real);
      const out = await audited(
        ctx.db,
        (r: { before: string | null }) => ({
          actor: principal!,
          action: 'project.pool_set',
          target: { type: 'project', id: params.projectId },
          diff: { runnerId: params.runnerId, before: r.before === null ? null : { rootPath: r.before }, after: { rootPath: body.rootPath, rootState: check.state } },
          requestId,
        }),
        async (tx) => {
          await checkMember(tx, await requireProjectRow(tx, params.projectId), params.runnerId, body.rootPath);
          const before = (await poolMember(tx, params.projectId, params.runnerId))?.root_path ?? null;
          await setPoolMember(tx, params.projectId, params.runnerId, body.rootPath, check.state, check.state === 'ok' ? null : check.message);
          await publish(tx, { type: 'project', projectId: params.projectId, change: 'pool' }, { projectId: params.projectId });
          return { before };
        },
      );
      await resend(ctx, params.runnerId);
      return json(await listed(ctx.db, params.projectId, params.runnerId), { status: out.before === null ? 201 : 200 });
    },
  }),
  projectRoute('admin', { method: 'DELETE', path: '/runners/:runnerId', tag: TAG, status: 204,
    summary: "Remove a runner from the project's pool (instance admins): it gets no new pool runs; those it holds go on and are recorded",
    params: member,
    async handler({ principal, params, requestId }, ctx) {
      requireInstanceAdmin(principal!);
      await audited(
        ctx.db,
        (before: string) => ({ actor: principal!, action: 'project.pool_remove', target: { type: 'project', id: params.projectId }, diff: { runnerId: params.runnerId, before: { rootPath: before } }, requestId }),
        async (tx) => {
          const before = await poolMember(tx, params.projectId, params.runnerId);
          if (!before || !(await removePoolMember(tx, params.projectId, params.runnerId))) throw notFound('that runner is no member of this pool');
          await publish(tx, { type: 'project', projectId: params.projectId, change: 'pool' }, { projectId: params.projectId });
          return before.root_path;
        },
      );
      await resend(ctx, params.runnerId);
      return empty(204);
    },
  }),
];
