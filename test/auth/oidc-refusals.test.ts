// Single sign-on refusals (issue #38): ID tokens broken on purpose by a hostile provider (another key,
// alg none, another audience, another nonce, old or future iat, expired), client_secret_post when that is
// all the provider lists, the provider down at start, PUBLIC_URL missing, and PASSWORD_SIGNIN=off with
// the break-glass admin.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLIENT_ID, CLIENT_SECRET, freePort, signInOverHttp, startForger, startProvider } from '../helpers/oidc.ts';
import type { Forger, Forgery } from '../helpers/oidc.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

const cleanups: (() => Promise<unknown>)[] = [];
test.after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function serverFor(issuer: string, extra: Record<string, string> = {}, port?: number): Promise<RunningServer> {
  const p = port ?? (await freePort());
  const s = await startServer({
    admin: true,
    env: { PORT: String(p), PUBLIC_URL: `http://127.0.0.1:${p}`, OIDC_ISSUER: issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET, ...extra },
  });
  cleanups.push(() => s.cleanup());
  return s;
}

let forger: Forger;
let forged: RunningServer;
test.before(async () => {
  forger = await startForger(CLIENT_ID, ['client_secret_post']);
  cleanups.push(() => forger.stop());
  forged = await serverFor(forger.issuer);
});

test('a well-formed token from the forger signs in, its secret sent as client_secret_post (all the provider lists)', async () => {
  forger.mode = 'ok';
  const flow = await signInOverHttp(forged.url, 'x');
  assert.is(flow.callback.status, 302, await flow.callback.clone().text());
  assert.is(forger.lastTokenRequest!.authorization, null);
  assert.is(forger.lastTokenRequest!.body.get('client_secret'), CLIENT_SECRET);
  assert.is(forger.lastTokenRequest!.body.get('client_id'), CLIENT_ID);
  assert.match(forger.lastTokenRequest!.body.get('code_verifier')!, /^[\w-]{43}$/);
});

const cases: [Forgery, RegExp][] = [
  ['other-key', /the ID token&#39;s signature does not verify/],
  ['alg-none', /the ID token uses a signature algorithm that is not accepted|is not valid/],
  ['other-aud', /the ID token is for another client \(aud\)/],
  ['nonce', /the ID token&#39;s nonce does not match this sign-in/],
  ['iat-old', /issued too long ago or in the future/],
  ['iat-future', /issued too long ago or in the future/],
  ['expired', /the ID token has expired/],
  ['unverified', /has not verified forged@example\.test/],
];
for (const [mode, message] of cases) {
  test(`an ID token with ${mode} is refused with a page saying why, and no session`, async () => {
    forger.mode = mode;
    const flow = await signInOverHttp(forged.url, 'x');
    const page = await flow.callback.text();
    assert.is(flow.callback.status, mode === 'unverified' ? 403 : 401, page);
    assert.match(page, message);
    assert.is(flow.svc.get('svc_session'), undefined);
  });
}

test('the provider down at start: the server starts, the button explains, and works once the provider is up', async () => {
  const port = await freePort();
  const opPort = await freePort();
  const s = await serverFor(`http://127.0.0.1:${opPort}`, {}, port);
  const status = await (await fetch(`${s.url}/api/auth/oidc`)).json();
  assert.is(status.enabled, true);
  assert.is(status.ready, false);
  assert.match(status.problem, new RegExp(`the identity provider at http://127\\.0\\.0\\.1:${opPort} cannot be used`));
  const start = await fetch(`${s.url}/api/auth/oidc/start`, { redirect: 'manual' });
  assert.is(start.status, 503);
  assert.match(await start.text(), /The identity provider cannot be reached/);
  const op = await startProvider(`${s.url}/api/auth/oidc/callback`, { port: opPort });
  cleanups.push(() => op.stop());
  op.accounts.set('kim', { email: 'kim@example.test', email_verified: true, name: 'Kim', groups: [] });
  // A failed discovery is remembered 10 s: wait for the condition, not a fixed time.
  let ready = false;
  for (const until = Date.now() + 30_000; !ready && Date.now() < until; ) {
    ready = (await (await fetch(`${s.url}/api/auth/oidc`)).json()).ready;
    if (!ready) await new Promise((r) => setTimeout(r, 250));
  }
  assert.ok(ready);
  assert.is((await signInOverHttp(s.url, 'kim')).callback.status, 302);
});

test('PUBLIC_URL missing: start refuses with a page naming it', async () => {
  const s = await startServer({ env: { OIDC_ISSUER: forger.issuer, OIDC_CLIENT_ID: CLIENT_ID } });
  cleanups.push(() => s.cleanup());
  const res = await fetch(`${s.url}/api/auth/oidc/start`, { redirect: 'manual' });
  assert.is(res.status, 503);
  assert.match(await res.text(), /PUBLIC_URL must be set for single sign-on/);
  assert.match((await (await fetch(`${s.url}/api/auth/oidc`)).json()).problem, /PUBLIC_URL/);
});

test('OIDC not configured: start and callback are 404; the status says disabled', async () => {
  const s = await startServer({});
  cleanups.push(() => s.cleanup());
  assert.is((await fetch(`${s.url}/api/auth/oidc/start`, { redirect: 'manual' })).status, 404);
  assert.is((await fetch(`${s.url}/api/auth/oidc/callback?code=a&state=b`, { redirect: 'manual' })).status, 404);
  assert.equal(await (await fetch(`${s.url}/api/auth/oidc`)).json(), { enabled: false, buttonText: null, ready: false, problem: null, passwordSignIn: true });
});

test('PASSWORD_SIGNIN=off: password sign-in refused for everyone but the break-glass instance admin', async () => {
  const s = await serverFor(forger.issuer, { PASSWORD_SIGNIN: 'off', BREAK_GLASS_EMAIL: ADMIN_EMAIL, TRUST_PROXY: 'true' });
  const made = await (await s.api('/api/users', { method: 'POST', json: { email: 'lee@example.test', name: 'Lee' } })).json();
  const linkToken = /token=([\w-]+)/.exec(made.passwordSetUrl)![1];
  assert.is((await fetch(`${s.url}/api/password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: linkToken, password: 'a long password 123' }) })).status, 200);
  const signIn = (email: string, password: string) =>
    fetch(`${s.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.7' }, body: JSON.stringify({ email, password }) });
  const lee = await signIn('lee@example.test', 'a long password 123');
  assert.is(lee.status, 403);
  assert.is((await lee.json()).error.code, 'password_signin_off');
  assert.is((await signIn(ADMIN_EMAIL, ADMIN_PASSWORD)).status, 200, 'the break-glass admin signs in');
  assert.is((await signIn(ADMIN_EMAIL, 'wrong password here')).status, 401);
  assert.equal((await (await fetch(`${s.url}/api/auth/oidc`)).json()).passwordSignIn, false);
});

test('PASSWORD_SIGNIN=off without OIDC_ISSUER stops the start with a message naming the variable', async () => {
  const s = await startServer({ expectExit: true, env: { PASSWORD_SIGNIN: 'off' } });
  cleanups.push(() => s.cleanup());
  assert.match(s.output(), /PASSWORD_SIGNIN can be off only when OIDC_ISSUER is set/);
});

test.run();
