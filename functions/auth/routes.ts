// Sign-in, sign-out, the current user, password links, personal API tokens, and user administration.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Principal, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { randomToken, sha256Hex } from '../lib/crypto.ts';
import { HttpError, badRequest, conflict, notFound, json } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { publicBase } from '../lib/urls.ts';
import { createApiToken, createSession, sessionCookie, sessionCsrf, toUser } from './auth.ts';
import { PASSWORD_MAX, PASSWORD_MIN, hashPassword, verifyPassword } from './passwords.ts';
import { checkSignInAllowed, clearAccountFailures, recordSignInFailure } from './ratelimit.ts';

export const email = z.email({ message: 'must be an e-mail address' }).max(254).transform((e) => e.toLowerCase());
export const password = z.string().min(PASSWORD_MIN, { message: `must be at least ${PASSWORD_MIN} characters` }).max(PASSWORD_MAX);
const id = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be an id' });
export const name = z.string().trim().min(1).max(200);
/** Optional; absent or null = the token never expires. */
const tokenExpiry = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 timestamp with a time zone' })
  .refine((t) => Date.parse(t) > Date.now(), { message: 'must be in the future' })
  .nullable()
  .optional()
  .describe('When the token stops working (ISO 8601 with a time zone, in the future); absent or null = never');

export const userSchema = z.object({ id: z.string(), email: z.string(), name: z.string(), instanceAdmin: z.boolean(), active: z.boolean().optional() });

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

const meResponse = async (ctx: AppContext, principal: Principal, request: Request) => {
  const projects = await ctx.db.query<{ id: string; name: string; role: string }>(sql`
    select p.id, p.name, case when ${principal.user.instanceAdmin} then 'admin' else m.role end as role
      from projects p left join project_members m on m.project_id = p.id and m.user_id = ${principal.user.id}
     where ${principal.user.instanceAdmin} or m.user_id is not null
     order by p.name`);
  return {
    user: principal.user,
    via: principal.via,
    csrfToken: principal.via === 'session' ? await sessionCsrf(ctx, request) : null,
    projects,
  };
};

