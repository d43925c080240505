// The credentials' cache (functions/auth/principal-cache.ts, docs/security.md "Credentials cache"): reads
// do not look a token or a session up again for a few seconds, yet a revoked token, an ended session, a
// deactivated user or a changed instance-admin role takes effect at once on the process that made the
// change, on the others when they hear svc_auth_changed (sql/0042), and a write always reads the
// database — also when the notification never comes.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PRINCIPAL_TTL_MS, PrincipalCache } from '../../functions/auth/principal-cache.ts';
import type { CachedPrincipal } from '../../functions/auth/principal-cache.ts';
import { TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { signIn } from '../helpers/live.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';

const entry = (id: string): CachedPrincipal => ({ user: { id, email: `${id}@example.test`, name: id, instanceAdmin: false }, id, lastUsedMs: null });

test('cache: kept until the TTL or the credential’s own expiry, whichever is first; a read that raced with an invalidation is not kept', () => {
  let now = 1000;
  const c = new PrincipalCache(500, 2, () => now);
  c.set('t:a', entry('a'), c.mark(), null);
  c.set('t:b', entry('b'), c.mark(), now + 100);
  now += 100;
  assert.is(c.get('t:b'), undefined, 'gone at the token’s expiry');
  assert.is(c.get('t:a')?.id, 'a');
  now += 400;
  assert.is(c.get('t:a'), undefined, 'gone at the TTL');
  const mark = c.mark();
  c.invalidate();
  c.set('t:c', entry('c'), mark, null);
  assert.is(c.get('t:c'), undefined, 'read before the invalidation: not kept');
  c.set('t:c', entry('c'), c.mark(), null);
  c.set('t:d', entry('d'), c.mark(), null);
  c.set('t:e', entry('e'), c.mark(), null);
  assert.is(c.size, 2, 'bounded');
  assert.is(c.get('t:c'), undefined, 'the oldest went first');
});

/** GET /api/me as a token holder or a cookie: the status. */
const me = async (base: string, auth: { token?: string; cookie?: string }) =>
  (await fetch(`${base}/api/me`, { headers: auth.token ? { authorization: `Bearer ${auth.token}` } : { cookie: auth.cookie! } })).status;

/** Polls until `status()` answers `want`; how long it took (ms), or -1 when it never did within `ms`. */
async function until(status: () => Promise<number>, want: number, ms: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    if ((await status()) === want) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 25));
  }
  return -1;
}

// On PostgreSQL the database's announcements are switched off for this one: the process that made the
// change must forget by itself (credentialsChanged), not by its own notification, which may come late.
let server: RunningServer;
let own: { pg: Awaited<ReturnType<typeof freshPostgres>>; sql: postgres.Sql } | null = null;
const TRIGGERS = ['api_tokens', 'sessions', 'users'];
test.before(async () => {
  if (TEST_DB === 'postgres') {
    const pg = await freshPostgres();
    own = { pg, sql: postgres(pg.url, { max: 1, onnotice: () => {} }) };
  }
  server = await startServer({ admin: true, ...(own ? { dbEnv: { DATABASE_URL: own.pg.url } } : {}) });
  for (const t of own ? TRIGGERS : []) await own!.sql.unsafe(`alter table ${t} disable trigger ${t}_auth_changed`);
});
test.after(async () => {
  await server?.cleanup();
  await own?.sql.end();
  await own?.pg.drop();
});

test('one process: a revoked token, an ended session, a deactivated user and a dropped admin role are refused on the very next read', async () => {
  const u = await makeUser(server, 'cached');
  assert.is(await me(server.url, { token: u.token }), 200);
  assert.is(await me(server.url, { token: u.token }), 200, 'read twice: now remembered');
  const listed = await callAs(server, '/api/tokens', { token: u.token });
  const tokenId = listed.body.tokens.find((t: { revokedAt: string | null }) => t.revokedAt === null).id;
  assert.is((await callAs(server, `/api/tokens/${tokenId}`, { method: 'DELETE', token: u.token })).status, 204);
  assert.is(await me(server.url, { token: u.token }), 401, 'revoked → refused at once');

  const s = await signIn(server.url, u.email, u.password);
  assert.is(await me(server.url, s), 200);
  assert.is(await me(server.url, s), 200);
  assert.is((await fetch(`${server.url}/api/session`, { method: 'DELETE', headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } })).status, 204);
  assert.is(await me(server.url, s), 401, 'signed out → refused at once');

  const v = await makeUser(server, 'deactivated');
  assert.is(await me(server.url, { token: v.token }), 200);
  assert.is((await callAs(server, `/api/users/${v.id}`, { method: 'PATCH', json: { instanceAdmin: true } })).status, 200);
  assert.is((await callAs(server, '/api/users', { token: v.token })).status, 200, 'made instance admin → at once');
  assert.is((await callAs(server, `/api/users/${v.id}`, { method: 'PATCH', json: { instanceAdmin: false } })).status, 200);
  assert.is((await callAs(server, '/api/users', { token: v.token })).status, 403, 'no longer instance admin → at once');
  assert.is((await callAs(server, `/api/users/${v.id}`, { method: 'PATCH', json: { active: false } })).status, 200);
  assert.is(await me(server.url, { token: v.token }), 401, 'deactivated → refused at once');
});

