// Identity providers for the single sign-on tests (issue #38).
// - startProvider: a REAL OpenID Provider (`oidc-provider`, a certified implementation) on loopback, with
//   test accounts whose claims (e-mail, verification, groups) the test changes between sign-ins, a count
//   of JWKS reads, and a restart with new signing keys (rotation).
// - startForger: a hostile provider that answers the code exchange with an ID token broken on purpose
//   (another key, alg none, another audience, another nonce, old or future iat), to show each is refused.
// - signInOverHttp: the whole flow without a browser: start → provider's login form → callback.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { JWK } from 'jose';
import Provider from 'oidc-provider';
import { freePort } from './ports.ts';

export { freePort };

export interface Account {
  email: string;
  email_verified: boolean;
  name: string;
  groups: string[];
}

export interface RealProvider {
  issuer: string;
  accounts: Map<string, Account>;
  /** How many times the JWKS was read since start (across restarts). */
  jwksReads: () => number;
  /** Restart on the same address with a new signing key first (the old one still published after it). */
  rotate: () => Promise<string>;
  stop: () => Promise<void>;
  start: () => Promise<void>;
}

export const CLIENT_ID = 'svc-tests';
export const CLIENT_SECRET = `secret-${randomBytes(12).toString('hex')}`;


async function newKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

const listen = (server: Server, port: number) =>
  new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => ok());
  });
const close = (server: Server) =>
  new Promise<void>((ok) => {
    server.close(() => ok());
    server.closeAllConnections();
  });

export async function startProvider(redirectUri: string, opts: { port?: number; authMethod?: string } = {}): Promise<RealProvider> {
  const port = opts.port ?? (await freePort());
  const issuer = `http://127.0.0.1:${port}`;
  const accounts = new Map<string, Account>();
  let keys = [await newKey()];
  let reads = 0;
  let server: Server | null = null;
  const make = () => {
    const provider = new Provider(issuer, {
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: opts.authMethod ?? 'client_secret_basic' }],
      jwks: { keys },
      cookies: { keys: ['oidc-tests-cookie-key'] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
      scopes: ['openid', 'email', 'profile', 'groups'],
      findAccount: async (_ctx: unknown, id: string) => {
        const a = accounts.get(id);
        if (!a) return undefined;
        return { accountId: id, claims: async () => ({ sub: id, ...a }) };
      },
      features: { devInteractions: { enabled: true } },
      // A first-party client: no consent screen (the login form is the interaction the tests drive).
      loadExistingGrant: async (ctx: any) => { // eslint-disable-line @typescript-eslint/no-explicit-any
        const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
        grant.addOIDCScope('openid email profile groups');
        await grant.save();
        return grant;
      },
    });
    provider.on('server_error', (_ctx: unknown, err: Error) => console.error('oidc-provider server_error', err));
    const callback = provider.callback();
    return createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.startsWith('/jwks')) reads++;
      if (req.headers['x-down']) return res.destroy();
      callback(req, res);
    });
  };
  const start = async () => {
    server = make();
    await listen(server, port);
  };
  const stop = async () => {
    if (server) await close(server);
    server = null;
  };
  await start();
  return {
    issuer,
    accounts,
    jwksReads: () => reads,
    async rotate() {
      const next = await newKey();
      keys = [next, ...keys];
      await stop();
      await start();
      return next.kid!;
    },
    stop,
    start,
  };
}

/** The browser's side of a site: cookies by name, sent back to the same origin. */
export class Jar {
  private cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const [name, ...v] = pair.split('=');
      const gone = attrs.some((a) => /^\s*max-age=0/i.test(a)) || v.join('=') === '';
      if (gone) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), v.join('='));
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  get(name: string): string | undefined {
    return this.cookies.get(name);
  }
}

export interface Flow {
  /** The server's answer to the callback. */
  callback: Response;
  /** The callback URL the provider sent the browser to. */
  callbackUrl: string;
  /** The server's cookies (state cookie before the callback; the session after a success). */
  svc: Jar;
}

const get = (url: string, jar: Jar, init: RequestInit = {}) =>
  fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: jar.header() } }).then((res) => (jar.take(res), res));

