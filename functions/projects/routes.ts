// Projects and per-project roles (viewer < operator < admin). Every check goes through
// requireProjectRole (functions/auth/auth.ts) via the route's `access`. Which runner serves a project
// and its root path on that machine are the instance admins' choice (docs/security.md, "Runners and
// project roots"): project admins keep every other field.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { audited } from '../audit/audit.ts';
import { requireInstanceAdmin } from '../auth/auth.ts';
import { publish } from '../live/publish.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { ROLES } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { HttpError, badRequest, conflict, notFound, json } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { fleetView } from './fleet.ts';
import { checkRoot, recordRootCheck, rootRefused } from './root-check.ts';
import type { RootCheck } from './root-check.ts';

const projectId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a project id' });
const userId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a user id' });
const fields = {
  name: z.string().trim().min(1).max(100),
  repo: z.string().regex(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/, { message: 'must be owner/name' }),
  runnerId: z.string().max(64).nullable(),
  rootPath: z
    .string()
    .max(4096)
    .refine((p) => p.startsWith('/') && !p.split('/').includes('..') && !p.includes('\0'), { message: 'must be an absolute path without ..' })
    .nullable(),
  budgetUsd: z.number().finite().min(0).max(1_000_000_000).nullable(),
  budgetAction: z.enum(['warn', 'stop']),
};
export const projectCreate = z.strictObject({
  name: fields.name,
  repo: fields.repo,
  runnerId: fields.runnerId.default(null),
  rootPath: fields.rootPath.default(null),
  budgetUsd: fields.budgetUsd.default(null),
  budgetAction: fields.budgetAction.default('warn'),
});
export const projectPatch = z.strictObject({
  name: fields.name.optional(),
  repo: fields.repo.optional(),
  runnerId: fields.runnerId.optional(),
  rootPath: fields.rootPath.optional(),
  budgetUsd: fields.budgetUsd.optional(),
  budgetAction: fields.budgetAction.optional(),
});
/** Whether the runner confirmed the root is a git repository (functions/projects/root-check.ts); null without runner or root. */
interface RootCheckView {
  state: 'ok' | 'unchecked' | 'failed';
  message: string | null;
  checkedAt: string | null;
}
type Project = z.output<typeof projectCreate> & { id: string; rootCheck: RootCheckView | null };

interface ProjectRow {
  id: string;
  name: string;
  repo: string;
  runner_id: string | null;
  root_path: string | null;
  budget_usd: string | null;
  budget_action: 'warn' | 'stop';
  root_check: RootCheckView['state'] | null;
  root_check_message: string | null;
  root_checked_at: Date | null;
}
const toProject = (r: ProjectRow): Project => ({
  id: r.id,
  name: r.name,
  repo: r.repo,
  runnerId: r.runner_id,
  rootPath: r.root_path,
  budgetUsd: r.budget_usd === null ? null : Number(r.budget_usd),
  budgetAction: r.budget_action,
  rootCheck: r.root_check === null ? null : { state: r.root_check, message: r.root_check_message, checkedAt: r.root_checked_at ? new Date(r.root_checked_at).toISOString() : null },
});

async function getProject(db: Queryable, id: string): Promise<Project> {
  const [row] = await db.query<ProjectRow>(sql`select * from projects where id = ${id}`);
  if (!row) throw notFound('no such project');
  return toProject(row);
}

/** One root is the other or lies inside it (compared by path segments, so /srv/a and /srv/ab do not overlap). */
export function rootsOverlap(a: string, b: string): boolean {
  const norm = (p: string) => (p.endsWith('/') ? p : `${p}/`).replace(/\/+/g, '/');
  const [x, y] = [norm(a), norm(b)];
  return x.startsWith(y) || y.startsWith(x);
}

/**
 * The runner must exist and not be revoked, and the root must not overlap another project's root on the
 * same runner: commands are confined to a project's root, so a root that holds another project's would
 * let that project's members act inside it.
 */
