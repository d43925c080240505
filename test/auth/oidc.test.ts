// Single sign-on against a REAL OpenID Provider (oidc-provider on loopback; issue #38), over HTTP: the
// whole code flow, users made and linked, the groups' roles added and removed (audited with the groups),
// the callback opened twice, a replayed code, a wrong state, a key rotation at the provider, an unverified
// e-mail, a domain not allowed, ending a user's sessions, and nothing secret in the server's output.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLIENT_ID, CLIENT_SECRET, freePort, signInOverHttp, startProvider, toCallback } from '../helpers/oidc.ts';
import type { RealProvider } from '../helpers/oidc.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let op: RealProvider;
let alpha = '';
let beta = '';

test.before(async () => {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  op = await startProvider(`${publicUrl}/api/auth/oidc/callback`);
  server = await startServer({
    admin: true,
    env: {
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      OIDC_ISSUER: op.issuer,
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
      OIDC_SCOPES: 'openid email profile groups',
      OIDC_BUTTON_TEXT: 'Sign in with Test IdP',
      OIDC_ALLOWED_DOMAINS: 'example.test,corp.test',
      OIDC_ADMIN_GROUPS: 'ops',
      // Alpha by name, Beta by id (set below through a second server start? no: names are resolved at sign-in).
      OIDC_PROJECT_ROLES: JSON.stringify({ devs: { Alpha: 'operator' }, leads: { Alpha: 'admin', Beta: 'viewer' } }),
      OIDC_SESSION_HOURS: '3',
      OIDC_JWKS_COOLDOWN_SECONDS: '1',
    },
  });
  alpha = (await (await server.api('/api/projects', { method: 'POST', json: { name: 'Alpha', repo: 'acme/alpha' } })).json()).id;
  beta = (await (await server.api('/api/projects', { method: 'POST', json: { name: 'Beta', repo: 'acme/beta' } })).json()).id;
});
test.after(async () => {
  await server?.cleanup();
  await op?.stop();
});

const account = (sub: string, a: Partial<{ email: string; email_verified: boolean; name: string; groups: string[] }> = {}) =>
  op.accounts.set(sub, { email: `${sub}@example.test`, email_verified: true, name: `Person ${sub}`, groups: [], ...a });

async function me(cookie: string) {
  const res = await fetch(`${server.url}/api/me`, { headers: { cookie } });
  return { status: res.status, body: res.status === 200 ? await res.json() : null };
}
const sessionCookie = (f: { svc: { get(n: string): string | undefined } }) => `svc_session=${f.svc.get('svc_session')}`;
const audit = async (action: string) =>
  ((await (await server.api('/api/audit?limit=200')).json()).records as { action: string; targetId: string; diff: any; actorLabel: string }[]).filter((r) => r.action === action); // eslint-disable-line @typescript-eslint/no-explicit-any
const members = async (projectId: string) => (await (await server.api(`/api/projects/${projectId}/members`)).json()).members as { userId: string; role: string }[];

test('GET /api/auth/oidc says what the sign-in page offers', async () => {
  const res = await fetch(`${server.url}/api/auth/oidc`);
  assert.equal(await res.json(), { enabled: true, buttonText: 'Sign in with Test IdP', ready: true, problem: null, passwordSignIn: true });
});

test('start: 302 to the provider with PKCE S256, state and nonce, and a short-lived HttpOnly state cookie', async () => {
  const res = await fetch(`${server.url}/api/auth/oidc/start`, { redirect: 'manual' });
  assert.is(res.status, 302);
  const to = new URL(res.headers.get('location')!);
  assert.is(to.origin, op.issuer);
  assert.is(to.searchParams.get('response_type'), 'code');
  assert.is(to.searchParams.get('client_id'), CLIENT_ID);
  assert.is(to.searchParams.get('redirect_uri'), `${server.url}/api/auth/oidc/callback`);
  assert.is(to.searchParams.get('code_challenge_method'), 'S256');
  assert.match(to.searchParams.get('code_challenge')!, /^[\w-]{43}$/);
  assert.ok(to.searchParams.get('state')!.length >= 32 && to.searchParams.get('nonce')!.length >= 32);
  assert.match(res.headers.get('set-cookie')!, /^svc_oidc=[\w-]+\.[\w-]+\.[\w-]+; Path=\/api\/auth\/oidc; HttpOnly; SameSite=Lax; Expires=/);
});

