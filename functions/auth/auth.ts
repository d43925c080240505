// Sign-in (DESIGN §4): e-mail + scrypt password; a session is a jose-signed JWT in an HttpOnly cookie
// that names a `sessions` row, so sign-out and deactivation end it at once. Cookie sessions must send
// the session's CSRF token in `X-CSRF-Token` on every state-changing request. Scripts use personal API
// tokens (`Authorization: Bearer svc_pat_…`), stored as SHA-256 only.
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { AppContext, CachedPrincipal, Principal, Role, User } from '../lib/context.ts';
import { ROLES } from '../lib/context.ts';
import { constantTimeEqual, deriveKey, randomToken, sha256Hex } from '../lib/crypto.ts';
import { HttpError } from '../lib/errors.ts';

export const SESSION_COOKIE = 'svc_session';
export const CSRF_HEADER = 'x-csrf-token';
export const SESSION_HOURS = 12;
const TOKEN_PREFIX = 'svc_pat_';

export const unauthorized = (message = 'sign in first') => new HttpError(401, 'unauthorized', message);
export const forbidden = (message: string) => new HttpError(403, 'forbidden', message);

interface UserRow {
  id: string;
  email: string;
  name: string;
  active: boolean;
  instance_admin: boolean;
}
export const toUser = (r: UserRow): User => ({ id: r.id, email: r.email, name: r.name, instanceAdmin: r.instance_admin });

/** The JWT key: derived from APP_ENCRYPTION_KEY when set, else a random key the instance keeps. */
export async function sessionKey(db: Db, encryption: Buffer | null): Promise<Uint8Array> {
  if (encryption) return deriveKey(encryption, 'session-jwt');
  await db.query(sql`insert into instance_keys (name, value) values ('session-jwt', ${randomToken(32)}) on conflict (name) do nothing`);
  const [row] = await db.query<{ value: string }>(sql`select value from instance_keys where name = 'session-jwt'`);
  return new Uint8Array(Buffer.from(row.value, 'base64url'));
}

/** A browser session: a password one lasts SESSION_HOURS, a single sign-on one OIDC_SESSION_HOURS. */
export async function createSession(ctx: AppContext, user: User, method: 'password' | 'oidc' = 'password'): Promise<{ jwt: string; csrf: string; expiresAt: Date }> {
  const id = randomUUID();
  const csrf = randomToken(24);
  const hours = method === 'oidc' ? ctx.config.OIDC_SESSION_HOURS : SESSION_HOURS;
  const expiresAt = new Date(Date.now() + hours * 3600_000);
  await ctx.db.query(sql`insert into sessions (id, user_id, expires_at, method) values (${id}, ${user.id}, ${expiresAt}, ${method})`);
  const jwt = await new SignJWT({ sid: id, csrf })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(user.id)
    .setIssuedAt()
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .setIssuer('svc')
    .sign(ctx.keys.session);
  return { jwt, csrf, expiresAt };
}

function secureCookies(ctx: AppContext, request: Request): boolean {
  return (
    ctx.config.PUBLIC_URL?.startsWith('https:') === true ||
    new URL(request.url).protocol === 'https:' ||
    request.headers.get('x-forwarded-proto') === 'https'
  );
}

export function sessionCookie(ctx: AppContext, request: Request, jwt: string | null, expiresAt?: Date, name = SESSION_COOKIE, path = '/'): string {
  const parts = [`${name}=${jwt ?? ''}`, `Path=${path}`, 'HttpOnly', 'SameSite=Lax'];
  if (secureCookies(ctx, request)) parts.push('Secure');
  parts.push(jwt && expiresAt ? `Expires=${expiresAt.toUTCString()}` : 'Max-Age=0');
  return parts.join('; ');
}

export function readCookie(request: Request, name: string): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return null;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * `api_tokens.last_used_at` is kept to this resolution (docs/api.md): refreshed when a use finds it
 * older, off the request path — the answer never waits for that write, and requests of one token do not
 * queue on its row. Sessions keep no use time.
 */
export const TOKEN_USE_RESOLUTION_MS = 5 * 60_000;
/** Token ids whose refresh is under way in this process (one write each, however many requests see it stale). */
const touching = new Set<string>();

/** Record the token's use when the last recorded one is older than TOKEN_USE_RESOLUTION_MS. */
function touchToken(ctx: AppContext, token: CachedPrincipal): void {
  const tokenId = token.id;
  if ((token.lastUsedMs !== null && Date.now() - token.lastUsedMs < TOKEN_USE_RESOLUTION_MS) || touching.has(tokenId)) return;
  token.lastUsedMs = Date.now(); // a cached entry does not ask again
  touching.add(tokenId);
  // The condition makes concurrent refreshes from several processes one write (the others match nothing).
  ctx.db
    .query(sql`
      update api_tokens set last_used_at = now()
       where id = ${tokenId} and (last_used_at is null or last_used_at < now() - ${TOKEN_USE_RESOLUTION_MS / 1000} * interval '1 second')`)
    .catch((err) => ctx.log.warn('recording when an API token was last used failed', { id: tokenId, error: err instanceof Error ? err.message : String(err) }))
    .finally(() => touching.delete(tokenId));
}

/**
 * Who is calling. A bearer token that is wrong is a 401 at once; a missing or stale cookie is
 * anonymous (null), and the route decides. Cookie sessions on unsafe methods must carry the CSRF token.
 */