onlyOn('postgres', test, 3, () => {
  const two = test;
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let a: RunningServer;
  let b: RunningServer;
  let sql: postgres.Sql;

  two.before(async () => {
    pg = await freshPostgres();
    a = await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ dbEnv: { DATABASE_URL: pg.url } });
    sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  });
  two.after(async () => {
    await sql?.end();
    await Promise.all([a, b].map((s) => s?.cleanup()));
    await pg?.drop();
  });

  two('two processes: a token revoked and a session ended on one are refused by the other as soon as it hears of it', async () => {
    const u = await makeUser(a, 'replica');
    assert.is(await me(b.url, { token: u.token }), 200, 'B remembers the token');
    const tokenId = (await callAs(a, '/api/tokens', { token: u.token })).body.tokens[0].id;
    assert.is((await callAs(a, `/api/tokens/${tokenId}`, { method: 'DELETE', token: u.token })).status, 204);
    const took = await until(() => me(b.url, { token: u.token }), 401, PRINCIPAL_TTL_MS - 1000);
    assert.ok(took >= 0, `B refused the revoked token before the cache's TTL (${took} ms)`);

    const s = await signIn(a.url, u.email, u.password);
    assert.is(await me(b.url, s), 200, 'B remembers the session');
    assert.is((await callAs(a, `/api/users/${u.id}/sessions`, { method: 'DELETE' })).status, 200);
    assert.ok((await until(() => me(b.url, s), 401, PRINCIPAL_TTL_MS - 1000)) >= 0, 'B refused the ended session before the TTL');
  });

  two('the notification lost: a write on the other process is refused at once, a read at most until the TTL', async () => {
    const u = await makeUser(a, 'unannounced');
    assert.is(await me(b.url, { token: u.token }), 200, 'B remembers the token');
    await sql`alter table api_tokens disable trigger api_tokens_auth_changed`;
    try {
      await sql`update api_tokens set revoked_at = now() where user_id = ${u.id}`;
      const write = await fetch(`${b.url}/api/tokens`, { method: 'POST', headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'more' }) });
      assert.is(write.status, 401, 'a write reads the credential from the database');
      assert.is((await sql`select count(*)::int as n from api_tokens where user_id = ${u.id}`)[0].n, 1, 'no token was made');
      const took = await until(() => me(b.url, { token: u.token }), 401, PRINCIPAL_TTL_MS + 3000);
      assert.ok(took >= 0 && took <= PRINCIPAL_TTL_MS + 3000, `a read is refused within the TTL (${took} ms)`);
    } finally {
      await sql`alter table api_tokens enable trigger api_tokens_auth_changed`;
    }
  });

  two('recording a use does not empty the cache; a rename does', async () => {
    const rows = await sql`select tgname from pg_trigger where tgname like '%auth_changed' order by 1`;
    assert.equal(rows.map((r) => r.tgname), ['api_tokens_auth_changed', 'sessions_auth_changed', 'users_auth_changed']);
    const heard: string[] = [];
    const listener = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      await listener.listen('svc_auth_changed', (p) => heard.push(p));
      /** Every notification sent before this call has arrived when it returns (they arrive in commit order). */
      const drained = async () => {
        const mark = `probe-${heard.length}-${Date.now()}`;
        await sql`select pg_notify('svc_auth_changed', ${mark})`;
        const t0 = Date.now();
        while (!heard.includes(mark) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 25));
        assert.ok(heard.includes(mark), 'the probe arrived');
        return heard.filter((h) => !h.startsWith('probe-')).length;
      };
      const u = await makeUser(a, 'touch');
      await sql`update api_tokens set last_used_at = now() - interval '1 hour' where user_id = ${u.id}`;
      const quiet = await drained();
      assert.is(await me(a.url, { token: u.token }), 200); // records the use (last_used_at only)
      const used = async () => (await sql`select last_used_at > now() - interval '1 minute' as fresh from api_tokens where user_id = ${u.id}`)[0].fresh;
      const started = Date.now();
      while (!(await used()) && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 25));
      assert.ok(await used(), 'the use was recorded');
      assert.is(await drained(), quiet, 'recording a use announced nothing');
      assert.is((await callAs(b, '/api/me', { token: u.token })).body.user.name, 'touch', 'B remembers the user');
      assert.is((await callAs(a, `/api/users/${u.id}`, { method: 'PATCH', json: { name: 'Renamed' } })).status, 200);
      assert.is(await drained(), quiet + 1, 'the rename was announced, once');
      const name = async () => ((await callAs(b, '/api/me', { token: u.token })).body.user.name === 'Renamed' ? 200 : 0);
      assert.ok((await until(name, 200, PRINCIPAL_TTL_MS - 1000)) >= 0, 'B shows the new name before the TTL');
    } finally {
      await listener.end();
    }
  });
});

test.run();
