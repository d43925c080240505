// The projects API's statements (functions/projects/routes.ts reads as validate → call → present): rows
// of projects and project_members (sql/0002_accounts_audit.sql), and the two reads of other tables a
// project's placement and its members need (runners, users). The root check's columns stay in root-check.ts.
import type { ProjectAnswer, RootCheckView } from '../../protocol/api/projects.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { Role } from '../lib/context.ts';
import { notFound } from '../lib/errors.ts';

export interface ProjectRow {
  id: string;
  name: string;
  repo: string;
  runner_id: string | null;
  root_path: string | null;
  budget_usd: string | null;
  budget_action: 'warn' | 'stop';
  cap_issue_usd: string | null;
  cap_run_usd: string | null;
  root_check: RootCheckView['state'] | null;
  root_check_message: string | null;
  root_checked_at: Date | null;
}

/** The API's view of a project (protocol/api/projects.ts). */
export const toProject = (r: ProjectRow): ProjectAnswer => ({
  id: r.id,
  name: r.name,
  repo: r.repo,
  runnerId: r.runner_id,
  rootPath: r.root_path,
  budgetUsd: r.budget_usd === null ? null : Number(r.budget_usd),
  budgetAction: r.budget_action,
  caps: { perIssueUSD: r.cap_issue_usd === null ? null : Number(r.cap_issue_usd), perRunUSD: r.cap_run_usd === null ? null : Number(r.cap_run_usd) },
  rootCheck: r.root_check === null ? null : { state: r.root_check, message: r.root_check_message, checkedAt: r.root_checked_at ? new Date(r.root_checked_at).toISOString() : null },
});

/** The settings a project is created with or saved as. */
export type ProjectSettings = Pick<ProjectAnswer, 'name' | 'repo' | 'runnerId' | 'rootPath' | 'budgetUsd' | 'budgetAction' | 'caps'>;

export async function projectRow(q: Queryable, id: string): Promise<ProjectRow | null> {
  const [row] = await q.query<ProjectRow>(sql`select * from projects where id = ${id}`);
  return row ?? null;
}

/** The project's row, or 404 `no such project`. */
export async function requireProjectRow(q: Queryable, id: string): Promise<ProjectRow> {
  const row = await projectRow(q, id);
  if (!row) throw notFound('no such project');
  return row;
}

/** The projects a user sees (all of them for instance admins), by name, with their role (admin for instance admins). */
export const listProjects = (q: Queryable, user: { id: string; instanceAdmin: boolean }) =>
  q.query<ProjectRow & { role: Role }>(sql`
    select p.*, case when ${user.instanceAdmin} then 'admin' else m.role end as role
      from projects p left join project_members m on m.project_id = p.id and m.user_id = ${user.id}
     where ${user.instanceAdmin} or m.user_id is not null order by lower(p.name)`);

/** A runner a project may be placed on: null when there is none (or it was removed). */
export async function placementRunner(q: Queryable, runnerId: string): Promise<{ revoked_at: Date | null } | null> {
  const [runner] = await q.query<{ revoked_at: Date | null }>(sql`select revoked_at from runners where id = ${runnerId} and removed_at is null`);
  return runner ?? null;
}

/** The roots of the other projects on a runner. */
export const otherRoots = (q: Queryable, runnerId: string, except: string) =>
  q.query<{ name: string; root_path: string }>(sql`
    select name, root_path from projects where runner_id = ${runnerId} and root_path is not null and id <> ${except}`);

export async function nameTaken(q: Queryable, name: string, except: string): Promise<boolean> {
  const [taken] = await q.query(sql`select 1 from projects where lower(name) = lower(${name}) and id <> ${except}`);
  return Boolean(taken);
}

export async function insertProject(q: Queryable, id: string, p: ProjectSettings): Promise<void> {
  await q.query(sql`
    insert into projects (id, name, repo, runner_id, root_path, budget_usd, budget_action, cap_issue_usd, cap_run_usd)
    values (${id}, ${p.name}, ${p.repo}, ${p.runnerId}, ${p.rootPath}, ${p.budgetUsd}, ${p.budgetAction}, ${p.caps.perIssueUSD}, ${p.caps.perRunUSD})`);
}

export async function updateProject(q: Queryable, id: string, p: ProjectSettings): Promise<void> {
  await q.query(sql`
    update projects set name = ${p.name}, repo = ${p.repo}, runner_id = ${p.runnerId}, root_path = ${p.rootPath},
           budget_usd = ${p.budgetUsd}, budget_action = ${p.budgetAction},
           cap_issue_usd = ${p.caps.perIssueUSD}, cap_run_usd = ${p.caps.perRunUSD}, updated_at = now()
     where id = ${id}`);
}

/** The ids of a project's members. */
export async function memberIds(q: Queryable, projectId: string): Promise<string[]> {
  const members = await q.query<{ user_id: string }>(sql`select user_id from project_members where project_id = ${projectId}`);
  return members.map((m) => m.user_id);
}

/** Deletes a project; its memberships go with it. */
export async function deleteProject(q: Queryable, id: string): Promise<void> {
  await q.query(sql`delete from projects where id = ${id}`);
}

export const listMembers = (q: Queryable, projectId: string) =>
  q.query<{ userId: string; email: string; name: string; role: Role }>(sql`
    select u.id as "userId", u.email, u.name, m.role from project_members m join users u on u.id = m.user_id
     where m.project_id = ${projectId} order by lower(u.email)`);

export async function userByEmail(q: Queryable, email: string): Promise<{ id: string; email: string; name: string; active: boolean } | null> {
  const [user] = await q.query<{ id: string; email: string; name: string; active: boolean }>(sql`
    select id, email, name, active from users where lower(email) = lower(${email})`);
  return user ?? null;
}

export async function userExists(q: Queryable, id: string): Promise<boolean> {
  const [user] = await q.query(sql`select 1 from users where id = ${id}`);
  return Boolean(user);
}

/** Gives a user a role on a project (adding them); answers the role they had before, null when none. */
export async function setMember(q: Queryable, projectId: string, userId: string, role: Role): Promise<string | null> {
  const [prev] = await q.query<{ role: string }>(sql`select role from project_members where project_id = ${projectId} and user_id = ${userId}`);
  await q.query(sql`
    insert into project_members (project_id, user_id, role) values (${projectId}, ${userId}, ${role})
    on conflict (project_id, user_id) do update set role = excluded.role`);
  return prev?.role ?? null;
}

/** Removes a member; false when the user was none. */
export async function removeMember(q: Queryable, projectId: string, userId: string): Promise<boolean> {
  const [gone] = await q.query(sql`delete from project_members where project_id = ${projectId} and user_id = ${userId} returning 1`);
  return Boolean(gone);
}