test('first sign-in makes the user just in time, applies the groups\' roles, and signs in with a session of OIDC_SESSION_HOURS', async () => {
  account('ana', { groups: ['devs', 'unrelated'] });
  const flow = await signInOverHttp(server.url, 'ana');
  assert.is(flow.callback.status, 302, await flow.callback.clone().text());
  assert.is(flow.callback.headers.get('location'), `${server.url}/`);
  const cookies = flow.callback.headers.getSetCookie();
  const session = cookies.find((c) => c.startsWith('svc_session='))!;
  assert.ok(cookies.some((c) => /^svc_oidc=; Path=\/api\/auth\/oidc;.*Max-Age=0/.test(c)), 'the state cookie is cleared');
  const expires = Date.parse(/Expires=([^;]+)/.exec(session)![1]);
  assert.ok(Math.abs(expires - (Date.now() + 3 * 3600_000)) < 120_000, 'the session lasts OIDC_SESSION_HOURS (3)');
  const who = await me(sessionCookie(flow));
  assert.is(who.status, 200);
  assert.is(who.body.user.email, 'ana@example.test');
  assert.is(who.body.user.name, 'Person ana');
  assert.is(who.body.user.instanceAdmin, false);
  assert.type(who.body.csrfToken, 'string');
  assert.equal(who.body.projects.map((p: { name: string; role: string }) => `${p.name}:${p.role}`), ['Alpha:operator']);
  const made = (await audit('user.create')).find((r) => r.targetId === who.body.user.id)!;
  assert.is(made.actorLabel, 'oidc');
  const roles = (await audit('user.roles_from_groups')).find((r) => r.targetId === who.body.user.id)!;
  assert.equal(roles.diff.projects, [{ project: alpha, name: 'Alpha', before: null, after: 'operator', groups: ['devs'] }]);
});

test('the next sign-in finds the same user by subject; a group removed or added at the provider changes the roles (audited with the groups)', async () => {
  account('ben', { groups: ['leads', 'ops'] });
  const first = await signInOverHttp(server.url, 'ben');
  const ben = (await me(sessionCookie(first))).body;
  assert.is(ben.user.instanceAdmin, true, 'ops → instance admin');
  assert.equal((await members(alpha)).find((m) => m.userId === ben.user.id)?.role, 'admin');
  assert.equal((await members(beta)).find((m) => m.userId === ben.user.id)?.role, 'viewer');
  // A manual role on a project no mapping names is kept.
  const gamma = (await (await server.api('/api/projects', { method: 'POST', json: { name: 'Gamma', repo: 'acme/gamma' } })).json()).id;
  assert.is((await server.api(`/api/projects/${gamma}/members/${ben.user.id}`, { method: 'PUT', json: { role: 'operator' } })).status, 200);

  account('ben', { groups: ['devs'] });
  const second = await signInOverHttp(server.url, 'ben');
  const again = (await me(sessionCookie(second))).body;
  assert.is(again.user.id, ben.user.id, 'the same user');
  assert.is(again.user.instanceAdmin, false, 'ops removed → instance admin removed');
  assert.equal((await members(alpha)).find((m) => m.userId === ben.user.id)?.role, 'operator');
  assert.is((await members(beta)).find((m) => m.userId === ben.user.id), undefined, 'leads removed → Beta removed');
  assert.equal((await members(gamma)).find((m) => m.userId === ben.user.id)?.role, 'operator', 'the manual role stays');
  const last = (await audit('user.roles_from_groups')).filter((r) => r.targetId === ben.user.id)[0];
  assert.equal(last.diff.instanceAdmin, { before: true, after: false, groups: ['ops'] });
  const byProject = Object.fromEntries(last.diff.projects.map((c: { name: string }) => [c.name, c]));
  assert.equal(byProject.Alpha, { project: alpha, name: 'Alpha', before: 'admin', after: 'operator', groups: ['devs'] });
  assert.equal(byProject.Beta, { project: beta, name: 'Beta', before: 'viewer', after: null, groups: ['leads'] });
});