export async function authenticate(ctx: AppContext, request: Request): Promise<Principal | null> {
  const authz = request.headers.get('authorization');
  if (authz) {
    const m = /^Bearer\s+(\S+)$/i.exec(authz);
    if (!m || !m[1].startsWith(TOKEN_PREFIX)) throw unauthorized('malformed Authorization header: expected "Bearer svc_pat_…"');
    const hash = sha256Hex(m[1]);
    const safe = SAFE_METHODS.has(request.method);
    const cached = safe ? ctx.principals?.get(`t:${hash}`) : undefined;
    if (cached) {
      touchToken(ctx, cached);
      return { user: cached.user, via: 'token', tokenId: cached.id };
    }
    const mark = ctx.principals?.mark() ?? 0;
    // A read, with the user in the same query: using a token does not write on the request path.
    const [row] = await ctx.db.query<UserRow & { token_id: string; last_used_at: Date | null; expires_at: Date | null }>(sql`
      select t.id as token_id, t.last_used_at, t.expires_at, u.id, u.email, u.name, u.active, u.instance_admin
        from api_tokens t join users u on u.id = t.user_id
       where t.token_hash = ${hash} and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())`);
    const user = row && row.active ? toUser(row) : null;
    if (!user) throw unauthorized('the API token is invalid, expired or revoked');
    const found: CachedPrincipal = { user, id: row.token_id, lastUsedMs: row.last_used_at ? new Date(row.last_used_at).getTime() : null };
    ctx.principals?.set(`t:${hash}`, found, mark, row.expires_at ? new Date(row.expires_at).getTime() : null);
    touchToken(ctx, found);
    return { user, via: 'token', tokenId: row.token_id };
  }
  const jwt = readCookie(request, SESSION_COOKIE);
  if (!jwt) return null;
  let claims: { sub?: string; sid?: unknown; csrf?: unknown };
  try {
    ({ payload: claims } = await jwtVerify(jwt, ctx.keys.session, { issuer: 'svc', algorithms: ['HS256'] }));
  } catch {
    return null; // expired, forged or signed with another key
  }
  if (typeof claims.sid !== 'string' || typeof claims.csrf !== 'string' || !claims.sub) return null;
  const user = await sessionUser(ctx, claims.sid, claims.sub, SAFE_METHODS.has(request.method));
  if (!user) return null;
  if (!SAFE_METHODS.has(request.method)) {
    const sent = request.headers.get(CSRF_HEADER);
    if (!sent || !constantTimeEqual(sent, claims.csrf)) {
      throw new HttpError(403, 'csrf_failed', `state-changing requests from a browser session need the ${CSRF_HEADER} header (from GET /api/me)`);
    }
  }
  return { user, via: 'session', sessionId: claims.sid };
}

/** The active user of a live session (null when it ended, expired, or names another user); cached for safe requests. */
async function sessionUser(ctx: AppContext, sid: string, sub: string, safe: boolean): Promise<User | null> {
  const cached = safe ? ctx.principals?.get(`s:${sid}`) : undefined;
  if (cached) return cached.user.id === sub ? cached.user : null;
  const mark = ctx.principals?.mark() ?? 0;
  const [row] = await ctx.db.query<UserRow & { expires_at: Date }>(sql`
    select u.id, u.email, u.name, u.active, u.instance_admin, s.expires_at
      from sessions s join users u on u.id = s.user_id
     where s.id = ${sid} and s.revoked_at is null and s.expires_at > now()`);
  if (!row || row.id !== sub || !row.active) return null;
  const user = toUser(row);
  ctx.principals?.set(`s:${sid}`, { user, id: sid, lastUsedMs: null }, mark, new Date(row.expires_at).getTime());
  return user;
}

export async function sessionCsrf(ctx: AppContext, request: Request): Promise<string | null> {
  const jwt = readCookie(request, SESSION_COOKIE);
  if (!jwt) return null;
  try {
    const { payload } = await jwtVerify(jwt, ctx.keys.session, { issuer: 'svc', algorithms: ['HS256'] });
    return typeof payload.csrf === 'string' ? payload.csrf : null;
  } catch {
    return null;
  }
}

/** A personal API token; `expiresAt` null = it never expires. */
export async function createApiToken(db: Queryable, userId: string, name: string, expiresAt: Date | null = null): Promise<{ id: string; token: string; prefix: string }> {
  const token = TOKEN_PREFIX + randomToken(32);
  const id = randomUUID();
  const prefix = token.slice(0, TOKEN_PREFIX.length + 6);
  await db.query(sql`
    insert into api_tokens (id, user_id, name, token_hash, prefix, expires_at)
    values (${id}, ${userId}, ${name}, ${sha256Hex(token)}, ${prefix}, ${expiresAt})`);
  return { id, token, prefix };
}

export const roleRank = (role: Role) => ROLES.indexOf(role);

/** The user's role on a project: instance admins are admin everywhere; null when none. */
export async function projectRole(db: Queryable, user: User, projectId: string): Promise<Role | null> {
  const [project] = await db.query<{ role: Role | null }>(sql`
    select m.role from projects p left join project_members m on m.project_id = p.id and m.user_id = ${user.id}
     where p.id = ${projectId}`);
  if (!project) return null;
  if (user.instanceAdmin) return 'admin';
  return project.role;
}

/**
 * The one authorization rule: "may this user act with at least `min` on project P".
 * No role at all answers 404 (projects a user cannot see do not exist for them); a lower role, 403.
 */
export async function requireProjectRole(db: Queryable, principal: Principal, projectId: string, min: Role): Promise<Role> {
  const role = await projectRole(db, principal.user, projectId);
  if (!role) throw new HttpError(404, 'not_found', 'no such project');
  if (roleRank(role) < roleRank(min)) throw forbidden(`this needs the ${min} role on the project; you have ${role}`);
  return role;
}

export function requireInstanceAdmin(principal: Principal): void {
  if (!principal.user.instanceAdmin) throw forbidden('this needs an instance admin');
}
