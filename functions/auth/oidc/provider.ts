// The team's OpenID Provider as svc sees it (issue #38, docs/security.md "Single sign-on"): discovery,
// its keys (JWKS), the code exchange and the ID token check. Nothing here logs or returns a token or the
// client secret: a failure is an OidcError whose message names what was wrong, never a credential.
import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import * as z from 'zod';
import type { Config } from '../../lib/config.ts';
import { constantTimeEqual } from '../../lib/crypto.ts';
import { isLoopback } from '../../lib/urls.ts';

export class OidcError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The settings an OIDC sign-in reads (OIDC_ISSUER set). */
export type OidcConfig = Config & { OIDC_ISSUER: string; OIDC_CLIENT_ID: string };
export const oidcEnabled = (c: Config): c is OidcConfig => Boolean(c.OIDC_ISSUER && c.OIDC_CLIENT_ID);

/** An endpoint the provider names: https, or http on a loopback address (as the issuer itself). */
const endpoint = z.string().refine(
  (s) => {
    try {
      const u = new URL(s);
      return !u.username && !u.password && (u.protocol === 'https:' || (u.protocol === 'http:' && isLoopback(u.hostname)));
    } catch {
      return false;
    }
  },
  { message: 'must be an https:// URL (http:// only on a loopback address)' },
);

const discoverySchema = z.object({
  issuer: z.string(),
  authorization_endpoint: endpoint,
  token_endpoint: endpoint,
  jwks_uri: endpoint,
  userinfo_endpoint: endpoint.optional(),
  token_endpoint_auth_methods_supported: z.array(z.string()).optional(),
  id_token_signing_alg_values_supported: z.array(z.string()).optional(),
});
export type Discovery = z.infer<typeof discoverySchema>;

/** Only asymmetric signatures: never `none`, never an HMAC keyed with something the client knows too. */
const ASYMMETRIC = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']);
const DISCOVERY_TTL_MS = 3600_000;
/** A failed discovery is answered from memory this long, so a provider that is down is not hammered. */
const FAILURE_TTL_MS = 10_000;
const TIMEOUT_MS = 10_000;

interface ProviderState {
  discovery?: Discovery;
  at: number;
  failure?: OidcError;
  jwks?: ReturnType<typeof createRemoteJWKSet>;
}
/** Per process, per issuer and client: discovery and keys are read once and shared by every sign-in. */
const states = new Map<string, ProviderState>();

/** A provider-sent text safe to show and log: printable ASCII, at most 200 characters. */
export const short = (s: unknown) => String(s ?? '').replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
const reason = (err: unknown) => (err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err));

/** The provider's discovery document, cached an hour; a failure is an OidcError (503) for 10 s. */
export async function discover(config: OidcConfig): Promise<Discovery> {
  const key = `${config.OIDC_ISSUER} ${config.OIDC_CLIENT_ID}`;
  const now = Date.now();
  const state = states.get(key);
  if (state?.discovery && now - state.at < DISCOVERY_TTL_MS) return state.discovery;
  if (state?.failure && now - state.at < FAILURE_TTL_MS) throw state.failure;
  const url = `${config.OIDC_ISSUER}/.well-known/openid-configuration`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), headers: { accept: 'application/json' }, redirect: 'error' });
    if (!res.ok) throw new Error(`it answered HTTP ${res.status}`);
    const parsed = discoverySchema.safeParse(await res.json());
    if (!parsed.success) throw new Error(`its discovery document is not valid (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`);
    const d = parsed.data;
    if (d.issuer.replace(/\/+$/, '') !== config.OIDC_ISSUER) throw new Error(`its discovery document names another issuer (${short(d.issuer)})`);
    const jwks = createRemoteJWKSet(new URL(d.jwks_uri), {
      timeoutDuration: TIMEOUT_MS,
      cooldownDuration: config.OIDC_JWKS_COOLDOWN_SECONDS * 1000,
      cacheMaxAge: DISCOVERY_TTL_MS,
    });
    // A new discovery keeps the keys already read when the JWKS address did not change.
    const kept = state?.discovery?.jwks_uri === d.jwks_uri ? state.jwks : undefined;
    states.set(key, { discovery: d, at: now, jwks: kept ?? jwks });
    return d;
  } catch (err) {
    const failure = new OidcError(503, 'provider_unavailable', `the identity provider at ${config.OIDC_ISSUER} cannot be used: ${short(reason(err))}`);
    states.set(key, { ...state, discovery: undefined, at: now, failure });
    throw failure;
  }
}

function jwksOf(config: OidcConfig) {
  const jwks = states.get(`${config.OIDC_ISSUER} ${config.OIDC_CLIENT_ID}`)?.jwks;
  if (!jwks) throw new OidcError(503, 'provider_unavailable', 'the identity provider\'s keys are not known yet; start the sign-in again');
  return jwks;
}

/** The token endpoint's client authentication: none (public client), client_secret_basic, or _post when only that is listed. */
export function clientAuth(config: OidcConfig, d: Discovery): 'none' | 'client_secret_basic' | 'client_secret_post' {
  if (!config.OIDC_CLIENT_SECRET) return 'none';
  const methods = d.token_endpoint_auth_methods_supported;
  return methods && methods.includes('client_secret_post') && !methods.includes('client_secret_basic') ? 'client_secret_post' : 'client_secret_basic';
}