test('an existing password user is linked by verified e-mail on first sign-in; another subject with that e-mail is refused', async () => {
  const made = await (await server.api('/api/users', { method: 'POST', json: { email: 'cara@example.test', name: 'Cara' } })).json();
  account('cara-1', { email: 'cara@example.test' });
  const first = await signInOverHttp(server.url, 'cara-1');
  assert.is((await me(sessionCookie(first))).body.user.id, made.user.id);
  assert.ok((await audit('user.identity_linked')).some((r) => r.targetId === made.user.id));
  account('cara-2', { email: 'cara@example.test' });
  const other = await signInOverHttp(server.url, 'cara-2');
  assert.is(other.callback.status, 403);
  assert.match(await other.callback.text(), /signs in through another account at the identity provider/);
});

test('an unverified e-mail and a domain not allowed each get a clear page, and no session', async () => {
  account('dan', { email_verified: false });
  const unverified = await signInOverHttp(server.url, 'dan');
  assert.is(unverified.callback.status, 403);
  assert.is(unverified.callback.headers.get('content-type'), 'text/html; charset=utf-8');
  const page = await unverified.callback.text();
  assert.match(page, /<h1 id="title">Your e-mail address is not verified<\/h1>/);
  assert.match(page, /has not verified dan@example\.test/);
  assert.is(unverified.svc.get('svc_session'), undefined);
  account('eve', { email: 'eve@elsewhere.test' });
  const domain = await signInOverHttp(server.url, 'eve');
  assert.is(domain.callback.status, 403);
  assert.match(await domain.callback.text(), /accounts of elsewhere\.test may not sign in/);
  assert.is(domain.svc.get('svc_session'), undefined);
});

test('the callback opened twice: the second is refused before the code is spent again', async () => {
  account('fay');
  const { callbackUrl, svc } = await toCallback(server.url, 'fay');
  const headers = { cookie: svc.header() };
  const one = await fetch(callbackUrl, { headers, redirect: 'manual' });
  assert.is(one.status, 302);
  const two = await fetch(callbackUrl, { headers, redirect: 'manual' });
  assert.is(two.status, 400);
  assert.match(await two.text(), /this sign-in was finished already/);
  assert.not.ok(two.headers.getSetCookie().some((c) => c.startsWith('svc_session=')));
});

