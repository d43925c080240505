// Sign-in, sessions, CSRF, tokens and their failure modes, against the real server.
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deriveKey, encryptionKeyFrom } from '../../functions/lib/crypto.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

const KEY = randomBytes(32).toString('base64');
let server: RunningServer;
let addr = 0;
test.before(async () => {
  // TRUST_PROXY lets each test use its own client address, so rate limits do not leak across tests.
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, TRUST_PROXY: 'true' } });
});
test.after(async () => server?.cleanup());

const from = () => `198.51.100.${++addr}`;
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': from(), ...headers }, body: JSON.stringify(body) });

async function signIn(email = server.admin.email, password = server.admin.password, ip = from()) {
  const res = await post('/api/session', { email, password }, { 'x-forwarded-for': ip });
  const cookie = res.headers.get('set-cookie') ?? '';
  return { res, cookie: cookie.split(';')[0], setCookie: cookie, body: res.status === 200 ? await res.json() : await res.json().catch(() => null) };
}

/** A user with a password, made through the API like an admin would. */
async function makeUser(email: string, password: string) {
  const made = await (await server.api('/api/users', { method: 'POST', json: { email, name: email.split('@')[0] } })).json();
  const linkToken = /token=([\w-]+)/.exec(made.passwordSetUrl)![1];
  const set = await post('/api/password', { token: linkToken, password });
  assert.is(set.status, 200);
  return made.user as { id: string; email: string };
}

test('sign-in sets an HttpOnly, SameSite=Lax session cookie and returns the CSRF token; /api/me works with it', async () => {
  const { res, setCookie, cookie, body } = await signIn();
  assert.is(res.status, 200);
  assert.match(setCookie, /^svc_session=[\w-]+\.[\w-]+\.[\w-]+; Path=\/; HttpOnly; SameSite=Lax; Expires=/);
  assert.not.match(setCookie, /Secure/, 'plain http on loopback: no Secure flag');
  assert.is(body.user.email, server.admin.email);
  assert.type(body.csrfToken, 'string');
  const me = await fetch(`${server.url}/api/me`, { headers: { cookie } });
  assert.is(me.status, 200);
  const meBody = await me.json();
  assert.is(meBody.user.email, server.admin.email);
  assert.is(meBody.csrfToken, body.csrfToken);
});

test('behind https (X-Forwarded-Proto) the cookie is Secure', async () => {
  const { setCookie } = await signIn(undefined, undefined, from());
  assert.not.match(setCookie, /Secure/);
  const res = await post('/api/session', { email: server.admin.email, password: server.admin.password }, { 'x-forwarded-proto': 'https' });
  assert.match(res.headers.get('set-cookie') ?? '', /; Secure/);
});

test('wrong password and unknown e-mail: the same 401 body, similar time, no cookie', async () => {
  const time = async (email: string) => {
    const t = performance.now();
    const r = await signIn(email, 'wrong password!!', from());
    return { ms: performance.now() - t, r };
  };
  const user = await makeUser('timing@example.test', 'timing password 1');
  const known: number[] = [];
  const unknown: number[] = [];
  let bodies: unknown[] = [];
  for (let i = 0; i < 4; i++) {
    const k = await time(user.email);
    const u = await time(`nobody${i}@example.test`);
    known.push(k.ms);
    unknown.push(u.ms);
    assert.is(k.r.res.status, 401);
    assert.is(u.r.res.status, 401);
    assert.is(k.r.setCookie, '');
    bodies = [k.r.body, u.r.body];
  }
  assert.equal(bodies[0], bodies[1]);
  assert.equal(bodies[0], { error: { code: 'invalid_credentials', message: 'wrong e-mail or password' } });
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ratio = median(unknown) / median(known);
  assert.ok(ratio > 0.5 && ratio < 2, `unknown/known time ratio ${ratio.toFixed(2)}`);
});

test('5 failures on one account → 429 with Retry-After, even with the right password', async () => {
  const email = 'ratelimited@example.test';
  const made = await server.api('/api/users', { method: 'POST', json: { email, name: 'R' } });
  assert.is(made.status, 201);
  for (let i = 0; i < 5; i++) assert.is((await signIn(email, 'nope nope nope', from())).res.status, 401);
  const limited = await signIn(email, 'nope nope nope', from());
  assert.is(limited.res.status, 429);
  assert.is(limited.body.error.code, 'too_many_attempts');
  assert.ok(Number(limited.res.headers.get('retry-after')) > 0);
  // The admin account is not affected.
  assert.is((await signIn()).res.status, 200);
});

test('20 failures from one address → 429 for any account from that address only', async () => {
  const ip = '203.0.113.77';
  for (let i = 0; i < 20; i++) assert.is((await signIn(`spray${i}@example.test`, 'whatever!!', ip)).res.status, 401);
  assert.is((await signIn(server.admin.email, server.admin.password, ip)).res.status, 429);
  assert.is((await signIn(server.admin.email, server.admin.password, '203.0.113.78')).res.status, 200);
});