const tokenAnswer = z.object({ id_token: z.string().min(1), access_token: z.string().optional() });

/** Exchanges the authorization code (with the PKCE verifier) for the ID token and access token. */
export async function exchangeCode(config: OidcConfig, d: Discovery, code: string, verifier: string, redirectUri: string): Promise<{ idToken: string; accessToken?: string }> {
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  const auth = clientAuth(config, d);
  if (auth === 'client_secret_basic') {
    // RFC 6749 §2.3.1: each part form-urlencoded before base64.
    const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
    headers.authorization = `Basic ${Buffer.from(`${enc(config.OIDC_CLIENT_ID)}:${enc(config.OIDC_CLIENT_SECRET!)}`).toString('base64')}`;
  } else {
    form.set('client_id', config.OIDC_CLIENT_ID);
    if (auth === 'client_secret_post') form.set('client_secret', config.OIDC_CLIENT_SECRET!);
  }
  let res: Response;
  try {
    res = await fetch(d.token_endpoint, { method: 'POST', headers, body: form, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' });
  } catch (err) {
    throw new OidcError(502, 'provider_unavailable', `the identity provider's token endpoint cannot be reached: ${short(reason(err))}`);
  }
  const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (!res.ok) {
    // The provider's own error code and description (RFC 6749 §5.2), never anything else of its answer.
    const what = body && typeof body.error === 'string' ? `${short(body.error)}${body.error_description ? `: ${short(body.error_description)}` : ''}` : `HTTP ${res.status}`;
    throw new OidcError(502, 'code_refused', `the identity provider refused the sign-in code (${what}); start the sign-in again`);
  }
  const parsed = tokenAnswer.safeParse(body);
  if (!parsed.success) throw new OidcError(502, 'no_id_token', 'the identity provider answered without an ID token');
  return { idToken: parsed.data.id_token, accessToken: parsed.data.access_token };
}

const ID_TOKEN_MAX_AGE_SECONDS = 600;
const CLOCK_TOLERANCE_SECONDS = 60;

/** Why jose refused a token, in words an admin can act on (never the token). */
function tokenProblem(err: unknown): string {
  if ((err instanceof errors.JWTExpired || err instanceof errors.JWTClaimValidationFailed) && err.claim === 'iat') {
    return 'the ID token was issued too long ago or in the future (check the clocks)';
  }
  if (err instanceof errors.JWTExpired) return 'the ID token has expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return 'the ID token is for another client (aud)';
    if (err.claim === 'iss') return 'the ID token is from another issuer (iss)';
    return `the ID token's ${short(err.claim)} claim is not valid`;
  }
  if (err instanceof errors.JWKSNoMatchingKey) return 'the ID token is signed with a key the provider does not publish';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the ID token\'s signature does not verify';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the ID token uses a signature algorithm that is not accepted';
  if (err instanceof errors.JWKSTimeout || !(err instanceof errors.JOSEError)) return `the provider's keys cannot be read: ${short(reason(err))}`;
  return `the ID token is not valid (${short((err as Error).message)})`;
}

/** Checks the ID token: signature against the JWKS, iss, aud, exp, iat, nonce and azp. Answers its claims. */
export async function verifyIdToken(config: OidcConfig, d: Discovery, idToken: string, nonce: string): Promise<JWTPayload> {
  const algorithms = (d.id_token_signing_alg_values_supported ?? ['RS256']).filter((a) => ASYMMETRIC.has(a));
  let claims: JWTPayload;
  try {
    ({ payload: claims } = await jwtVerify(idToken, jwksOf(config), {
      issuer: d.issuer,
      audience: config.OIDC_CLIENT_ID,
      algorithms: algorithms.length ? algorithms : ['RS256'],
      maxTokenAge: ID_TOKEN_MAX_AGE_SECONDS,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ['sub', 'iat', 'exp'],
    }));
  } catch (err) {
    throw new OidcError(401, 'bad_id_token', tokenProblem(err));
  }
  if (typeof claims.nonce !== 'string' || !constantTimeEqual(claims.nonce, nonce)) throw new OidcError(401, 'bad_id_token', 'the ID token\'s nonce does not match this sign-in');
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (claims.azp !== undefined ? claims.azp !== config.OIDC_CLIENT_ID : audiences.length > 1) {
    throw new OidcError(401, 'bad_id_token', 'the ID token was issued to another client (azp)');
  }
  return claims;
}

/** The userinfo claims (for what the ID token leaves out), or {} when the provider has no such endpoint. */
export async function userInfo(d: Discovery, accessToken: string | undefined, sub: string): Promise<Record<string, unknown>> {
  if (!d.userinfo_endpoint || !accessToken) return {};
  let res: Response;
  try {
    res = await fetch(d.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' });
  } catch (err) {
    throw new OidcError(502, 'provider_unavailable', `the identity provider's userinfo endpoint cannot be reached: ${short(reason(err))}`);
  }
  if (!res.ok) throw new OidcError(502, 'userinfo_refused', `the identity provider's userinfo endpoint answered HTTP ${res.status}`);
  const info = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (!info || info.sub !== sub) throw new OidcError(502, 'userinfo_refused', 'the userinfo answer is for another subject');
  return info;
}
