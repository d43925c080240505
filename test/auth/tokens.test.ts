// Personal API token expiry (docs/security.md): optional `expiresAt` on create, shown in the list,
// refused when in the past or malformed, and an expired token is a 401 like a revoked one. lastUsedAt
// is kept to 5 minutes, refreshed off the request path.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => server?.cleanup());

const create = (body: unknown) => server.api('/api/tokens', { method: 'POST', json: body });
const list = async () => (await (await server.api('/api/tokens')).json()).tokens as { id: string; name: string; expiresAt: string | null }[];
const asToken = (token: string) => fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } });

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('without expiresAt a token never expires: expiresAt null in the answer and the list', async () => {
  const res = await create({ name: 'forever' });
  assert.is(res.status, 201);
  const made = await res.json();
  assert.is(made.expiresAt, null);
  assert.is((await list()).find((t) => t.id === made.id)?.expiresAt, null);
  assert.is((await asToken(made.token)).status, 200);
});

test('expiresAt null is the same as absent', async () => {
  const res = await create({ name: 'null-expiry', expiresAt: null });
  assert.is(res.status, 201);
  assert.is((await res.json()).expiresAt, null);
});

test('a future expiresAt is stored and listed; the token works until then', async () => {
  const at = new Date(Date.now() + 7 * 24 * 3600_000);
  const res = await create({ name: 'week', expiresAt: at.toISOString().replace('Z', '+00:00') });
  assert.is(res.status, 201);
  const made = await res.json();
  assert.is(made.expiresAt, at.toISOString());
  const listed = (await list()).find((t) => t.id === made.id)!;
  assert.is(Date.parse(listed.expiresAt!), at.getTime());
  assert.ok(!('token' in listed), 'the list never shows the token');
  assert.is((await asToken(made.token)).status, 200);
});

test('expiresAt in the past → 400 naming expiresAt, no token made', async () => {
  const before = (await list()).length;
  const res = await create({ name: 'past', expiresAt: new Date(Date.now() - 60_000).toISOString() });
  assert.is(res.status, 400);
  const { error } = await res.json();
  assert.is(error.code, 'invalid_body');
  assert.match(error.fields.expiresAt, /future/);
  assert.is((await list()).length, before);
});

for (const bad of ['tomorrow', '2030-01-01', '2030-01-01T00:00:00', 1893456000000, '2030-13-01T00:00:00Z']) {
  test(`expiresAt ${JSON.stringify(bad)} (not an ISO timestamp with a zone) → 400 naming expiresAt`, async () => {
    const res = await create({ name: 'bad', expiresAt: bad });
    assert.is(res.status, 400);
    assert.ok((await res.json()).error.fields.expiresAt);
  });
}

test('an expired token → 401 like a revoked one; a revoked token too', async () => {
  const at = Date.now() + 3000;
  const made = await (await create({ name: 'short', expiresAt: new Date(at).toISOString() })).json();
  assert.is((await asToken(made.token)).status, 200, 'works before expiry');
  const expired = await waitFor('the token to expire', async () => {
    const res = await asToken(made.token);
    return res.status === 401 ? res : (await res.arrayBuffer(), undefined);
  });
  assert.ok(Date.now() >= at, 'refused only after expiresAt');
  const body = await expired.json();
  assert.is(body.error.code, 'unauthorized');
  const revoked = await (await create({ name: 'revoked' })).json();
  assert.is((await server.api(`/api/tokens/${revoked.id}`, { method: 'DELETE' })).status, 204);
  const res = await asToken(revoked.token);
  assert.is(res.status, 401);
  assert.equal(await res.json(), body, 'the same answer as for an expired token');
});

test('lastUsedAt: set by the first use (without the answer waiting for it), then kept for 5 minutes however often the token is used', async () => {
  const made = await (await create({ name: 'used' })).json();
  const lastUsed = async () => ((await (await server.api('/api/tokens')).json()).tokens as { id: string; lastUsedAt: string | null }[]).find((t) => t.id === made.id)?.lastUsedAt;
  assert.is(await lastUsed(), null, 'never used yet');
  assert.is((await asToken(made.token)).status, 200);
  const first = await waitFor('lastUsedAt after the first use', async () => (await lastUsed()) ?? undefined);
  for (let i = 0; i < 5; i++) assert.is((await asToken(made.token)).status, 200);
  // Read after those uses: a refresh one of them issued would most likely be done by then (PGlite: surely).
  assert.is(await lastUsed(), first, 'not written again within 5 minutes');
});

test('the OpenAPI document describes expiresAt on token create as optional', async () => {
  const doc = await (await fetch(`${server.url}/api/openapi.json`)).json();
  const schema = doc.paths['/api/tokens'].post.requestBody.content['application/json'].schema;
  assert.ok(schema.properties.expiresAt, 'documented');
  assert.not.ok((schema.required ?? []).includes('expiresAt'), 'optional');
  assert.match(JSON.stringify(schema.properties.expiresAt), /never/);
});

test.run();
