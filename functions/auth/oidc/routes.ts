// Single sign-on through the team's OpenID Provider (issue #38; docs/security.md "Single sign-on"):
// authorization code with PKCE (S256); state, nonce and the verifier ride in a short-lived signed HttpOnly
// cookie; the callback takes each state once, exchanges the code, checks the ID token (provider.ts), finds
// or makes the user and applies the groups' roles (users.ts), then signs in exactly like a password does.
import { createHash, createHmac } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import * as z from 'zod';
import { oidcStatus } from '../../../protocol/api/auth.ts';
import type { OidcStatus } from '../../../protocol/api/auth.ts';
import { route } from '../../lib/context.ts';
import type { AppContext, Route } from '../../lib/context.ts';
import { constantTimeEqual, randomToken, sha256Hex } from '../../lib/crypto.ts';
import { sql } from '../../lib/db/index.ts';
import { json, notFound } from '../../lib/errors.ts';
import { respond } from '../../lib/respond.ts';
import { createSession, readCookie, sessionCookie } from '../auth.ts';
import { credentialsChanged } from '../principal-cache.ts';
import { problemPage } from './page.ts';
import { OidcError, discover, exchangeCode, oidcEnabled, short, userInfo, verifyIdToken } from './provider.ts';
import type { OidcConfig } from './provider.ts';
import { applyGroupRoles, userForIdentity } from './users.ts';

const STATE_COOKIE = 'svc_oidc';
const STATE_MINUTES = 10;
const STATE_ISSUER = 'svc-oidc-state';

/** The state cookie's key: derived from the session key, so a session JWT can never pass as one (nor the reverse). */
const stateKey = (ctx: AppContext) => new Uint8Array(createHmac('sha256', Buffer.from(ctx.keys.session)).update('svc:oidc-state').digest());
const prefix = (publicUrl: string) => new URL(publicUrl).pathname.replace(/\/+$/, '');
const cookiePath = (publicUrl: string) => `${prefix(publicUrl)}/api/auth/oidc`;
export const redirectUri = (publicUrl: string) => `${publicUrl}/api/auth/oidc/callback`;

const TITLES: Record<string, string> = {
  provider_unavailable: 'The identity provider cannot be reached',
  provider_refused: 'The identity provider did not sign you in',
  email_not_verified: 'Your e-mail address is not verified',
  domain_not_allowed: 'This e-mail domain may not sign in',
  user_inactive: 'Your account is deactivated',
  email_linked_elsewhere: 'This e-mail belongs to another sign-in',
  public_url_missing: 'Single sign-on is not set up',
};

function requireSetUp(config: AppContext['config']): OidcConfig & { PUBLIC_URL: string } {
  if (!oidcEnabled(config)) throw notFound('single sign-on is not configured on this instance (OIDC_ISSUER)');
  if (!config.PUBLIC_URL) {
    throw new OidcError(503, 'public_url_missing', 'PUBLIC_URL must be set for single sign-on: the provider sends the browser back to <PUBLIC_URL>/api/auth/oidc/callback');
  }
  return config as OidcConfig & { PUBLIC_URL: string };
}

/** A problem page for a failed sign-in (logged by its code and message: neither holds a credential). */
function failed(ctx: AppContext, request: Request, err: unknown): Response {
  if (!(err instanceof OidcError)) throw err;
  ctx.log.warn('single sign-on failed', { code: err.code, reason: err.message });
  const base = ctx.config.PUBLIC_URL ?? '';
  const clear = ctx.config.PUBLIC_URL ? sessionCookie(ctx, request, null, undefined, STATE_COOKIE, cookiePath(ctx.config.PUBLIC_URL)) : undefined;
  return problemPage(err.status, TITLES[err.code] ?? 'Single sign-on failed', err.message, `${base}/`, clear);
}

