// GitHub App mode, the server half (issue #36 item 1; docs/github-app.md, "App mode"): the App JWT, the
// calls made as the App, and installation tokens scoped to one repository.
//   - The JWT: RS256 with the stored private key (jose), `iss` the App ID, `iat` 60 s in the past (GitHub's
//     advice against clock drift), `exp` 10 minutes after `iat` (GitHub's maximum).
//   - A token for owner/name: `GET {apiUrl}/repos/{owner}/{name}/installation` finds the installation,
//     `POST {apiUrl}/app/installations/{id}/access_tokens {"repositories": [name]}` mints a token for
//     that repository only.
//   - Cached until 5 minutes before it expires, SHARED BY ALL REPLICAS: stored in codehost_app_tokens,
//     AES-256-GCM under APP_ENCRYPTION_KEY with its AAD bound to the app and the repository. A new one is
//     minted in a transaction under an advisory lock keyed by app and repository: a replica that asks
//     while another mints waits, then finds the new row. On PGlite (one process owns the database) the
//     in-process single flight is that lock; a transaction there would hold the whole database while
//     GitHub answers.
// Every call goes through the outbound address guard with the webhooks' allowlist (functions/webhooks/
// request.ts). Failures are results carrying GitHub's own message, never exceptions; the token is in
// no result but the token itself, and never in a log line or an error.
import { createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Clock } from '../lib/clock.ts';
import { DecryptError, decryptSecret, encryptSecret } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { compileAllowlist } from '../webhooks/guard.ts';
import type { Allowlist, Resolver } from '../webhooks/guard.ts';
import { requestJson } from '../webhooks/request.ts';
import { loadAllowlist } from '../webhooks/webhooks.ts';
import { privateKeyAad } from './apps.ts';
import type { AppRow } from './apps.ts';

/** A failure as the API shows it: what went wrong, in GitHub's words when GitHub answered. */
export interface AppError {
  code: string;
  message: string;
  /** GitHub's HTTP status, when it answered. */
  status?: number;
}
export type Result<T> = { ok: true; value: T } | { ok: false; error: AppError };

export interface AppDeps {
  db: Db;
  /** APP_ENCRYPTION_KEY. */
  key: Buffer | null;
  clock: Clock;
  log?: Logger;
  /** The address allowlist; read from the database when absent. */
  allowlist?: Allowlist;
  resolve?: Resolver;
}

export interface InstallationToken {
  token: string;
  expiresAt: string;
  installationId: number;
  /** Whether this ask minted it (false: the shared cache had it). */
  minted: boolean;
}

/** GitHub's limit on `exp − iat`, and how far in the past `iat` is set. */
export const JWT_LIFETIME_S = 600;
export const JWT_BACKDATE_S = 60;
/** A cached token is used until this long before it expires. */
export const REFRESH_BEFORE_MS = 5 * 60_000;

const ok = <T>(value: T): Result<T> => ({ ok: true, value });
const fail = (code: string, message: string, status?: number): { ok: false; error: AppError } => ({ ok: false, error: { code, message, ...(status === undefined ? {} : { status }) } });
export const tokenAad = (appId: string, repo: string) => `codehost_app_token:${appId}:${repo}`;

/** The App's private key as a key object, or why it cannot be used. */
function signingKey(app: AppRow, key: Buffer | null): Result<{ appId: number; key: KeyObject }> {
  if (app.github_app_id === null) return fail('app_id_missing', "The App ID is not set: enter the GitHub App's App ID (Settings → GitHub App → Edit)");
  if (app.private_key_ciphertext === null) return fail('private_key_missing', "No private key is stored: generate one on the GitHub App's settings page and enter it (Settings → GitHub App → Edit)");
  try {
    const pem = decryptSecret(key, app.private_key_ciphertext, privateKeyAad(app.id));
    return ok({ appId: Number(app.github_app_id), key: createPrivateKey(pem) });
  } catch (err) {
    return fail('private_key_unavailable', `The private key ${err instanceof DecryptError ? err.message.replace(/^cannot/, 'cannot be used: cannot') : 'cannot be read'}`);
  }
}