test('forged, tampered, expired, alg=none and other-key JWTs → 401', async () => {
  const { cookie } = await signIn();
  const jwt = cookie.split('=')[1];
  const [h, p] = jwt.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const key = deriveKey(encryptionKeyFrom(KEY), 'session-jwt');
  const sign = (c: Record<string, unknown>, k: Uint8Array = key) =>
    new SignJWT(c).setProtectedHeader({ alg: 'HS256' }).sign(k);
  const candidates = {
    otherKey: await sign(claims, randomBytes(32)),
    expired: await sign({ ...claims, exp: Math.floor(Date.now() / 1000) - 60 }),
    tampered: `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${jwt.split('.')[2]}`,
    algNone: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`,
    unknownSession: await sign({ ...claims, sid: '00000000-0000-0000-0000-000000000000' }),
    garbage: 'not-a-jwt',
  };
  for (const [name, token] of Object.entries(candidates)) {
    const res = await fetch(`${server.url}/api/me`, { headers: { cookie: `svc_session=${token}` } });
    assert.is(res.status, 401, name);
    assert.is((await res.json()).error.code, 'unauthorized');
  }
  // The genuine one still works, proving the key derivation above is the server's.
  assert.is((await fetch(`${server.url}/api/me`, { headers: { cookie: `svc_session=${await sign(claims)}` } })).status, 200);
});

test('cookie sessions need the CSRF header on state-changing requests; bearer tokens do not', async () => {
  const { cookie, body } = await signIn();
  const create = (headers: Record<string, string>) =>
    fetch(`${server.url}/api/tokens`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, ...headers }, body: JSON.stringify({ name: 'csrf' }) });
  const missing = await create({});
  assert.is(missing.status, 403);
  assert.is((await missing.json()).error.code, 'csrf_failed');
  assert.is((await create({ 'x-csrf-token': 'x'.repeat(32) })).status, 403);
  const before = (await (await server.api('/api/tokens')).json()).tokens.length;
  assert.is(before, 1, 'no token was created by the refused requests');
  assert.is((await create({ 'x-csrf-token': body.csrfToken })).status, 201);
  assert.is((await server.api('/api/tokens', { method: 'POST', json: { name: 'bearer' } })).status, 201);
});

test('sign-out ends the session: the old cookie gets 401', async () => {
  const { cookie, body } = await signIn();
  const out = await fetch(`${server.url}/api/session`, { method: 'DELETE', headers: { cookie, 'x-csrf-token': body.csrfToken } });
  assert.is(out.status, 204);
  assert.match(out.headers.get('set-cookie') ?? '', /svc_session=; .*Max-Age=0/);
  assert.is((await fetch(`${server.url}/api/me`, { headers: { cookie } })).status, 401);
});

test('deactivating a user ends their sessions and tokens at once; reactivating does not revive the session', async () => {
  const email = 'leaver@example.test';
  const made = { user: await makeUser(email, 'leaver password 1') };
  const s = await signIn(email, 'leaver password 1');
  assert.is(s.res.status, 200);
  const tokenRes = await fetch(`${server.url}/api/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: s.cookie, 'x-csrf-token': s.body.csrfToken },
    body: JSON.stringify({ name: 'script' }),
  });
  const { token } = await tokenRes.json();
  assert.is((await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  assert.is((await server.api(`/api/users/${made.user.id}`, { method: 'PATCH', json: { active: false } })).status, 200);
  assert.is((await fetch(`${server.url}/api/me`, { headers: { cookie: s.cookie } })).status, 401);
  assert.is((await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status, 401);
  assert.is((await signIn(email, 'leaver password 1')).res.status, 401, 'inactive users cannot sign in');
  await server.api(`/api/users/${made.user.id}`, { method: 'PATCH', json: { active: true } });
  assert.is((await fetch(`${server.url}/api/me`, { headers: { cookie: s.cookie } })).status, 401);
});

test('a password link works once; a revoked API token gets 401', async () => {
  const made = await (await server.api('/api/users', { method: 'POST', json: { email: 'once@example.test', name: 'Once' } })).json();
  const linkToken = /token=([\w-]+)/.exec(made.passwordSetUrl)![1];
  assert.is((await post('/api/password', { token: linkToken, password: 'first password 1' })).status, 200);
  const again = await post('/api/password', { token: linkToken, password: 'second password 2' });
  assert.is(again.status, 400);
  assert.is((await again.json()).error.code, 'invalid_link');
  assert.is((await signIn('once@example.test', 'first password 1')).res.status, 200);

  const t = await (await server.api('/api/tokens', { method: 'POST', json: { name: 'temp' } })).json();
  assert.match(t.token, /^svc_pat_/);
  assert.is((await server.api(`/api/tokens/${t.id}`, { method: 'DELETE' })).status, 204);
  const res = await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${t.token}` } });
  assert.is(res.status, 401);
  const listed = (await (await server.api('/api/tokens')).json()).tokens;
  assert.not.ok(JSON.stringify(listed).includes(t.token), 'token never listed');
});

test('bad input: unknown fields named; malformed bearer; no auth → 401; non-admin → 403', async () => {
  const extra = await post('/api/session', { email: server.admin.email, password: 'x', remember: true });
  assert.is(extra.status, 400);
  assert.equal((await extra.json()).error.fields, { remember: 'unknown field' });
  const bad = await fetch(`${server.url}/api/me`, { headers: { authorization: 'Basic abc' } });
  assert.is(bad.status, 401);
  assert.is((await fetch(`${server.url}/api/users`)).status, 401);
  await makeUser('plain@example.test', 'plain password 1');
  const s = await signIn('plain@example.test', 'plain password 1');
  const res = await fetch(`${server.url}/api/users`, { headers: { cookie: s.cookie } });
  assert.is(res.status, 403);
  assert.match((await res.json()).error.message, /instance admin/);
  const weak = await post('/api/password', { token: 'x'.repeat(20), password: 'short' });
  assert.is(weak.status, 400);
  assert.ok((await weak.json()).error.fields.password);
});

test.run();