/** Starts at the server, signs in at the provider as `login`, and stops before the callback. */
export async function toCallback(serverUrl: string, login: string): Promise<{ callbackUrl: string; svc: Jar }> {
  const svc = new Jar();
  const op = new Jar();
  const start = await get(`${serverUrl}/api/auth/oidc/start`, svc);
  if (start.status !== 302) throw new Error(`start answered ${start.status}: ${await start.text()}`);
  let url = start.headers.get('location')!;
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(serverUrl)) return { callbackUrl: url, svc };
    const res = await get(url, op);
    if (res.status === 200 && new URL(url).pathname.startsWith('/interaction/')) {
      const page = await res.text();
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1] ?? 'login';
      const form = new URLSearchParams({ prompt, login, password: 'any' });
      const sent = await get(url, op, { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      url = new URL(sent.headers.get('location')!, url).toString();
      continue;
    }
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).toString();
      continue;
    }
    throw new Error(`the provider answered ${res.status} at ${url}: ${(await res.text()).slice(0, 500)}`);
  }
  throw new Error('too many redirects');
}

export async function signInOverHttp(serverUrl: string, login: string): Promise<Flow> {
  const { callbackUrl, svc } = await toCallback(serverUrl, login);
  const callback = await get(callbackUrl, svc);
  return { callback, callbackUrl, svc };
}

export type Forgery = 'ok' | 'other-key' | 'alg-none' | 'other-aud' | 'nonce' | 'iat-old' | 'iat-future' | 'expired' | 'unverified';

export interface Forger {
  issuer: string;
  mode: Forgery;
  /** What the token endpoint received last (to check client_secret_post). */
  lastTokenRequest: { authorization: string | null; body: URLSearchParams } | null;
  stop: () => Promise<void>;
}

/** A provider that signs what the test asks for; `authMethods` is what its discovery lists. */
export async function startForger(clientId: string, authMethods = ['client_secret_basic', 'client_secret_post']): Promise<Forger> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const good = await generateKeyPair('RS256');
  const bad = await generateKeyPair('RS256');
  const kid = 'forger-key';
  const pub = { ...(await exportJWK(good.publicKey)), kid, alg: 'RS256', use: 'sig' };
  const nonces = new Map<string, string>();
  const state: Forger = { issuer, mode: 'ok', lastTokenRequest: null, stop: async () => close(server) };
  const sign = async (nonce: string) => {
    const now = Math.floor(Date.now() / 1000);
    const m = state.mode;
    const claims = {
      nonce: m === 'nonce' ? 'another-nonce' : nonce,
      email: 'forged@example.test',
      email_verified: m !== 'unverified',
      name: 'Forged',
      groups: [],
    };
    if (m === 'alg-none') {
      const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      return `${enc({ alg: 'none', typ: 'JWT' })}.${enc({ ...claims, iss: issuer, aud: clientId, sub: 'forged', iat: now, exp: now + 300 })}.`;
    }
    const iat = m === 'iat-old' ? now - 3 * 3600 : m === 'iat-future' ? now + 3600 : now;
    const exp = m === 'expired' ? now - 600 : now + 24 * 3600;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(issuer)
      .setAudience(m === 'other-aud' ? 'another-client' : clientId)
      .setSubject('forged')
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(m === 'other-key' ? bad.privateKey : good.privateKey);
  };
  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, issuer);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return send(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        token_endpoint_auth_methods_supported: authMethods,
        id_token_signing_alg_values_supported: ['RS256', 'none'],
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
      });
    }
    if (url.pathname === '/jwks') return send(200, { keys: [pub] });
    if (url.pathname === '/authorize') {
      const code = randomBytes(16).toString('hex');
      nonces.set(code, url.searchParams.get('nonce')!);
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state')!);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const body = new URLSearchParams(raw);
      state.lastTokenRequest = { authorization: req.headers.authorization ?? null, body };
      const nonce = nonces.get(body.get('code') ?? '');
      if (!nonce) return send(400, { error: 'invalid_grant', error_description: 'unknown code' });
      nonces.delete(body.get('code')!);
      return send(200, { id_token: await sign(nonce), access_token: 'forged-access', token_type: 'Bearer', expires_in: 300 });
    }
    send(404, { error: 'not_found' });
  });
  await listen(server, port);
  return state;
}