/** The App JWT: RS256, `iss` the App ID, `iat` 60 s ago, `exp` 10 minutes after `iat`. */
export async function appJwt(app: AppRow, key: Buffer | null, nowMs: number): Promise<Result<string>> {
  const signer = signingKey(app, key);
  if (!signer.ok) return signer;
  const iat = Math.floor(nowMs / 1000) - JWT_BACKDATE_S;
  try {
    const jwt = await new SignJWT({}).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).setIssuer(String(signer.value.appId)).setIssuedAt(iat).setExpirationTime(iat + JWT_LIFETIME_S).sign(signer.value.key);
    return ok(jwt);
  } catch (err) {
    return fail('private_key_unusable', `The private key cannot sign an RS256 JWT: ${(err as Error).message}`);
  }
}

/** GitHub's error answer in one line: its `message` (and `errors`), or the status alone. */
function githubMessage(status: number, body: unknown): string {
  const b = (body ?? {}) as { message?: unknown; errors?: unknown };
  const message = typeof b.message === 'string' && b.message ? b.message : `answered ${status}`;
  const errors = Array.isArray(b.errors) ? b.errors.map((e) => (typeof e === 'string' ? e : (e as { message?: string }).message ?? JSON.stringify(e))).join('; ') : '';
  return (errors ? `${message} (${errors})` : message).slice(0, 500);
}

const CODE_OF_STATUS: Record<number, string> = { 401: 'github_unauthorized', 403: 'github_forbidden', 404: 'github_not_found', 422: 'github_unprocessable' };

/**
 * One call to the App's REST API as `auth` (the JWT or an installation token), through the address
 * guard. `what` names the call in the error: "GitHub refused <what> (401): <GitHub's message>".
 */
export async function githubCall(deps: AppDeps, app: AppRow, method: 'GET' | 'POST', path: string, auth: string, what: string, json?: unknown): Promise<Result<unknown>> {
  let url: URL;
  try {
    url = new URL(`${app.api_url}${path}`);
  } catch {
    return fail('invalid_url', `The App's API URL is not a valid URL: ${app.api_url}`);
  }
  const allowlist = deps.allowlist ?? compileAllowlist(await loadAllowlist(deps.db));
  const headers = { accept: 'application/vnd.github+json', authorization: `Bearer ${auth}`, 'x-github-api-version': '2022-11-28', 'user-agent': 'svc-github-app' };
  const res = await requestJson({ url, method, headers, json, allowlist, resolve: deps.resolve });
  if (!res.ok) return fail(res.error, `Cannot reach the App's API at ${url.origin} for ${what}: ${res.detail}`);
  if (res.status >= 200 && res.status < 300) return ok(res.json);
  return fail(CODE_OF_STATUS[res.status] ?? 'github_error', `GitHub refused ${what} (${res.status}): ${githubMessage(res.status, res.json)}`, res.status);
}

interface TokenRow {
  api_url: string;
  github_app_id: string | number;
  installation_id: string | number;
  token_ciphertext: string;
  expires_at: Date | string;
}

/** The shared cached token of app and repository, when it has more than 5 minutes left. */
async function cachedToken(q: Queryable, deps: AppDeps, app: AppRow, repo: string): Promise<InstallationToken | null> {
  const [row] = await q.query<TokenRow>(sql`select api_url, github_app_id, installation_id, token_ciphertext, expires_at from codehost_app_tokens where app_id = ${app.id} and repo = ${repo}`);
  if (!row || row.api_url !== app.api_url || Number(row.github_app_id) !== Number(app.github_app_id)) return null; // minted for another API or App
  const expires = new Date(row.expires_at);
  if (expires.getTime() - deps.clock.now() <= REFRESH_BEFORE_MS) return null;
  try {
    return { token: decryptSecret(deps.key, row.token_ciphertext, tokenAad(app.id, repo)), expiresAt: expires.toISOString(), installationId: Number(row.installation_id), minted: false };
  } catch (err) {
    if (err instanceof DecryptError) return null; // another key: mint a new one
    throw err;
  }
}

