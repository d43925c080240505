// The auth API's statements (functions/auth/routes.ts and setup.ts read as validate → call → present):
// users, password links, sessions revoked, personal API tokens and first-admin setup tokens. Sessions'
// and tokens' creation and checks stay in auth.ts.
import { randomUUID } from 'node:crypto';
import { randomToken, sha256Hex } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { conflict } from '../lib/errors.ts';
import type { Role, User } from '../lib/context.ts';

const LINK_HOURS = 24;

/** A one-time password-set link (first admin, invitation, reset) under `base` (see lib/urls.ts); only its hash is stored. */
export async function createPasswordLink(db: Queryable, base: string, userId: string): Promise<{ url: string; token: string; expiresAt: Date }> {
  const token = randomToken(32);
  const expiresAt = new Date(Date.now() + LINK_HOURS * 3600_000);
  await db.query(sql`insert into password_links (token_hash, user_id, expires_at) values (${sha256Hex(token)}, ${userId}, ${expiresAt})`);
  return { url: `${base.replace(/\/+$/, '')}/#/set-password?token=${token}`, token, expiresAt };
}

export async function createUser(
  db: Queryable,
  input: { email: string; name: string; instanceAdmin: boolean },
): Promise<{ id: string; email: string; name: string; instanceAdmin: boolean }> {
  const [exists] = await db.query(sql`select 1 from users where lower(email) = lower(${input.email})`);
  if (exists) throw conflict('email_taken', `a user with e-mail ${input.email} exists already`);
  const userId = randomUUID();
  await db.query(sql`insert into users (id, email, name, instance_admin) values (${userId}, ${input.email}, ${input.name}, ${input.instanceAdmin})`);
  return { id: userId, ...input };
}

/** The projects `user` sees with their role there (instance admins: every project, as admin). */
export const visibleProjects = (q: Queryable, user: User) =>
  q.query<{ id: string; name: string; role: Role }>(sql`
    select p.id, p.name, case when ${user.instanceAdmin} then 'admin' else m.role end as role
      from projects p left join project_members m on m.project_id = p.id and m.user_id = ${user.id}
     where ${user.instanceAdmin} or m.user_id is not null
     order by p.name`);

export type SignInRow = { id: string; email: string; name: string; active: boolean; instance_admin: boolean; password_hash: string | null };

export async function signInRow(q: Queryable, email: string): Promise<SignInRow | null> {
  const [row] = await q.query<SignInRow>(sql`select id, email, name, active, instance_admin, password_hash from users where lower(email) = ${email}`);
  return row ?? null;
}

export async function revokeSession(q: Queryable, sessionId: string): Promise<void> {
  await q.query(sql`update sessions set revoked_at = now() where id = ${sessionId}`);
}

/** Ends the user's live sessions; answers how many there were. */
export async function revokeUserSessions(q: Queryable, userId: string): Promise<number> {
  const ended = await q.query(sql`update sessions set revoked_at = now() where user_id = ${userId} and revoked_at is null and expires_at > now() returning id`);
  return ended.length;
}

/** Spends a live (unused, unexpired) password link: the user it was made for, or null. */
export async function usePasswordLink(q: Queryable, token: string): Promise<string | null> {
  const [link] = await q.query<{ user_id: string }>(sql`
    update password_links set used_at = now()
     where token_hash = ${sha256Hex(token)} and used_at is null and expires_at > now()
    returning user_id`);
  return link?.user_id ?? null;
}

export async function setPasswordHash(q: Queryable, userId: string, hash: string): Promise<void> {
  await q.query(sql`update users set password_hash = ${hash}, updated_at = now() where id = ${userId}`);
}

export const listTokens = (q: Queryable, userId: string) =>
  q.query<{ id: string; name: string; prefix: string; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null; expiresAt: Date | null }>(sql`
    select id, name, prefix, created_at as "createdAt", last_used_at as "lastUsedAt", revoked_at as "revokedAt", expires_at as "expiresAt"
      from api_tokens where user_id = ${userId} order by created_at`);

/** Revokes one of the user's tokens (a revoked one stays as it was); false when they have no such token. */
export async function revokeToken(q: Queryable, userId: string, tokenId: string): Promise<boolean> {
  const [row] = await q.query(sql`
    update api_tokens set revoked_at = coalesce(revoked_at, now())
     where id = ${tokenId} and user_id = ${userId} returning id`);
  return Boolean(row);
}

export const listUsers = (q: Queryable) =>
  q.query<{ id: string; email: string; name: string; active: boolean; instanceAdmin: boolean; passwordSet: boolean; sso: boolean; createdAt: Date }>(sql`
    select id, email, name, active, instance_admin as "instanceAdmin", password_hash is not null as "passwordSet",
           exists (select 1 from user_identities i where i.user_id = users.id) as sso, created_at as "createdAt"
      from users order by lower(email)`);

export type UserState = { name: string; active: boolean; instance_admin: boolean };
export type UserRowWithState = { id: string; email: string; name: string; active: boolean; instance_admin: boolean };

export async function lockUserState(q: Queryable, userId: string): Promise<UserState | null> {
  const [row] = await q.query<UserState>(sql`select name, active, instance_admin from users where id = ${userId} for update`);
  return row ?? null;
}

export async function updateUser(q: Queryable, userId: string, s: UserState): Promise<UserRowWithState> {
  const [row] = await q.query<UserRowWithState>(sql`
    update users set name = ${s.name}, active = ${s.active},
           instance_admin = ${s.instance_admin}, updated_at = now()
     where id = ${userId} returning id, email, name, active, instance_admin`);
  return row;
}

export async function userExists(q: Queryable, userId: string): Promise<boolean> {
  const [u] = await q.query(sql`select 1 from users where id = ${userId}`);
  return Boolean(u);
}

// First-admin setup (setup.ts) -------------------------------------------------------------------------

export const adminExists = async (db: Queryable): Promise<boolean> =>
  (await db.query<{ e: boolean }>(sql`select exists (select 1 from users) as e`))[0].e;

export const liveSetupTokenHashes = (q: Queryable) => q.query<{ token_hash: string }>(sql`select token_hash from setup_tokens where expires_at > now()`);

/** Drops expired setup tokens and stores the hash of a new one. */
export async function storeSetupToken(q: Queryable, token: string, expiresAt: Date): Promise<void> {
  await q.query(sql`delete from setup_tokens where expires_at < now()`);
  await q.query(sql`insert into setup_tokens (token_hash, expires_at) values (${sha256Hex(token)}, ${expiresAt})`);
}

/** In a transaction: waits for the lock `key` until the transaction ends. */
export async function advisoryXactLock(q: Queryable, key: number): Promise<void> {
  await q.query(sql`select pg_advisory_xact_lock(${key})`);
}

/** The first admin's password (their row was made in this transaction) and every replica's setup link spent. */
export async function finishSetup(q: Queryable, userId: string, passwordHash: string): Promise<void> {
  await q.query(sql`update users set password_hash = ${passwordHash} where id = ${userId}`);
  await q.query(sql`delete from setup_tokens`); // every replica's link is spent now
}
