// The GitHub App half of the fake GitHub (test/fakes/github.ts serves it): apps with their key pairs,
// installations on repositories, and installation tokens, with GitHub's shapes and messages:
//   GET  /app/installations                       the App's installations (App JWT)
//   GET  /repos/:o/:r/installation                the installation on a repository; 404 when none (App JWT)
//   POST /app/installations/:id/access_tokens     201 {token, expires_at, permissions, repository_selection,
//                                                 repositories}; 404 for an installation that is gone, 403
//                                                 when suspended, 422 for a repository it does not cover
// The App JWT is verified as GitHub does: RS256 signature with the App's public key (jose), `iss` a known
// App, `iat` not in the future, `exp` not passed and `exp − iat` at most 600 s; 401 with GitHub's message
// otherwise. A token it minted is accepted as a Bearer token on its repositories until it expires
// (`tokenTtlSeconds`); a revoked installation's tokens get 401 "Bad credentials".
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { decodeJwt, jwtVerify } from 'jose';
import { installationJson as installationShape, installationTokenJson, repositoryJson, userJson } from './github-shapes.ts';

export interface FakeInstallation {
  id: number;
  appId: number;
  account: string;
  /** owner/name of the repositories it covers. */
  repos: string[];
  suspended: boolean;
}
export interface MintedToken {
  token: string;
  installationId: number;
  repositories: string[];
  expiresAt: number;
  at: number;
}

export interface AppFake {
  /** Lifetime of the tokens minted from now on (GitHub: one hour). */
  tokenTtlSeconds: number;
  /** Delay before answering a token request (two replicas asking at once overlap). */
  mintDelayMs: number;
  minted: MintedToken[];
  installations: FakeInstallation[];
  /** A new App with its own RSA key pair; `pem` is the private key GitHub would hand out (PKCS#1). */
  addApp: () => { id: number; pem: string };
  install: (appId: number, account: string, repos: string[]) => FakeInstallation;
  /** The installation is removed: 404 on its endpoints, 401 for its tokens. */
  revoke: (installationId: number) => void;
  /** Whether a token is one of this fake's and what it may do: null when it is not an installation token. */
  tokenState: (token: string | null) => { valid: false } | { valid: true; repos: string[] } | null;
  /** Answers an App endpoint; false when the path is not one. */
  handle: (method: string, path: string, authorization: string | undefined, body: any, send: (status: number, value: unknown) => void) => Promise<boolean>;
}

const DOCS = 'https://docs.github.com/rest';
const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
export const repoId = (fullName: string) => parseInt(createHash('sha1').update(fullName).digest('hex').slice(0, 8), 16);
const PERMISSIONS = { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'read', metadata: 'read' };