/** The installation of the repository, then a token for that one repository, stored for every replica. */
async function mint(q: Queryable, deps: AppDeps, app: AppRow, repo: string): Promise<Result<InstallationToken>> {
  const jwt = await appJwt(app, deps.key, deps.clock.now());
  if (!jwt.ok) return jwt;
  const [owner, name] = repo.split('/');
  const path = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}`;
  const found = await githubCall(deps, app, 'GET', `${path}/installation`, jwt.value, `the App's installation on ${repo}`);
  if (!found.ok) {
    if (found.error.status === 404) return fail('not_installed', `The GitHub App is not installed on ${repo} (or cannot see it): install it on that repository (GitHub: ${found.error.message.replace(/^.*\): /, '')})`, 404);
    return found;
  }
  const installationId = Number((found.value as { id?: unknown })?.id);
  if (!Number.isSafeInteger(installationId)) return fail('invalid_answer', `GitHub's answer for the installation on ${repo} has no installation id`);
  const made = await githubCall(deps, app, 'POST', `/app/installations/${installationId}/access_tokens`, jwt.value, `an installation token for ${repo} (installation ${installationId})`, { repositories: [name] });
  if (!made.ok) {
    if (made.error.status === 404) return fail('installation_gone', `The App's installation ${installationId} on ${repo} is gone (uninstalled or revoked): ${made.error.message}`, 404);
    return made;
  }
  const { token, expires_at } = (made.value ?? {}) as { token?: unknown; expires_at?: unknown };
  const expires = new Date(typeof expires_at === 'string' ? expires_at : NaN);
  if (typeof token !== 'string' || !token || Number.isNaN(expires.getTime())) return fail('invalid_answer', `GitHub's answer for an installation token of ${repo} has no token or expiry`);
  await q.query(sql`
    insert into codehost_app_tokens (app_id, repo, api_url, github_app_id, installation_id, token_ciphertext, expires_at, minted_at)
    values (${app.id}, ${repo}, ${app.api_url}, ${app.github_app_id}, ${installationId}, ${encryptSecret(deps.key!, token, tokenAad(app.id, repo))}, ${expires}, now())
    on conflict (app_id, repo) do update set api_url = excluded.api_url, github_app_id = excluded.github_app_id, installation_id = excluded.installation_id,
      token_ciphertext = excluded.token_ciphertext, expires_at = excluded.expires_at, minted_at = excluded.minted_at`);
  return ok({ token, expiresAt: expires.toISOString(), installationId, minted: true });
}

/** Mints in this process for one app and repository at a time; the callers that ask meanwhile share it. */
const inFlight = new Map<string, Promise<Result<InstallationToken>>>();

function mintShared(deps: AppDeps, app: AppRow, repo: string): Promise<Result<InstallationToken>> {
  if (deps.db.driver === 'pglite') return mint(deps.db, deps, app, repo);
  return deps.db.transaction(async (tx) => {
    await tx.query(sql`select pg_advisory_xact_lock(hashtextextended(${tokenAad(app.id, repo)}, 0))`);
    return (await cachedToken(tx, deps, app, repo).then((t) => t && ok(t))) ?? mint(tx, deps, app, repo);
  });
}

/**
 * The installation token of the App for one repository (owner/name): the shared cached one while it has
 * more than 5 minutes left, else a new one minted once for all replicas. Never throws for GitHub's or
 * the network's fault; a database error still throws.
 */
export async function installationToken(deps: AppDeps, app: AppRow, fullName: string): Promise<Result<InstallationToken>> {
  const repo = fullName.toLowerCase();
  const usable = signingKey(app, deps.key);
  if (!usable.ok) return usable;
  const cached = await cachedToken(deps.db, deps, app, repo);
  if (cached) return ok(cached);
  const k = `${app.id}\n${repo}`;
  let pending = inFlight.get(k);
  if (!pending) {
    // The allowlist is read before the lock's transaction: the mint needs no second connection meanwhile.
    const allowlist = async () => deps.allowlist ?? compileAllowlist(await loadAllowlist(deps.db));
    pending = allowlist()
      .then((list) => mintShared({ ...deps, allowlist: list }, app, repo))
      .finally(() => inFlight.delete(k));
    inFlight.set(k, pending);
  }
  const result = await pending;
  if (!result.ok) deps.log?.warn('github app: no installation token', { appId: app.id, repo, code: result.error.code, message: result.error.message });
  return result;
}

/** Drop the cached token of a repository (GitHub refused it: revoked before its expiry). */
export async function forgetToken(db: Queryable, appId: string, fullName: string): Promise<void> {
  await db.query(sql`delete from codehost_app_tokens where app_id = ${appId} and repo = ${fullName.toLowerCase()}`);
}