test('a replayed code under a new sign-in\'s state is refused by the provider; a wrong state is refused here', async () => {
  account('gus');
  const used = await signInOverHttp(server.url, 'gus');
  assert.is(used.callback.status, 302);
  const code = new URL(used.callbackUrl).searchParams.get('code')!;
  // A new sign-in in another browser: its own state cookie, the old code.
  const fresh = await toCallback(server.url, 'gus');
  const replay = new URL(fresh.callbackUrl);
  replay.searchParams.set('code', code);
  const res = await fetch(replay, { headers: { cookie: fresh.svc.header() }, redirect: 'manual' });
  assert.is(res.status, 502);
  assert.match(await res.text(), /refused the sign-in code \(invalid_grant/);
  const wrong = new URL(fresh.callbackUrl);
  wrong.searchParams.set('state', 'x'.repeat(32));
  const res2 = await fetch(wrong, { headers: { cookie: fresh.svc.header() }, redirect: 'manual' });
  assert.is(res2.status, 400);
  assert.match(await res2.text(), /does not belong to the sign-in this browser started \(state\)/);
  const noCookie = await fetch(fresh.callbackUrl, { redirect: 'manual' });
  assert.is(noCookie.status, 400);
  assert.match(await noCookie.text(), /this browser has no sign-in under way/);
});

test('a key rotation at the provider: the new kid makes the server read the JWKS again, once', async () => {
  account('hal');
  assert.is((await signInOverHttp(server.url, 'hal')).callback.status, 302);
  const before = op.jwksReads();
  await op.rotate();
  // The cooldown (OIDC_JWKS_COOLDOWN_SECONDS=1) has passed by the time the new token arrives, or passes while waiting.
  let status = 0;
  for (let i = 0; i < 20 && status !== 302; i++) {
    const flow = await signInOverHttp(server.url, 'hal');
    status = flow.callback.status;
    if (status !== 302) await new Promise((r) => setTimeout(r, 500));
  }
  assert.is(status, 302);
  const reads = op.jwksReads() - before;
  assert.ok(reads >= 1 && reads <= 2, `the JWKS was read ${reads} times after the rotation`);
  const after = op.jwksReads();
  for (let i = 0; i < 3; i++) assert.is((await signInOverHttp(server.url, 'hal')).callback.status, 302);
  assert.is(op.jwksReads(), after, 'a known kid reads nothing');
});

test('DELETE /api/users/:userId/sessions ends every session of a user at once (audited); a deactivated user\'s token stops at once', async () => {
  account('ida');
  const a = await signInOverHttp(server.url, 'ida');
  const b = await signInOverHttp(server.url, 'ida');
  const ida = (await me(sessionCookie(a))).body.user;
  const ended = await server.api(`/api/users/${ida.id}/sessions`, { method: 'DELETE' });
  assert.is(ended.status, 200);
  assert.equal(await ended.json(), { userId: ida.id, sessionsEnded: 2 });
  assert.is((await me(sessionCookie(a))).status, 401);
  assert.is((await me(sessionCookie(b))).status, 401);
  assert.ok((await audit('user.sessions_end')).some((r) => r.targetId === ida.id && r.diff.sessionsEnded === 2));
  assert.is((await server.api('/api/users/no-such-user/sessions', { method: 'DELETE' })).status, 404);
  // A token made in a new session, then the user deactivated: the token is refused at once.
  const c = await signInOverHttp(server.url, 'ida');
  const csrf = (await me(sessionCookie(c))).body.csrfToken;
  const made = await fetch(`${server.url}/api/tokens`, { method: 'POST', headers: { cookie: sessionCookie(c), 'x-csrf-token': csrf, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'script' }) });
  const token = (await made.json()).token;
  assert.is((await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  assert.is((await server.api(`/api/users/${ida.id}`, { method: 'PATCH', json: { active: false } })).status, 200);
  assert.is((await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status, 401);
  const refused = await signInOverHttp(server.url, 'ida');
  assert.is(refused.callback.status, 403);
  assert.match(await refused.callback.text(), /your svc account is deactivated/);
});

test('nothing secret reaches the server\'s output: no client secret, no code, no token', async () => {
  account('jo');
  const flow = await signInOverHttp(server.url, 'jo');
  const code = new URL(flow.callbackUrl).searchParams.get('code')!;
  const out = server.output();
  assert.not.ok(out.includes(CLIENT_SECRET), 'client secret');
  assert.not.ok(out.includes(code), 'authorization code');
  assert.not.ok(out.includes(flow.svc.get('svc_session')!), 'session JWT');
  assert.not.match(out, /eyJ[\w-]{10,}\.eyJ/, 'no JWT at all');
  const records = JSON.stringify((await (await server.api('/api/audit?limit=200')).json()).records);
  assert.not.ok(records.includes(CLIENT_SECRET) || records.includes(code));
});

test.run();
