// Answers of the auth and users API (sign-in, the current user, password links, personal API tokens,
// user administration, first-admin setup): the shapes functions/auth/routes.ts and functions/auth/setup.ts
// send (declared in their `responses`, so CHECK_ANSWERS holds the handlers to them) and the pages read
// (type imports only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { iso, role } from './common.ts';

/** A user as the API shows it; `active` where the answer is about an account's state. */
export const userAnswer = z.object({ id: z.string(), email: z.string(), name: z.string(), instanceAdmin: z.boolean(), active: z.boolean().optional() });
export type UserAnswer = z.output<typeof userAnswer>;

/** POST /api/session: the signed-in user, the CSRF token of the new session and when it ends. */
export const sessionAnswer = z.object({ user: userAnswer, csrfToken: z.string(), expiresAt: iso });
export type SessionAnswer = z.output<typeof sessionAnswer>;

/** GET /api/me: the signed-in user, how (session or token), the session's CSRF token, the projects they see. */
export const meAnswer = z.object({
  user: userAnswer,
  via: z.enum(['session', 'token']),
  csrfToken: z.string().nullable(),
  projects: z.array(z.object({ id: z.string(), name: z.string(), role })),
});
export type MeAnswer = z.output<typeof meAnswer>;

/** POST /api/password: whose password the link set. */
export const passwordSetAnswer = z.object({ userId: z.string(), passwordSet: z.literal(true) });
export type PasswordSetAnswer = z.output<typeof passwordSetAnswer>;

/** A personal API token (never the token itself); expiresAt null = never expires. */
export const tokenAnswer = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  createdAt: iso, lastUsedAt: iso.nullable(), revokedAt: iso.nullable(), expiresAt: iso.nullable(),
});
export type TokenAnswer = z.output<typeof tokenAnswer>;
export const tokenList = z.object({ tokens: z.array(tokenAnswer) });
export type TokenList = z.output<typeof tokenList>;

/** POST /api/tokens: the new token, shown in this answer only. */
export const tokenCreated = z.object({ id: z.string(), name: z.string(), expiresAt: iso.nullable(), prefix: z.string(), token: z.string() });
export type TokenCreated = z.output<typeof tokenCreated>;

/** PATCH /api/users/:userId: the user as saved. */
export const userUpdated = userAnswer.extend({ active: z.boolean() });

/** GET /api/users: every user with their state. */
export const userListEntry = userUpdated.extend({
  passwordSet: z.boolean(),
  sso: z.boolean().describe('has signed in through the identity provider (single sign-on)'),
  createdAt: iso,
});
export type UserListEntry = z.output<typeof userListEntry>;
export const userList = z.object({ users: z.array(userListEntry) });
export type UserList = z.output<typeof userList>;

/** A one-time password-set link (24 h). */
export const passwordLinkAnswer = z.object({ passwordSetUrl: z.string(), linkExpiresAt: iso });
export type PasswordLinkAnswer = z.output<typeof passwordLinkAnswer>;

/** POST /api/users: the invited user and their password-set link. */
export const userInvited = passwordLinkAnswer.extend({ user: userAnswer });
export type UserInvited = z.output<typeof userInvited>;

/** GET /api/setup. */
export const setupState = z.object({ needed: z.boolean().describe("true while no user exists: the setup link in the server's log makes the first admin") });
export type SetupState = z.output<typeof setupState>;

/** POST /api/setup: the first instance admin. */
export const setupDone = z.object({ user: userAnswer });
export type SetupDone = z.output<typeof setupDone>;

/** GET /api/auth/oidc: what the sign-in page offers (single sign-on, passwords) and why SSO is not usable now. */
export const oidcStatus = z.object({
  enabled: z.boolean().describe('OIDC_ISSUER is set'),
  buttonText: z.string().nullable(),
  ready: z.boolean().describe('the provider answered its discovery document and PUBLIC_URL is set'),
  problem: z.string().nullable().describe('why the button cannot be used now (provider unreachable, PUBLIC_URL missing)'),
  passwordSignIn: z.boolean().describe('false when PASSWORD_SIGNIN=off: only the break-glass admin signs in with a password'),
});
export type OidcStatus = z.output<typeof oidcStatus>;

/** DELETE /api/users/:userId/sessions: how many live sessions were ended. */
export const sessionsEnded = z.object({ userId: z.string(), sessionsEnded: z.number().int() });
export type SessionsEnded = z.output<typeof sessionsEnded>;