const callbackQuery = z.object({
  code: z.string().max(4096).optional(),
  state: z.string().max(512).optional(),
  iss: z.string().max(2048).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(2048).optional(),
});

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/auth/oidc', tag: 'auth', access: 'public',
    summary: 'What the sign-in page offers: single sign-on (and whether the provider can be used now) and password sign-in',
    responses: { 200: { description: 'single sign-on and password sign-in state', schema: oidcStatus } },
    async handler(_input, ctx) {
      const c = ctx.config;
      const answer: OidcStatus = { enabled: oidcEnabled(c), buttonText: null, ready: false, problem: null, passwordSignIn: c.PASSWORD_SIGNIN === 'on' };
      if (oidcEnabled(c)) {
        answer.buttonText = c.OIDC_BUTTON_TEXT;
        try {
          requireSetUp(c);
          await discover(c);
          answer.ready = true;
        } catch (err) {
          if (!(err instanceof OidcError)) throw err;
          answer.problem = err.message;
        }
      }
      return json(answer, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({ method: 'GET', path: '/api/auth/oidc/start', tag: 'auth', access: 'public',
    summary: 'Start single sign-on: 302 to the identity provider (authorization code with PKCE); 404 when OIDC is not configured',
    responses: { 302: { description: 'to the provider\'s authorization endpoint, with the state cookie set' } },
    async handler({ request }, ctx) {
      try {
        const c = requireSetUp(ctx.config);
        const d = await discover(c);
        const state = randomToken(24);
        const nonce = randomToken(24);
        const verifier = randomToken(32);
        const expiresAt = new Date(Date.now() + STATE_MINUTES * 60_000);
        const cookie = await new SignJWT({ state, nonce, verifier })
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer(STATE_ISSUER)
          .setIssuedAt()
          .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
          .sign(stateKey(ctx));
        const to = new URL(d.authorization_endpoint);
        const params = {
          response_type: 'code',
          client_id: c.OIDC_CLIENT_ID,
          redirect_uri: redirectUri(c.PUBLIC_URL),
          scope: c.OIDC_SCOPES,
          state,
          nonce,
          code_challenge: createHash('sha256').update(verifier).digest('base64url'),
          code_challenge_method: 'S256',
        };
        for (const [k, v] of Object.entries(params)) to.searchParams.set(k, v);
        return respond(null, 302, {
          location: to.toString(),
          'set-cookie': sessionCookie(ctx, request, cookie, expiresAt, STATE_COOKIE, cookiePath(c.PUBLIC_URL)),
          'cache-control': 'no-store',
        });
      } catch (err) {
        return failed(ctx, request, err);
      }
    },
  }),
  route({ method: 'GET', path: '/api/auth/oidc/callback', tag: 'auth', access: 'public',
    summary: 'Where the provider sends the browser back: checks state, code and ID token, signs in, 302 to the app; a page saying why otherwise',
    responses: { 302: { description: 'signed in: to the app, with the session cookie set' } },
    query: callbackQuery,
    async handler({ request, query, requestId }, ctx) {
      try {
        const c = requireSetUp(ctx.config);
        const saved = await readState(ctx, request);
        if (!query.state || !constantTimeEqual(query.state, saved.state)) {
          throw new OidcError(400, 'state_mismatch', 'the answer from the identity provider does not belong to the sign-in this browser started (state); start the sign-in again');
        }
        if (query.error) throw new OidcError(403, 'provider_refused', `the identity provider answered: ${short(query.error)}${query.error_description ? ` (${short(query.error_description)})` : ''}`);
        if (!query.code) throw new OidcError(400, 'no_code', 'the identity provider sent the browser back without a code');
        const d = await discover(c);
        if (query.iss !== undefined && query.iss !== d.issuer) throw new OidcError(400, 'wrong_issuer', 'the answer names another issuer (iss); start the sign-in again');
        if (!(await takeState(ctx, saved.state))) {
          throw new OidcError(400, 'already_used', 'this sign-in was finished already (the page was opened twice or replayed); start the sign-in again');
        }
        const tokens = await exchangeCode(c, d, query.code, saved.verifier, redirectUri(c.PUBLIC_URL));
        const claims = await verifyIdToken(c, d, tokens.idToken, saved.nonce);
        const sub = claims.sub!;
        const needInfo = claims.email === undefined || claims.email_verified === undefined || claims[c.OIDC_GROUPS_CLAIM] === undefined;
        const info = needInfo ? await userInfo(d, tokens.accessToken, sub) : {};
        const claim = (name: string): unknown => claims[name] ?? info[name];
        const email = claim('email');
        if (typeof email !== 'string' || !email.includes('@')) throw new OidcError(403, 'no_email', 'the identity provider did not share your e-mail address (scope "email")');
        if (claim('email_verified') !== true) throw new OidcError(403, 'email_not_verified', `the identity provider has not verified ${email}; verify it there first`);
        const address = email.toLowerCase();
        const domain = address.slice(address.lastIndexOf('@') + 1);
        if (c.OIDC_ALLOWED_DOMAINS?.length && !c.OIDC_ALLOWED_DOMAINS.includes(domain)) {
          throw new OidcError(403, 'domain_not_allowed', `accounts of ${domain} may not sign in to this svc (OIDC_ALLOWED_DOMAINS)`);
        }
        const rawGroups = claim(c.OIDC_GROUPS_CLAIM);
        const groups = (Array.isArray(rawGroups) ? rawGroups : typeof rawGroups === 'string' ? [rawGroups] : []).filter((g): g is string => typeof g === 'string');
        const name = typeof claim('name') === 'string' && (claim('name') as string).trim() ? short(claim('name')).trim() : address;
        const user = await ctx.db.transaction(async (tx) => {
          const found = await userForIdentity(tx, { issuer: d.issuer, subject: sub, email: address, name, groups }, requestId);
          return applyGroupRoles(tx, c, found, groups, requestId);
        });
        credentialsChanged(ctx); // the groups may have changed the user's instance admin
        const session = await createSession(ctx, user, 'oidc');
        const headers = new Headers({ location: `${c.PUBLIC_URL}/`, 'cache-control': 'no-store' });
        headers.append('set-cookie', sessionCookie(ctx, request, session.jwt, session.expiresAt));
        headers.append('set-cookie', sessionCookie(ctx, request, null, undefined, STATE_COOKIE, cookiePath(c.PUBLIC_URL)));
        return new Response(null, { status: 302, headers });
      } catch (err) {
        return failed(ctx, request, err);
      }
    },
  }),
];

/** The state cookie of the sign-in this browser started; a missing, forged or expired one is a 400. */
async function readState(ctx: AppContext, request: Request): Promise<{ state: string; nonce: string; verifier: string }> {
  const jwt = readCookie(request, STATE_COOKIE);
  const lost = new OidcError(400, 'no_sign_in', `this browser has no sign-in under way (it was started elsewhere, or more than ${STATE_MINUTES} minutes ago); start the sign-in again`);
  if (!jwt) throw lost;
  try {
    const { payload } = await jwtVerify(jwt, stateKey(ctx), { issuer: STATE_ISSUER, algorithms: ['HS256'] });
    const { state, nonce, verifier } = payload;
    if (typeof state !== 'string' || typeof nonce !== 'string' || typeof verifier !== 'string') throw lost;
    return { state, nonce, verifier };
  } catch {
    throw lost;
  }
}

/** Takes a state once across every replica: false when it was taken before. Drops expired ones on the way. */
async function takeState(ctx: AppContext, state: string): Promise<boolean> {
  await ctx.db.query(sql`delete from oidc_used_states where expires_at < now()`);
  const [taken] = await ctx.db.query(sql`
    insert into oidc_used_states (state_hash, expires_at) values (${sha256Hex(state)}, now() + ${STATE_MINUTES} * interval '1 minute')
    on conflict (state_hash) do nothing returning 1`);
  return Boolean(taken);
}