async function checkPlacement(db: Queryable, runnerId: string | null, rootPath: string | null, except = '') {
  if (runnerId === null) return;
  const [runner] = await db.query<{ revoked_at: Date | null }>(sql`select revoked_at from runners where id = ${runnerId} and removed_at is null`);
  if (!runner) throw badRequest('invalid_body', 'invalid fields: runnerId', { runnerId: 'no such runner' });
  if (runner.revoked_at) throw badRequest('invalid_body', 'invalid fields: runnerId', { runnerId: 'this runner is revoked; pair it again first' });
  if (rootPath === null) return;
  const others = await db.query<{ name: string; root_path: string }>(sql`
    select name, root_path from projects where runner_id = ${runnerId} and root_path is not null and id <> ${except}`);
  const clash = others.find((o) => rootsOverlap(o.root_path, rootPath));
  if (clash) {
    const message = `${rootPath} overlaps ${clash.root_path}, the root of project ${clash.name} on this runner: give each project its own repository`;
    throw new HttpError(422, 'root_overlaps', `invalid fields: rootPath: ${message}`, { rootPath: message });
  }
}

/**
 * Ask the runner about a new root (outside any transaction: it may take the command's timeout). A root
 * that is no repository is refused; the real path it answers must not overlap another root either.
 */
async function inspectRoot(db: Queryable, hub: Parameters<typeof checkRoot>[1], p: { runnerId: string | null; rootPath: string | null; repo: string }, userId: string, except = ''): Promise<RootCheck | null> {
  if (p.runnerId === null || p.rootPath === null) return null;
  const check = await checkRoot(db, hub, p.runnerId, p.rootPath, p.repo, userId);
  if (check.state === 'failed') throw rootRefused(check.message);
  if (check.state === 'ok' && check.real !== p.rootPath) await checkPlacement(db, p.runnerId, check.real, except);
  return check;
}

