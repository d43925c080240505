// Projects and per-project roles (viewer < operator < admin). Every check goes through
// requireProjectRole (functions/auth/auth.ts) via the route's `access`, which projectRoute writes.
// Which runner serves a project and its root path on that machine are the instance admins' choice
// (docs/security.md, "Runners and project roots"): project admins keep every other field.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { memberAdded, memberList, memberRole, projectAnswer, projectFleet, projectList } from '../../protocol/api/projects.ts';
import type { ProjectAnswer } from '../../protocol/api/projects.ts';
import { audited } from '../audit/audit.ts';
import { capUsd } from '../cost/schema.ts';
import { requireInstanceAdmin } from '../auth/auth.ts';
import { publish } from '../live/publish.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { ROLES } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { HttpError, badRequest, conflict, notFound, json } from '../lib/errors.ts';
import { idParam, projectRoute } from '../lib/project-routes.ts';
import { empty } from '../lib/respond.ts';
import { fleetView } from './fleet.ts';
import {
  deleteProject,
  insertProject,
  listMembers,
  listProjects,
  memberIds,
  nameTaken,
  otherRoots,
  placementRunner,
  requireProjectRow,
  removeMember,
  setMember,
  toProject,
  updateProject,
  userByEmail,
  userExists,
} from './queries.ts';
import { checkRoot, recordRootCheck, rootRefused } from './root-check.ts';
import type { RootCheck } from './root-check.ts';

const member = { userId: idParam('user') };
/** A root on a runner: absolute, without `..` (a project's, or a pool member's: pool-routes.ts). */
export const rootPathField = z
  .string()
  .max(4096)
  .refine((p) => p.startsWith('/') && !p.split('/').includes('..') && !p.includes('\0'), { message: 'must be an absolute path without ..' });
/** A project's caps; a field left out keeps its value on PATCH (merged in the handler). */
const capsField = z.strictObject({ perIssueUSD: capUsd.optional(), perRunUSD: capUsd.optional() });
type Caps = ProjectAnswer['caps'];
const withCaps = (cur: Caps, given: { perIssueUSD?: number | null; perRunUSD?: number | null } | undefined): Caps => ({
  perIssueUSD: given?.perIssueUSD === undefined ? cur.perIssueUSD : given.perIssueUSD,
  perRunUSD: given?.perRunUSD === undefined ? cur.perRunUSD : given.perRunUSD,
});
const fields = {
  name: z.string().trim().min(1).max(100),
  repo: z.string().regex(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/, { message: 'must be owner/name' }),
  runnerId: z.string().max(64).nullable(),
  rootPath: rootPathField.nullable(),
  budgetUsd: z.number().finite().min(0).max(1_000_000_000).nullable(),
  budgetAction: z.enum(['warn', 'stop']),
  caps: capsField,
};
export const projectCreate = z.strictObject({
  name: fields.name,
  repo: fields.repo,
  runnerId: fields.runnerId.default(null),
  rootPath: fields.rootPath.default(null),
  budgetUsd: fields.budgetUsd.default(null),
  budgetAction: fields.budgetAction.default('warn'),
  caps: fields.caps.default({ perIssueUSD: null, perRunUSD: null }),
});
export const projectPatch = z.strictObject({
  name: fields.name.optional(),
  repo: fields.repo.optional(),
  runnerId: fields.runnerId.optional(),
  rootPath: fields.rootPath.optional(),
  budgetUsd: fields.budgetUsd.optional(),
  budgetAction: fields.budgetAction.optional(),
  caps: fields.caps.optional(),
});
type Project = ProjectAnswer;