export const routes: Route[] = [
  route({
    method: 'POST',
    path: '/api/session',
    summary: 'Sign in with e-mail and password; sets the session cookie and returns the CSRF token',
    tag: 'auth',
    access: 'public',
    body: z.strictObject({ email, password: z.string().max(PASSWORD_MAX) }),
    bodyLimit: 16 * 1024,
    async handler({ body, request, clientAddress }, ctx) {
      await checkSignInAllowed(ctx.db, body.email, clientAddress);
      const [row] = await ctx.db.query<{ id: string; email: string; name: string; active: boolean; instance_admin: boolean; password_hash: string | null }>(
        sql`select id, email, name, active, instance_admin, password_hash from users where lower(email) = ${body.email}`,
      );
      // Same work and the same answer for an unknown e-mail, a wrong password and an inactive user.
      const ok = await verifyPassword(body.password, row?.password_hash ?? null);
      if (!ok || !row?.active) {
        await recordSignInFailure(ctx.db, body.email, clientAddress);
        throw new HttpError(401, 'invalid_credentials', 'wrong e-mail or password');
      }
      await clearAccountFailures(ctx.db, body.email);
      const user = toUser(row);
      const session = await createSession(ctx, user);
      return json(
        { user, csrfToken: session.csrf, expiresAt: session.expiresAt.toISOString() },
        { headers: { 'set-cookie': sessionCookie(ctx, request, session.jwt, session.expiresAt), 'cache-control': 'no-store' } },
      );
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/session',
    summary: 'Sign out: ends this session everywhere and clears the cookie',
    tag: 'auth',
    access: 'user',
    status: 204,
    async handler({ principal, request }, ctx) {
      if (principal!.sessionId) await ctx.db.query(sql`update sessions set revoked_at = now() where id = ${principal!.sessionId}`);
      return empty(204, { 'set-cookie': sessionCookie(ctx, request, null) });
    },
  }),
  route({
    method: 'GET',
    path: '/api/me',
    summary: 'The signed-in user, the CSRF token of this session, and the projects they can see',
    tag: 'auth',
    access: 'user',
    async handler({ principal, request }, ctx) {
      return json(await meResponse(ctx, principal!, request), { headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({
    method: 'POST',
    path: '/api/password',
    summary: 'Set a password with a one-time link token (first admin, invitation, reset)',
    tag: 'auth',
    access: 'public',
    body: z.strictObject({ token: z.string().min(10).max(200), password }),
    bodyLimit: 16 * 1024,
    async handler({ body, requestId }, ctx) {
      const hash = await hashPassword(body.password);
      const done = await audited(
        ctx.db,
        (userId: string) => ({ actor: { label: 'password-link' }, action: 'user.password_set', target: { type: 'user', id: userId }, requestId }),
        async (tx) => {
          const [link] = await tx.query<{ user_id: string }>(sql`
            update password_links set used_at = now()
             where token_hash = ${sha256Hex(body.token)} and used_at is null and expires_at > now()
            returning user_id`);
          if (!link) throw new HttpError(400, 'invalid_link', 'this link is unknown, used or expired; ask an admin for a new one');
          await tx.query(sql`update users set password_hash = ${hash}, updated_at = now() where id = ${link.user_id}`);
          await tx.query(sql`update sessions set revoked_at = now() where user_id = ${link.user_id} and revoked_at is null`);
          return link.user_id;
        },
      );
      return json({ userId: done, passwordSet: true });
    },
  }),
  route({
    method: 'GET',
    path: '/api/tokens',
    summary: 'Your personal API tokens (never the token itself); expiresAt null = never expires',
    tag: 'auth',
    access: 'user',
    async handler({ principal }, ctx) {
      const tokens = await ctx.db.query(sql`
        select id, name, prefix, created_at as "createdAt", last_used_at as "lastUsedAt", revoked_at as "revokedAt", expires_at as "expiresAt"
          from api_tokens where user_id = ${principal!.user.id} order by created_at`);
      return json({ tokens });
    },
  }),
  route({
    method: 'POST',
    path: '/api/tokens',
    summary: 'Create a personal API token, optionally expiring at expiresAt; the token is shown only in this answer',
    tag: 'auth',
    access: 'user',
    status: 201,
    body: z.strictObject({ name, expiresAt: tokenExpiry }),
    async handler({ principal, body, requestId }, ctx) {
      const expiresAt = body.expiresAt ? new Date(body.expiresAt) : null;
      const diff = { name: body.name, expiresAt: expiresAt?.toISOString() ?? null };
      const created = await audited(
        ctx.db,
        (t: { id: string }) => ({ actor: principal!, action: 'token.create', target: { type: 'api_token', id: t.id }, diff, requestId }),
        (tx) => createApiToken(tx, principal!.user.id, body.name, expiresAt),
      );
      return json({ id: created.id, ...diff, prefix: created.prefix, token: created.token }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/tokens/:tokenId',
    summary: 'Revoke one of your API tokens',
    tag: 'auth',
    access: 'user',
    status: 204,
    params: z.strictObject({ tokenId: id }),
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, { actor: principal!, action: 'token.revoke', target: { type: 'api_token', id: params.tokenId }, requestId }, async (tx) => {
        const [row] = await tx.query(sql`
          update api_tokens set revoked_at = coalesce(revoked_at, now())
           where id = ${params.tokenId} and user_id = ${principal!.user.id} returning id`);
        if (!row) throw notFound('no such token');
      });
      return empty(204);
    },
  }),
  route({
    method: 'GET',
    path: '/api/users',
    summary: 'All users',
    tag: 'users',
    access: 'instanceAdmin',
    async handler(_input, ctx) {
      const users = await ctx.db.query(sql`
        select id, email, name, active, instance_admin as "instanceAdmin", password_hash is not null as "passwordSet", created_at as "createdAt"
          from users order by lower(email)`);
      return json({ users });
    },
  }),
  route({
    method: 'POST',
    path: '/api/users',
    summary: 'Invite a user; answers a one-time password-set link (24 h)',
    tag: 'users',
    access: 'instanceAdmin',
    status: 201,
    body: z.strictObject({ email, name, instanceAdmin: z.boolean().default(false) }),
    async handler({ principal, body, requestId, request }, ctx) {
      const out = await audited(
        ctx.db,
        (r: { user: { id: string } }) => ({ actor: principal!, action: 'user.create', target: { type: 'user', id: r.user.id }, diff: { after: body }, requestId }),
        async (tx) => {
          const user = await createUser(tx, body);
          const link = await createPasswordLink(tx, publicBase(ctx.config, request), user.id);
          return { user, passwordSetUrl: link.url, linkExpiresAt: link.expiresAt.toISOString() };
        },
      );
      return json(out, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({
    method: 'PATCH',
    path: '/api/users/:userId',
    summary: 'Rename, (de)activate or change instance-admin; deactivation ends sessions and tokens at once',
    tag: 'users',
    access: 'instanceAdmin',
    params: z.strictObject({ userId: id }),
    body: z.strictObject({ name: name.optional(), active: z.boolean().optional(), instanceAdmin: z.boolean().optional() }),
    async handler({ principal, params, body, requestId }, ctx) {
      if (params.userId === principal!.user.id && (body.active === false || body.instanceAdmin === false)) {
        throw badRequest('self_lockout', 'you cannot deactivate yourself or drop your own instance-admin role');
      }
      const user = await audited(
        ctx.db,
        (u: { before: unknown }) => ({ actor: principal!, action: 'user.update', target: { type: 'user', id: params.userId }, diff: { before: u.before, after: body }, requestId }),
        async (tx) => {
          const [before] = await tx.query<{ name: string; active: boolean; instance_admin: boolean }>(sql`select name, active, instance_admin from users where id = ${params.userId} for update`);
          if (!before) throw notFound('no such user');
          const [row] = await tx.query<{ id: string; email: string; name: string; active: boolean; instance_admin: boolean }>(sql`
            update users set name = ${body.name ?? before.name}, active = ${body.active ?? before.active},
                   instance_admin = ${body.instanceAdmin ?? before.instance_admin}, updated_at = now()
             where id = ${params.userId} returning id, email, name, active, instance_admin`);
          if (body.active === false) await tx.query(sql`update sessions set revoked_at = now() where user_id = ${params.userId} and revoked_at is null`);
          return { before: { name: before.name, active: before.active, instanceAdmin: before.instance_admin }, row };
        },
      );
      return json({ ...toUser(user.row), active: user.row.active });
    },
  }),
  route({
    method: 'POST',
    path: '/api/users/:userId/password-link',
    summary: 'A new one-time password-set link for a user (reset)',
    tag: 'users',
    access: 'instanceAdmin',
    status: 201,
    params: z.strictObject({ userId: id }),
    async handler({ principal, params, requestId, request }, ctx) {
      const link = await audited(ctx.db, { actor: principal!, action: 'user.password_link', target: { type: 'user', id: params.userId }, requestId }, async (tx) => {
        const [u] = await tx.query(sql`select 1 from users where id = ${params.userId}`);
        if (!u) throw notFound('no such user');
        return createPasswordLink(tx, publicBase(ctx.config, request), params.userId);
      });
      return json({ passwordSetUrl: link.url, linkExpiresAt: link.expiresAt.toISOString() }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
];

