// Sign-in, sign-out, the current user, password links, personal API tokens, and user administration.
// Statements in queries.ts; answers declared in protocol/api/auth.ts.
import * as z from 'zod';
import {
  meAnswer,
  passwordLinkAnswer,
  passwordSetAnswer,
  sessionAnswer,
  sessionsEnded,
  tokenCreated,
  tokenList,
  userInvited,
  userList,
  userUpdated,
} from '../../protocol/api/auth.ts';
import type { MeAnswer } from '../../protocol/api/auth.ts';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Principal, Route } from '../lib/context.ts';
import { HttpError, badRequest, notFound, json } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { publicBase } from '../lib/urls.ts';
import { createApiToken, createSession, sessionCookie, sessionCsrf, toUser } from './auth.ts';
import { PASSWORD_MAX, PASSWORD_MIN, hashPassword, verifyPassword } from './passwords.ts';
import { credentialsChanged } from './principal-cache.ts';
import {
  createPasswordLink,
  createUser,
  listTokens,
  listUsers,
  lockUserState,
  revokeSession,
  revokeToken,
  revokeUserSessions,
  setPasswordHash,
  signInRow,
  updateUser,
  usePasswordLink,
  userExists,
  visibleProjects,
} from './queries.ts';
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


const passwordSignInOff = () =>
  new HttpError(403, 'password_signin_off', 'password sign-in is off on this instance: sign in with single sign-on');

const meResponse = async (ctx: AppContext, principal: Principal, request: Request): Promise<MeAnswer> => {
  const projects = await visibleProjects(ctx.db, principal.user);
  return {
    user: principal.user,
    via: principal.via,
    csrfToken: principal.via === 'session' ? await sessionCsrf(ctx, request) : null,
    projects,
  };
};