async function getProject(db: Queryable, id: string): Promise<Project> {
  return toProject(await requireProjectRow(db, id));
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
  const runner = await placementRunner(db, runnerId);
  if (!runner) throw badRequest('invalid_body', 'invalid fields: runnerId', { runnerId: 'no such runner' });
  if (runner.revoked_at) throw badRequest('invalid_body', 'invalid fields: runnerId', { runnerId: 'this runner is revoked; pair it again first' });
  if (rootPath === null) return;
  const others = await otherRoots(db, runnerId, except);
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
  if (await nameTaken(db, name, except)) throw conflict('name_taken', `a project named ${name} exists already`);
}

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/projects', tag: 'projects', access: 'user',
    summary: 'Projects you can see (all of them for instance admins), with your role',
    responses: { 200: { description: 'the projects with your role', schema: projectList } },
    async handler({ principal }, ctx) {
      const rows = await listProjects(ctx.db, principal!.user);
      return json({ projects: rows.map((r) => ({ ...toProject(r), role: r.role })) });
    },
  }),
  route({ method: 'POST', path: '/api/projects', tag: 'projects', access: 'instanceAdmin', status: 201,
    summary: 'Create a project',
    responses: { 201: { description: 'the new project', schema: projectAnswer } },
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
          await insertProject(tx, id, { ...body, caps: { perIssueUSD: body.caps.perIssueUSD ?? null, perRunUSD: body.caps.perRunUSD ?? null } });
          await recordRootCheck(tx, id, check);
          await publish(tx, { type: 'project', projectId: id, change: 'created' }, { projectId: id });
          return getProject(tx, id);
        },
      );
      await ctx.hub.projectsChanged(project.runnerId);
      return json(project, { status: 201 });
    },
  }),
  projectRoute('viewer', { method: 'GET', path: '', tag: 'projects',
    summary: 'One project',
    responses: { 200: { description: 'the project', schema: projectAnswer } },
    async handler({ params }, ctx) {
      return json(await getProject(ctx.db, params.projectId));
    },
  }),
  projectRoute('admin', { method: 'PATCH', path: '', tag: 'projects',
    summary: 'Change a project (name, repository, budget, caps; runner and root path: instance admins only)',
    responses: { 200: { description: 'the project as saved', schema: projectAnswer } },
    body: projectPatch,
    async handler({ principal, params, body, requestId }, ctx) {
      const current = await getProject(ctx.db, params.projectId);
      const wanted = { ...current, ...body, caps: withCaps(current.caps, body.caps) };
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
          const next = { ...before, ...body, caps: withCaps(before.caps, body.caps) };
          const moved = next.runnerId !== before.runnerId || next.rootPath !== before.rootPath;
          if (moved) {
            requireInstanceAdmin(principal!); // a project admin must not point a project at another team's machine
            // The runner was asked about the placement read before the transaction: it must still be the one.
            if (next.runnerId !== wanted.runnerId || next.rootPath !== wanted.rootPath) throw conflict('changed_meanwhile', 'the project was changed by someone else meanwhile: read it again and retry');
            await checkPlacement(tx, next.runnerId, next.rootPath, params.projectId);
          }
          if (body.name) await nameFree(tx, body.name, params.projectId);
          await updateProject(tx, params.projectId, next);
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
  // Instance admins only (not a project role), so not projectRoute.
  route({ method: 'DELETE', path: '/api/projects/:projectId', tag: 'projects', access: 'instanceAdmin', status: 204, params: z.strictObject({ projectId: idParam('project') }),
    summary: 'Delete a project and its memberships',
    async handler({ principal, params, requestId }, ctx) {
      await audited(
        ctx.db,
        (before: Project) => ({ actor: principal!, action: 'project.delete', target: { type: 'project', id: params.projectId }, diff: { before }, requestId }),
        async (tx) => {
          const before = await getProject(tx, params.projectId);
          // Its members by name: once the rows are gone the live fan-out no longer knows who they were.
          const members = await memberIds(tx, params.projectId);
          const notice = { type: 'project', projectId: params.projectId, change: 'deleted' } as const;
          for (const userId of members) await publish(tx, notice, { userId });
          await publish(tx, notice, { admins: true });
          await deleteProject(tx, params.projectId);
          return before;
        },
      ).then((before) => ctx.hub.projectsChanged(before.runnerId));
      return empty(204);
    },
  }),
  projectRoute('viewer', { method: 'GET', path: '/members', tag: 'projects',
    summary: 'Members of a project and their roles',
    responses: { 200: { description: 'the members', schema: memberList } },
    async handler({ params }, ctx) {
      return json({ members: await listMembers(ctx.db, params.projectId) });
    },
  }),
  projectRoute('admin', { method: 'POST', path: '/members', tag: 'projects', status: 201,
    summary: 'Add a user to a project by e-mail with a role (project admins do not list users, so they name them by e-mail)',
    responses: { 201: { description: 'the member and their role', schema: memberAdded } },
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
          const user = await userByEmail(tx, body.email);
          // The same answer for an unknown and an inactive user: a project admin learns nothing about accounts.
          if (!user || !user.active) throw badRequest('invalid_body', 'invalid fields: email', { email: 'no active user has this e-mail; an instance admin invites people on Settings' });
          const before = await setMember(tx, params.projectId, user.id, body.role);
          await publish(tx, { type: 'project', projectId: params.projectId, change: 'members' }, { projectId: params.projectId });
          return { userId: user.id, email: user.email, name: user.name, before };
        },
      );
      return json({ projectId: params.projectId, userId: member.userId, email: member.email, name: member.name, role: body.role }, { status: 201 });
    },
  }),
  projectRoute('admin', { method: 'PUT', path: '/members/:userId', tag: 'projects',
    summary: 'Give a user a role on a project (viewer, operator or admin)',
    responses: { 200: { description: 'the role given', schema: memberRole } },
    params: member,
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
          if (!(await userExists(tx, params.userId))) throw notFound('no such user');
          const before = await setMember(tx, params.projectId, params.userId, body.role);
          await publish(tx, { type: 'project', projectId: params.projectId, change: 'members' }, { projectId: params.projectId });
          return before;
        },
      );
      return json({ projectId: params.projectId, userId: params.userId, role: body.role });
    },
  }),
  projectRoute('admin', { method: 'DELETE', path: '/members/:userId', tag: 'projects', status: 204, params: member,
    summary: 'Remove a user from a project',
    async handler({ principal, params, requestId }, ctx) {
      await audited(
        ctx.db,
        { actor: principal!, action: 'project.member_remove', target: { type: 'project', id: params.projectId }, diff: { userId: params.userId }, requestId },
        async (tx) => {
          if (!(await removeMember(tx, params.projectId, params.userId))) throw notFound('that user is not a member');
          const notice = { type: 'project', projectId: params.projectId, change: 'members' } as const;
          await publish(tx, notice, { projectId: params.projectId });
          await publish(tx, notice, { userId: params.userId }); // no longer a member: told by name
        },
      );
      return empty(204);
    },
  }),
  projectRoute('viewer', { method: 'GET', path: '/fleet', tag: 'projects',
    summary: "The project's fleet as its runner's events recorded it: per slot the issue, latest checkpoint, pull request and checks; the orchestrator's last start or stop",
    responses: { 200: { description: "the project's recorded fleet", schema: projectFleet } },
    async handler({ params }, ctx) {
      const project = await getProject(ctx.db, params.projectId);
      return json({ projectId: project.id, runnerId: project.runnerId, ...(await fleetView(ctx.db, project.runnerId, project.id)) });
    },
  }),
];