async function nameFree(db: Queryable, name: string, except = '') {
  const [taken] = await db.query(sql`select 1 from projects where lower(name) = lower(${name}) and id <> ${except}`);
  if (taken) throw conflict('name_taken', `a project named ${name} exists already`);
}

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/projects',
    summary: 'Projects you can see (all of them for instance admins), with your role',
    tag: 'projects',
    access: 'user',
    async handler({ principal }, ctx) {
      const rows = await ctx.db.query<ProjectRow & { role: string }>(sql`
        select p.*, case when ${principal!.user.instanceAdmin} then 'admin' else m.role end as role
          from projects p left join project_members m on m.project_id = p.id and m.user_id = ${principal!.user.id}
         where ${principal!.user.instanceAdmin} or m.user_id is not null order by lower(p.name)`);
      return json({ projects: rows.map((r) => ({ ...toProject(r), role: r.role })) });
    },
  }),
  route({
    method: 'POST',
    path: '/api/projects',
    summary: 'Create a project',
    tag: 'projects',
    access: 'instanceAdmin',
    status: 201,
    body: projectCreate,
    async handler({ principal, body, requestId }, ctx) {
      // The cheap checks first, so a bad request does not wait for the runner; again in the transaction.
      await nameFree(ctx.db, body.name);
      await checkPlacement(ctx.db, body.runnerId, body.rootPath);
      const check = await inspectRoot(ctx.db, ctx.hub, body, principal!.user.id);
      const project = await audited(
        ctx.db,
        (p: Project) => ({ actor: principal!, action: 'project.create', target: { type: 'project', id: p.id }, diff: { after: p }, requestId }),
        async (tx) => {
          await nameFree(tx, body.name);
          await checkPlacement(tx, body.runnerId, body.rootPath);
          const id = randomUUID();
          await tx.query(sql`
            insert into projects (id, name, repo, runner_id, root_path, budget_usd, budget_action)
            values (${id}, ${body.name}, ${body.repo}, ${body.runnerId}, ${body.rootPath}, ${body.budgetUsd}, ${body.budgetAction})`);
          await recordRootCheck(tx, id, check);
          await publish(tx, { type: 'project', projectId: id, change: 'created' }, { projectId: id });
          return getProject(tx, id);
        },
      );
      await ctx.hub.projectsChanged(project.runnerId);
      return json(project, { status: 201 });
    },
  }),
  route({
    method: 'GET',
    path: '/api/projects/:projectId',
    summary: 'One project',
    tag: 'projects',
    access: { projectRole: 'viewer', param: 'projectId' },
    params: z.strictObject({ projectId }),
    async handler({ params }, ctx) {
      return json(await getProject(ctx.db, params.projectId));
    },
  }),
  route({
    method: 'PATCH',
    path: '/api/projects/:projectId',
    summary: 'Change a project (name, repository, budget; runner and root path: instance admins only)',
    tag: 'projects',
    access: { projectRole: 'admin', param: 'projectId' },
    params: z.strictObject({ projectId }),
    body: projectPatch,
    async handler({ principal, params, body, requestId }, ctx) {
      const current = await getProject(ctx.db, params.projectId);
      const wanted = { ...current, ...body };
      const moving = wanted.runnerId !== current.runnerId || wanted.rootPath !== current.rootPath;
      let check: RootCheck | null = null;
      if (moving) {
        requireInstanceAdmin(principal!);
        await checkPlacement(ctx.db, wanted.runnerId, wanted.rootPath, params.projectId);
        check = await inspectRoot(ctx.db, ctx.hub, wanted, principal!.user.id, params.projectId);
      }
      const out = await audited(
        ctx.db,
        (r: { before: Project; after: Project }) => ({ actor: principal!, action: 'project.update', target: { type: 'project', id: params.projectId }, diff: r, requestId }),
        async (tx) => {
          const before = await getProject(tx, params.projectId);
          const next = { ...before, ...body };
          const moved = next.runnerId !== before.runnerId || next.rootPath !== before.rootPath;
          if (moved) {
            requireInstanceAdmin(principal!); // a project admin must not point a project at another team's machine
            // The runner was asked about the placement read before the transaction: it must still be the one.
            if (next.runnerId !== wanted.runnerId || next.rootPath !== wanted.rootPath) throw conflict('changed_meanwhile', 'the project was changed by someone else meanwhile: read it again and retry');
            await checkPlacement(tx, next.runnerId, next.rootPath, params.projectId);
          }
          if (body.name) await nameFree(tx, body.name, params.projectId);
          await tx.query(sql`
            update projects set name = ${next.name}, repo = ${next.repo}, runner_id = ${next.runnerId}, root_path = ${next.rootPath},
                   budget_usd = ${next.budgetUsd}, budget_action = ${next.budgetAction}, updated_at = now()
             where id = ${params.projectId}`);
          if (moved) await recordRootCheck(tx, params.projectId, check);
          await publish(tx, { type: 'project', projectId: params.projectId, change: 'updated' }, { projectId: params.projectId });
          return { before, after: await getProject(tx, params.projectId) }; // as stored (numeric rounding)
        },
      );
      await ctx.hub.projectsChanged(out.before.runnerId);
      if (out.after.runnerId !== out.before.runnerId) await ctx.hub.projectsChanged(out.after.runnerId);
      return json(out.after);
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/projects/:projectId',
    summary: 'Delete a project and its memberships',
    tag: 'projects',
    access: 'instanceAdmin',
    status: 204,
    params: z.strictObject({ projectId }),
    async handler({ principal, params, requestId }, ctx) {
      await audited(
        ctx.db,
        (before: Project) => ({ actor: principal!, action: 'project.delete', target: { type: 'project', id: params.projectId }, diff: { before }, requestId }),
        async (tx) => {
          const before = await getProject(tx, params.projectId);
          // Its members by name: once the rows are gone the live fan-out no longer knows who they were.
          const members = await tx.query<{ user_id: string }>(sql`select user_id from project_members where project_id = ${params.projectId}`);
          const notice = { type: 'project', projectId: params.projectId, change: 'deleted' } as const;
          for (const m of members) await publish(tx, notice, { userId: m.user_id });
          await publish(tx, notice, { admins: true });
          await tx.query(sql`delete from projects where id = ${params.projectId}`);
          return before;
        },
      ).then((before) => ctx.hub.projectsChanged(before.runnerId));
      return empty(204);
    },
  }),
  route({
    method: 'GET',
    path: '/api/projects/:projectId/members',
    summary: 'Members of a project and their roles',
    tag: 'projects',
    access: { projectRole: 'viewer', param: 'projectId' },
    params: z.strictObject({ projectId }),
    async handler({ params }, ctx) {
      const members = await ctx.db.query(sql`
        select u.id as "userId", u.email, u.name, m.role from project_members m join users u on u.id = m.user_id
         where m.project_id = ${params.projectId} order by lower(u.email)`);
      return json({ members });
    },
  }),
  route({
    method: 'POST',
    path: '/api/projects/:projectId/members',
    summary: 'Add a user to a project by e-mail with a role (project admins do not list users, so they name them by e-mail)',
    tag: 'projects',
    access: { projectRole: 'admin', param: 'projectId' },
    status: 201,
    params: z.strictObject({ projectId }),
    body: z.strictObject({ email: z.email({ message: 'must be an e-mail address' }).max(254), role: z.enum(ROLES) }),
    async handler({ principal, params, body, requestId }, ctx) {
      const member = await audited(
        ctx.db,
        (m: { userId: string; before: string | null }) => ({
          actor: principal!,
          action: 'project.member_set',
          target: { type: 'project', id: params.projectId },
          diff: { userId: m.userId, before: m.before, after: body.role },
          requestId,
        }),
        async (tx) => {
          const [user] = await tx.query<{ id: string; email: string; name: string; active: boolean }>(sql`
            select id, email, name, active from users where lower(email) = lower(${body.email})`);
          // The same answer for an unknown and an inactive user: a project admin learns nothing about accounts.
          if (!user || !user.active) throw badRequest('invalid_body', 'invalid fields: email', { email: 'no active user has this e-mail; an instance admin invites people on Settings' });
          const [prev] = await tx.query<{ role: string }>(sql`select role from project_members where project_id = ${params.projectId} and user_id = ${user.id}`);
          await tx.query(sql`
            insert into project_members (project_id, user_id, role) values (${params.projectId}, ${user.id}, ${body.role})
            on conflict (project_id, user_id) do update set role = excluded.role`);
          await publish(tx, { type: 'project', projectId: params.projectId, change: 'members' }, { projectId: params.projectId });
          return { userId: user.id, email: user.email, name: user.name, before: prev?.role ?? null };
        },
      );
      return json({ projectId: params.projectId, userId: member.userId, email: member.email, name: member.name, role: body.role }, { status: 201 });
    },
  }),
  route({
    method: 'PUT',
    path: '/api/projects/:projectId/members/:userId',
    summary: 'Give a user a role on a project (viewer, operator or admin)',
    tag: 'projects',
    access: { projectRole: 'admin', param: 'projectId' },
    params: z.strictObject({ projectId, userId }),
    body: z.strictObject({ role: z.enum(ROLES) }),
    async handler({ principal, params, body, requestId }, ctx) {
      await audited(
        ctx.db,
        (before: string | null) => ({
          actor: principal!,
          action: 'project.member_set',
          target: { type: 'project', id: params.projectId },
          diff: { userId: params.userId, before, after: body.role },
          requestId,
        }),
        async (tx) => {
          const [user] = await tx.query(sql`select 1 from users where id = ${params.userId}`);
          if (!user) throw notFound('no such user');
          const [prev] = await tx.query<{ role: string }>(sql`select role from project_members where project_id = ${params.projectId} and user_id = ${params.userId}`);
          await tx.query(sql`
            insert into project_members (project_id, user_id, role) values (${params.projectId}, ${params.userId}, ${body.role})
            on conflict (project_id, user_id) do update set role = excluded.role`);
          await publish(tx, { type: 'project', projectId: params.projectId, change: 'members' }, { projectId: params.projectId });
          return prev?.role ?? null;
        },
      );
      return json({ projectId: params.projectId, userId: params.userId, role: body.role });
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/projects/:projectId/members/:userId',
    summary: 'Remove a user from a project',
    tag: 'projects',
    access: { projectRole: 'admin', param: 'projectId' },
    status: 204,
    params: z.strictObject({ projectId, userId }),
    async handler({ principal, params, requestId }, ctx) {
      await audited(
        ctx.db,
        { actor: principal!, action: 'project.member_remove', target: { type: 'project', id: params.projectId }, diff: { userId: params.userId }, requestId },
        async (tx) => {
          const [gone] = await tx.query(sql`delete from project_members where project_id = ${params.projectId} and user_id = ${params.userId} returning 1`);
          if (!gone) throw notFound('that user is not a member');
          const notice = { type: 'project', projectId: params.projectId, change: 'members' } as const;
          await publish(tx, notice, { projectId: params.projectId });
          await publish(tx, notice, { userId: params.userId }); // no longer a member: told by name
        },
      );
      return empty(204);
    },
  }),
  route({
    method: 'GET',
    path: '/api/projects/:projectId/fleet',
    summary: "The project's fleet as its runner's events recorded it: per slot the issue, latest checkpoint, pull request and checks; the orchestrator's last start or stop",
    tag: 'projects',
    access: { projectRole: 'viewer', param: 'projectId' },
    params: z.strictObject({ projectId }),
    async handler({ params }, ctx) {
      const project = await getProject(ctx.db, params.projectId);
      return json({ projectId: project.id, runnerId: project.runnerId, ...(await fleetView(ctx.db, project.runnerId, project.id)) });
    },
  }),
];
