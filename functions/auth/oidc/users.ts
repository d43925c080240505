// Who an OIDC sign-in is (issue #38): the provider's subject names one user for good; the first sign-in of
// a subject links it to the user with that verified e-mail only when nobody else signed in as that user
// through the provider, else a user is made just in time. At each sign-in the roles the groups give are
// applied: the projects OIDC_PROJECT_ROLES names (and instance admin when OIDC_ADMIN_GROUPS is set) follow
// the groups, added and removed; a role on a project no mapping names stays as an admin set it.
import { createHash, randomUUID } from 'node:crypto';
import { appendAudit } from '../../audit/audit.ts';
import { sql } from '../../lib/db/index.ts';
import type { Queryable } from '../../lib/db/index.ts';
import type { Role, User } from '../../lib/context.ts';
import { publish } from '../../live/publish.ts';
import { removeMember, setMember } from '../../projects/queries.ts';
import { roleRank, toUser } from '../auth.ts';
import { advisoryXactLock } from '../queries.ts';
import { OidcError } from './provider.ts';
import type { OidcConfig } from './provider.ts';

export interface Identity {
  issuer: string;
  subject: string;
  email: string;
  name: string;
  groups: string[];
}

type UserRow = { id: string; email: string; name: string; active: boolean; instance_admin: boolean };
const ACTOR = { label: 'oidc' };

/** A lock per subject: two first sign-ins of one person at once make one user. */
const subjectLock = (issuer: string, subject: string) => createHash('sha256').update(`${issuer}\n${subject}`).digest().readInt32BE(0);

/** The user this identity signs in as (linked or made on first sign-in); refuses an inactive user. */
export async function userForIdentity(tx: Queryable, id: Identity, requestId: string): Promise<User> {
  await advisoryXactLock(tx, subjectLock(id.issuer, id.subject));
  const [known] = await tx.query<UserRow>(sql`
    update user_identities i set last_sign_in_at = now(), email = ${id.email}
      from users u where u.id = i.user_id and i.issuer = ${id.issuer} and i.subject = ${id.subject}
    returning u.id, u.email, u.name, u.active, u.instance_admin`);
  let row = known;
  if (!row) {
    const [byEmail] = await tx.query<UserRow & { linked: boolean }>(sql`
      select u.id, u.email, u.name, u.active, u.instance_admin,
             exists (select 1 from user_identities i where i.user_id = u.id) as linked
        from users u where lower(u.email) = ${id.email}`);
    if (byEmail?.linked) {
      throw new OidcError(403, 'email_linked_elsewhere', `the svc user with the e-mail ${id.email} signs in through another account at the identity provider; ask an instance admin`);
    }
    if (byEmail) {
      row = byEmail;
      await appendAudit(tx, { actor: ACTOR, action: 'user.identity_linked', target: { type: 'user', id: row.id }, diff: { issuer: id.issuer, subject: id.subject }, requestId });
    } else {
      const [made] = await tx.query<UserRow>(sql`
        insert into users (id, email, name) values (${randomUUID()}, ${id.email}, ${id.name})
        returning id, email, name, active, instance_admin`);
      row = made;
      await appendAudit(tx, { actor: ACTOR, action: 'user.create', target: { type: 'user', id: row.id }, diff: { after: { email: id.email, name: id.name }, issuer: id.issuer, subject: id.subject }, requestId });
    }
    await tx.query(sql`insert into user_identities (issuer, subject, user_id, email) values (${id.issuer}, ${id.subject}, ${row.id}, ${id.email})`);
  }
  if (!row.active) throw new OidcError(403, 'user_inactive', 'your svc account is deactivated; ask an instance admin');
  return toUser(row);
}

type Change = { project: string; name: string; before: Role | null; after: Role | null; groups: string[] };

/**
 * Applies the roles the user's groups give (OIDC_PROJECT_ROLES, OIDC_ADMIN_GROUPS) and audits every
 * change with the groups that caused it. Answers the user as it is now.
 */
export async function applyGroupRoles(tx: Queryable, config: OidcConfig, user: User, groups: string[], requestId: string): Promise<User> {
  const mine = new Set(groups);
  const mapping = config.OIDC_PROJECT_ROLES ?? {};
  const keys = [...new Set(Object.values(mapping).flatMap((m) => Object.keys(m)))];
  const changes: Change[] = [];
  if (keys.length) {
    // A key is a project id, else a project name (an id wins when one project's name is another's id).
    const projects = await tx.query<{ id: string; name: string; role: Role | null }>(sql`
      select p.id, p.name, m.role from projects p
        left join project_members m on m.project_id = p.id and m.user_id = ${user.id}
       where p.id = any(${keys}) or p.name = any(${keys})`);
    const byId = new Map(projects.map((p) => [p.id, p]));
    const byName = new Map(projects.filter((p) => !byId.has(p.name)).map((p) => [p.name, p]));
    const wanted = new Map<string, { role: Role; groups: string[] }>();
    const touched = new Map<string, (typeof projects)[number]>();
    for (const [group, roles] of Object.entries(mapping)) {
      for (const [key, role] of Object.entries(roles)) {
        const p = byId.get(key) ?? byName.get(key);
        if (!p) continue; // a project that does not exist (yet): nothing to apply
        touched.set(p.id, p);
        if (!mine.has(group)) continue;
        const w = wanted.get(p.id);
        if (!w || roleRank(role) > roleRank(w.role)) wanted.set(p.id, { role, groups: [...(w?.groups ?? []), group] });
        else w.groups.push(group);
      }
    }
    for (const p of touched.values()) {
      const w = wanted.get(p.id);
      const after = w?.role ?? null;
      if (after === p.role) continue;
      if (after) await setMember(tx, p.id, user.id, after);
      else await removeMember(tx, p.id, user.id);
      await publish(tx, { type: 'project', projectId: p.id, change: 'members' }, { projectId: p.id });
      // The groups that caused it: those that give the new role, or (a removal) the mapped groups the user is not in.
      const cause = w?.groups ?? Object.keys(mapping).filter((g) => Object.keys(mapping[g]).some((k) => (byId.get(k) ?? byName.get(k))?.id === p.id));
      changes.push({ project: p.id, name: p.name, before: p.role, after, groups: cause });
    }
  }
  let instanceAdmin = user.instanceAdmin;
  const adminGroups = config.OIDC_ADMIN_GROUPS ?? [];
  const adminVia = adminGroups.filter((g) => mine.has(g));
  // The break-glass admin keeps instance admin whatever the groups say: it is the way in when SSO fails.
  const breakGlass = config.BREAK_GLASS_EMAIL !== undefined && user.email.toLowerCase() === config.BREAK_GLASS_EMAIL;
  if (adminGroups.length && (adminVia.length > 0) !== user.instanceAdmin && !(breakGlass && user.instanceAdmin)) {
    instanceAdmin = adminVia.length > 0;
    await tx.query(sql`update users set instance_admin = ${instanceAdmin}, updated_at = now() where id = ${user.id}`);
  }
  if (changes.length || instanceAdmin !== user.instanceAdmin) {
    await appendAudit(tx, {
      actor: ACTOR,
      action: 'user.roles_from_groups',
      target: { type: 'user', id: user.id },
      diff: {
        projects: changes,
        ...(instanceAdmin !== user.instanceAdmin ? { instanceAdmin: { before: user.instanceAdmin, after: instanceAdmin, groups: instanceAdmin ? adminVia : adminGroups } } : {}),
      },
      requestId,
    });
  }
  return { ...user, instanceAdmin };
}