export function appFake(baseUrl: () => string): AppFake {
  const keys = new Map<number, KeyObject>();
  const tokens = new Map<string, MintedToken>();
  let nextApp = 1000;
  let nextInstallation = 50_000;
  const fake: AppFake = {
    tokenTtlSeconds: 3600,
    mintDelayMs: 0,
    minted: [],
    installations: [],
    addApp() {
      const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const id = nextApp++;
      keys.set(id, pair.publicKey);
      return { id, pem: pair.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() };
    },
    install(appId, account, repos) {
      const i = { id: nextInstallation++, appId, account, repos, suspended: false };
      fake.installations.push(i);
      return i;
    },
    revoke(installationId) {
      fake.installations = fake.installations.filter((i) => i.id !== installationId);
    },
    tokenState(token) {
      const t = token ? tokens.get(token) : undefined;
      if (!t) return null;
      const alive = fake.installations.some((i) => i.id === t.installationId && !i.suspended);
      return alive && Date.now() < t.expiresAt ? { valid: true, repos: t.repositories } : { valid: false };
    },
    handle: (method, path, authorization, body, send) => handle(method, path, authorization, body, send),
  };

  const installationJson = (i: FakeInstallation) =>
    installationShape({
      id: i.id,
      account: overlayAccount(i.account),
      repository_selection: 'selected',
      access_tokens_url: `${baseUrl()}/app/installations/${i.id}/access_tokens`,
      repositories_url: `${baseUrl()}/installation/repositories`,
      html_url: `https://github.example/organizations/${i.account}/settings/installations/${i.id}`,
      app_id: i.appId,
      app_slug: `app-${i.appId}`,
      target_id: repoId(i.account),
      target_type: 'Organization',
      permissions: PERMISSIONS,
      events: ['issues', 'pull_request', 'check_run'],
      created_at: '2026-11-01T00:00:00Z',
      updated_at: '2026-11-01T00:00:00Z',
      single_file_name: null,
      suspended_at: i.suspended ? '2026-11-20T00:00:00Z' : null,
      suspended_by: null,
    });
  const overlayAccount = (login: string) => ({ ...userJson(login, 'Organization'), id: repoId(login) });

  /** The App the JWT is from, or GitHub's 401 message. */
  async function appOf(authorization: string | undefined): Promise<{ appId: number } | { error: string }> {
    const jwt = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    const undecodable = { error: 'A JSON web token could not be decoded' };
    if (!jwt) return { error: 'You must authenticate with a JSON web token' };
    let claims: ReturnType<typeof decodeJwt>;
    try {
      claims = decodeJwt(jwt);
    } catch {
      return undecodable;
    }
    const key = keys.get(Number(claims.iss));
    if (!key) return { error: `Integration not found` };
    try {
      await jwtVerify(jwt, key, { algorithms: ['RS256'], clockTolerance: 0 });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_JWT_EXPIRED') return { error: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires" };
      return undecodable;
    }
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.iat !== 'number' || claims.iat > now + 1) return { error: "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued" };
    if (typeof claims.exp !== 'number' || claims.exp - claims.iat > 600) return { error: "'Expiration time' claim ('exp') is too far in the future" };
    return { appId: Number(claims.iss) };
  }

  async function handle(method: string, path: string, authorization: string | undefined, body: any, send: (status: number, value: unknown) => void): Promise<boolean> {
    const repo = /^\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(path);
    const mint = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
    if (!(path === '/app/installations' || repo || mint)) return false;
    const app = await appOf(authorization);
    if ('error' in app) return send(401, { message: app.error, documentation_url: DOCS }), true;
    const mine = fake.installations.filter((i) => i.appId === app.appId);
    if (path === '/app/installations' && method === 'GET') return send(200, mine.map(installationJson)), true;
    if (repo && method === 'GET') {
      const fullName = `${repo[1]}/${repo[2]}`.toLowerCase();
      const i = mine.find((x) => x.repos.some((r) => r.toLowerCase() === fullName));
      return send(i ? 200 : 404, i ? installationJson(i) : { message: 'Not Found', documentation_url: DOCS }), true;
    }
    if (mint && method === 'POST') {
      const i = mine.find((x) => x.id === Number(mint[1]));
      if (!i) return send(404, { message: 'Not Found', documentation_url: DOCS }), true;
      if (i.suspended) return send(403, { message: 'This installation has been suspended', documentation_url: DOCS }), true;
      const names: string[] = Array.isArray(body?.repositories) ? body.repositories : i.repos.map((r) => r.split('/')[1]);
      const covered = names.map((n) => i.repos.find((r) => r.split('/')[1].toLowerCase() === String(n).toLowerCase()));
      if (covered.some((r) => !r)) return send(422, { message: 'There is at least one repository that does not exist or is not accessible to the parent installation.', documentation_url: DOCS }), true;
      if (fake.mintDelayMs) await new Promise((r) => setTimeout(r, fake.mintDelayMs));
      const t: MintedToken = { token: `ghs_${randomBytes(27).toString('base64url').replace(/[-_]/g, 'x').slice(0, 36)}`, installationId: i.id, repositories: covered as string[], expiresAt: Date.now() + fake.tokenTtlSeconds * 1000, at: Date.now() };
      tokens.set(t.token, t);
      fake.minted.push(t);
      return (
        send(201, installationTokenJson({ token: t.token, expires_at: iso(t.expiresAt), permissions: PERMISSIONS, repository_selection: 'selected', repositories: t.repositories.map((r) => repositoryJson(r, repoId(r))) })),
        true
      );
    }
    return send(404, { message: 'Not Found', documentation_url: DOCS }), true;
  }
  return fake;
}