export const routes: Route[] = [
  route({ method: 'POST', path: '/api/session', tag: 'auth', access: 'public',
    summary: 'Sign in with e-mail and password; sets the session cookie and returns the CSRF token',
    responses: { 200: { description: 'the signed-in user and the CSRF token of the new session', schema: sessionAnswer } },
    body: z.strictObject({ email, password: z.string().max(PASSWORD_MAX) }),
    bodyLimit: 16 * 1024,
    async handler({ body, request, clientAddress }, ctx) {
      // PASSWORD_SIGNIN=off: single sign-on only, except the break-glass instance admin (BREAK_GLASS_EMAIL).
      const breakGlass = ctx.config.BREAK_GLASS_EMAIL !== undefined && body.email === ctx.config.BREAK_GLASS_EMAIL;
      if (ctx.config.PASSWORD_SIGNIN === 'off' && !breakGlass) throw passwordSignInOff();
      await checkSignInAllowed(ctx.db, body.email, clientAddress);
      const row = await signInRow(ctx.db, body.email);
      // Same work and the same answer for an unknown e-mail, a wrong password and an inactive user.
      const ok = await verifyPassword(body.password, row?.password_hash ?? null);
      if (!ok || !row?.active) {
        await recordSignInFailure(ctx.db, body.email, clientAddress);
        throw new HttpError(401, 'invalid_credentials', 'wrong e-mail or password');
      }
      if (ctx.config.PASSWORD_SIGNIN === 'off' && !row.instance_admin) throw passwordSignInOff();
      await clearAccountFailures(ctx.db, body.email);
      const user = toUser(row);
      const session = await createSession(ctx, user);
      return json(
        { user, csrfToken: session.csrf, expiresAt: session.expiresAt.toISOString() },
        { headers: { 'set-cookie': sessionCookie(ctx, request, session.jwt, session.expiresAt), 'cache-control': 'no-store' } },
      );
    },
  }),
  route({ method: 'DELETE', path: '/api/session', tag: 'auth', access: 'user', status: 204,
    summary: 'Sign out: ends this session everywhere and clears the cookie',
    async handler({ principal, request }, ctx) {
      if (principal!.sessionId) await revokeSession(ctx.db, principal!.sessionId);
      credentialsChanged(ctx);
      return empty(204, { 'set-cookie': sessionCookie(ctx, request, null) });
    },
  }),
  route({ method: 'GET', path: '/api/me', tag: 'auth', access: 'user',
    summary: 'The signed-in user, the CSRF token of this session, and the projects they can see',
    responses: { 200: { description: 'the signed-in user, the CSRF token and their projects', schema: meAnswer } },
    async handler({ principal, request }, ctx) {
      return json(await meResponse(ctx, principal!, request), { headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({ method: 'POST', path: '/api/password', tag: 'auth', access: 'public',
    summary: 'Set a password with a one-time link token (first admin, invitation, reset)',
    responses: { 200: { description: 'whose password was set', schema: passwordSetAnswer } },
    body: z.strictObject({ token: z.string().min(10).max(200), password }),
    bodyLimit: 16 * 1024,
    async handler({ body, requestId }, ctx) {
      const hash = await hashPassword(body.password);
      const done = await audited(
        ctx.db,
        (userId: string) => ({ actor: { label: 'password-link' }, action: 'user.password_set', target: { type: 'user', id: userId }, requestId }),
        async (tx) => {
          const userId = await usePasswordLink(tx, body.token);
          if (!userId) throw new HttpError(400, 'invalid_link', 'this link is unknown, used or expired; ask an admin for a new one');
          await setPasswordHash(tx, userId, hash);
          await revokeUserSessions(tx, userId);
          return userId;
        },
      );
      credentialsChanged(ctx); // the user's sessions ended
      return json({ userId: done, passwordSet: true });
    },
  }),
  route({ method: 'GET', path: '/api/tokens', tag: 'auth', access: 'user',
    summary: 'Your personal API tokens (never the token itself); expiresAt null = never expires',
    responses: { 200: { description: 'your tokens', schema: tokenList } },
    async handler({ principal }, ctx) {
      return json({ tokens: await listTokens(ctx.db, principal!.user.id) });
    },
  }),
  route({ method: 'POST', path: '/api/tokens', tag: 'auth', access: 'user',
    summary: 'Create a personal API token, optionally expiring at expiresAt; the token is shown only in this answer',
    responses: { 201: { description: 'the new token (shown only here)', schema: tokenCreated } },
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
  route({ method: 'DELETE', path: '/api/tokens/:tokenId', tag: 'auth', access: 'user', status: 204, params: z.strictObject({ tokenId: id }),
    summary: 'Revoke one of your API tokens',
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, { actor: principal!, action: 'token.revoke', target: { type: 'api_token', id: params.tokenId }, requestId }, async (tx) => {
        if (!(await revokeToken(tx, principal!.user.id, params.tokenId))) throw notFound('no such token');
      });
      credentialsChanged(ctx);
      return empty(204);
    },
  }),
  route({ method: 'GET', path: '/api/users', tag: 'users', access: 'instanceAdmin',
    summary: 'All users',
    responses: { 200: { description: 'all users', schema: userList } },
    async handler(_input, ctx) {
      return json({ users: await listUsers(ctx.db) });
    },
  }),
  route({ method: 'POST', path: '/api/users', tag: 'users', access: 'instanceAdmin',
    summary: 'Invite a user; answers a one-time password-set link (24 h)',
    responses: { 201: { description: 'the invited user and their password-set link', schema: userInvited } },
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
  route({ method: 'PATCH', path: '/api/users/:userId', tag: 'users', access: 'instanceAdmin',
    summary: 'Rename, (de)activate or change instance-admin; deactivation ends sessions and tokens at once',
    responses: { 200: { description: 'the user as saved', schema: userUpdated } },
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
          const before = await lockUserState(tx, params.userId);
          if (!before) throw notFound('no such user');
          const row = await updateUser(tx, params.userId, { name: body.name ?? before.name, active: body.active ?? before.active, instance_admin: body.instanceAdmin ?? before.instance_admin });
          if (body.active === false) await revokeUserSessions(tx, params.userId);
          return { before: { name: before.name, active: before.active, instanceAdmin: before.instance_admin }, row };
        },
      );
      credentialsChanged(ctx);
      return json({ ...toUser(user.row), active: user.row.active });
    },
  }),
  route({ method: 'DELETE', path: '/api/users/:userId/sessions', tag: 'users', access: 'instanceAdmin',
    summary: 'End every browser session of a user at once (they must sign in again); API tokens are not touched',
    responses: { 200: { description: 'how many live sessions were ended', schema: sessionsEnded } },
    params: z.strictObject({ userId: id }),
    async handler({ principal, params, requestId }, ctx) {
      const ended = await audited(
        ctx.db,
        (n: number) => ({ actor: principal!, action: 'user.sessions_end', target: { type: 'user', id: params.userId }, diff: { sessionsEnded: n }, requestId }),
        async (tx) => {
          if (!(await userExists(tx, params.userId))) throw notFound('no such user');
          return revokeUserSessions(tx, params.userId);
        },
      );
      credentialsChanged(ctx);
      return json({ userId: params.userId, sessionsEnded: ended });
    },
  }),
  route({ method: 'POST', path: '/api/users/:userId/password-link', tag: 'users', access: 'instanceAdmin',
    summary: 'A new one-time password-set link for a user (reset)',
    responses: { 201: { description: 'the new password-set link', schema: passwordLinkAnswer } },
    status: 201,
    params: z.strictObject({ userId: id }),
    async handler({ principal, params, requestId, request }, ctx) {
      const link = await audited(ctx.db, { actor: principal!, action: 'user.password_link', target: { type: 'user', id: params.userId }, requestId }, async (tx) => {
        if (!(await userExists(tx, params.userId))) throw notFound('no such user');
        return createPasswordLink(tx, publicBase(ctx.config, request), params.userId);
      });
      return json({ passwordSetUrl: link.url, linkExpiresAt: link.expiresAt.toISOString() }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
];

