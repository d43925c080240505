// The first admin in the browser (issue 34, item 2), black-box: a server on a fresh database logs a
// one-time setup link; GET /api/setup says whether it is needed; POST /api/setup with the link's token
// makes the first instance admin (audited) exactly once; wrong or missing tokens are refused; the token
// is in that one log line only. On PostgreSQL a link logged by one replica works on another.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { onlyOn, serverDbEnv } from '../helpers/db.ts';
import { setupLinkOf, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

const servers: RunningServer[] = [];
const cleanups: (() => Promise<void>)[] = [];
async function start(env: Record<string, string> = {}, dbEnv?: Record<string, string>) {
  const s = await startServer({ env, dbEnv });
  servers.push(s);
  return s;
}
test.after(async () => {
  for (const s of servers) await s.cleanup();
  for (const c of cleanups) await c();
});

const post = (s: RunningServer, path: string, body: unknown) =>
  fetch(s.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const answer = async (res: Response) => ({ status: res.status, body: await res.json().catch(() => null) });
const ADMIN = { name: 'First Admin', email: 'First@Example.Test', password: 'a long first password' };

let s: RunningServer;
let link: { url: string; token: string; line: string };

test('a server without users logs a setup link on its own address; GET /api/setup → {needed: true} and nothing else', async () => {
  s = await start({ LOG_LEVEL: 'debug' }); // debug: request lines are logged too, and must not carry the token
  link = await setupLinkOf(s);
  assert.ok(link.url.startsWith(`${s.url}/#/setup?token=`), link.url);
  assert.ok(link.token.length >= 40, 'a 256-bit token');
  assert.match(link.line, /expiresAt=\S+/);
  const state = await fetch(`${s.url}/api/setup`);
  assert.is(state.status, 200);
  assert.equal(await state.json(), { needed: true });
  assert.is(state.headers.get('cache-control'), 'no-store');
});

test('POST /api/setup with a wrong token → 401 invalid_setup_token; without one → 400 naming token; bad fields → 400 naming them; no user made', async () => {
  const wrong = await answer(await post(s, '/api/setup', { ...ADMIN, token: link.token.slice(0, -2) + (link.token.endsWith('AA') ? 'BB' : 'AA') }));
  assert.is(wrong.status, 401, JSON.stringify(wrong.body));
  assert.is(wrong.body.error.code, 'invalid_setup_token');
  const missing = await answer(await post(s, '/api/setup', ADMIN));
  assert.is(missing.status, 400);
  assert.ok(missing.body.error.fields.token, JSON.stringify(missing.body));
  const empty = await answer(await post(s, '/api/setup', { ...ADMIN, token: '' }));
  assert.ok([400, 401].includes(empty.status), String(empty.status));
  const bad = await answer(await post(s, '/api/setup', { token: link.token, name: ' ', email: 'not-an-email', password: 'short' }));
  assert.is(bad.status, 400);
  assert.equal(Object.keys(bad.body.error.fields).sort(), ['email', 'name', 'password']);
  assert.match(bad.body.error.fields.password, /at least 10 characters/);
  const extra = await answer(await post(s, '/api/setup', { ...ADMIN, token: link.token, instanceAdmin: false }));
  assert.is(extra.status, 400, 'unknown fields are refused');
  assert.equal(await (await fetch(`${s.url}/api/setup`)).json(), { needed: true }, 'still no user');
  assert.is((await post(s, '/api/session', { email: ADMIN.email, password: ADMIN.password })).status, 401);
});

test('the good token → 201 with the instance admin; again → 409; needed turns false; sign-in works; the creation is audited', async () => {
  const made = await answer(await post(s, '/api/setup', { ...ADMIN, token: link.token }));
  assert.is(made.status, 201, JSON.stringify(made.body));
  assert.equal({ ...made.body.user, id: typeof made.body.user.id }, { id: 'string', email: 'first@example.test', name: 'First Admin', instanceAdmin: true });
  const again = await answer(await post(s, '/api/setup', { ...ADMIN, email: 'second@example.test', token: link.token }));
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'setup_done');
  assert.equal(await (await fetch(`${s.url}/api/setup`)).json(), { needed: false });

  const session = await post(s, '/api/session', { email: ADMIN.email, password: ADMIN.password });
  assert.is(session.status, 200);
  const cookie = session.headers.get('set-cookie')!.split(';')[0];
  const me = await (await fetch(`${s.url}/api/me`, { headers: { cookie } })).json();
  assert.is(me.user.instanceAdmin, true);
  const audit = await (await fetch(`${s.url}/api/audit?action=user.create`, { headers: { cookie } })).json();
  assert.is(audit.records.length, 1);
  assert.is(audit.records[0].actorLabel, 'setup-link');
  assert.is(audit.records[0].targetId, made.body.user.id);
  assert.not.ok(JSON.stringify(audit.records[0]).includes(link.token), 'the token is not in the audit record');
  const users = await (await fetch(`${s.url}/api/users`, { headers: { cookie } })).json();
  assert.equal(users.users.map((u: { email: string }) => u.email), ['first@example.test'], 'exactly one user');
});

test('the token is in its one log line only (debug request lines, errors and later lines included)', async () => {
  const lines = s.output().split('\n').filter((l) => l.includes(link.token));
  assert.equal(lines, [link.line]);
  assert.match(s.output(), /DEBUG request .*path=\/api\/setup/, 'the requests were logged');
});

test('two setups at once with the good token → exactly one 201 and one 409, one admin', async () => {
  const r = await start();
  const { token } = await setupLinkOf(r);
  const both = await Promise.all(['a', 'b'].map((n) => post(r, '/api/setup', { token, name: n, email: `${n}@example.test`, password: 'racing password 123' }).then((x) => x.status)));
  assert.equal([...both].sort(), [201, 409]);
  const winner = both[0] === 201 ? 'a' : 'b';
  const okA = (await post(r, '/api/session', { email: 'a@example.test', password: 'racing password 123' })).status;
  const okB = (await post(r, '/api/session', { email: 'b@example.test', password: 'racing password 123' })).status;
  assert.equal([okA, okB].sort(), [200, 401], `one of them is the admin (${winner})`);
  assert.is((await post(r, '/api/setup', { token, name: 'c', email: 'c@example.test', password: 'racing password 123' })).status, 409);
});

test('wrong setup tokens count against the per-address limit like sign-ins: 429 with retry-after, then even the good token waits', async () => {
  const r = await start();
  const { token } = await setupLinkOf(r);
  for (let i = 0; i < 20; i++) assert.is((await post(r, '/api/setup', { ...ADMIN, token: `wrong-${i}` })).status, 401);
  const limited = await post(r, '/api/setup', { ...ADMIN, token });
  assert.is(limited.status, 429);
  assert.ok(Number(limited.headers.get('retry-after')) > 0);
  assert.equal(await (await fetch(`${r.url}/api/setup`)).json(), { needed: true }, 'no admin was made');
});

onlyOn('postgres', test, 1, () => {
  test('PostgreSQL, two replicas: each logs its own link, and either accepts the other\'s', async () => {
    const fresh = await serverDbEnv();
    cleanups.push(fresh.cleanup);
    const a = await start({}, fresh.env);
    const b = await start({}, fresh.env);
    const [la, lb] = [await setupLinkOf(a), await setupLinkOf(b)];
    assert.is.not(la.token, lb.token);
    const made = await post(b, '/api/setup', { ...ADMIN, token: la.token });
    assert.is(made.status, 201, await made.clone().text());
    assert.is((await post(a, '/api/setup', { ...ADMIN, token: lb.token })).status, 409);
    assert.is((await post(a, '/api/session', { email: ADMIN.email, password: ADMIN.password })).status, 200);
  });
});

test.run();
