// Secret rotation over a day (spec: "The old secret keeps verifying for 24 hours after rotation"): the
// secret is rotated on a server at the real time, then the same database is served by a server whose
// clock is shifted with the documented test hook TEST_CLOCK_OFFSET_SECONDS (NODE_ENV=test only) to
// 23 h 59 and to 24 h 01 later. Without NODE_ENV=test the offset is ignored.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { KEY, createTrigger, makeProject, nowSeconds, post, skillTrigger } from './_harness.ts';
import type { Made } from './_harness.ts';

let db: Awaited<ReturnType<typeof serverDbEnv>>;
let t: Made;
let newSecret = '';
let path = '';
let adminToken = '';
let rotatePath = '';

test.before(async () => {
  db = await serverDbEnv();
  const first = await startServer({ admin: true, dbEnv: db.env, env: { APP_ENCRYPTION_KEY: KEY } });
  try {
    const runnerId = (await callAs(first, '/api/runners', { method: 'POST', json: { name: 'r' } })).body.runner.id;
    const projectId = await makeProject(first, runnerId);
    t = await createTrigger(first, projectId, skillTrigger());
    const rotated = await callAs(first, `/api/projects/${projectId}/triggers/${t.id}/rotate`, { method: 'POST' });
    assert.is(rotated.status, 200);
    newSecret = rotated.body.secret;
    path = new URL(t.url).pathname;
    adminToken = first.admin.token;
    rotatePath = `/api/projects/${projectId}/triggers/${t.id}`;
  } finally {
    await first.stop();
  }
});
test.after(async () => db?.cleanup());

/** Serve the same database with the clock `offset` seconds ahead, and POST signed at that clock. */
async function later(offset: number, nodeEnv = 'test') {
  const server = await startServer({ dbEnv: db.env, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: nodeEnv, TEST_CLOCK_OFFSET_SECONDS: String(offset) } });
  const send = (secret: string, shifted = true) => post(server.url + path, secret, { ref: 'main' }, { timestamp: nowSeconds() + (shifted ? offset : 0) });
  return { server, send };
}

test('at 23 h 59 after the rotation the old secret still verifies, and the new one', async () => {
  const { server, send } = await later(23 * 3600 + 59 * 60);
  try {
    assert.is((await send(t.secret)).status, 202);
    assert.is((await send(newSecret)).status, 202);
  } finally {
    await server.stop();
  }
});

test('at 24 h 01 the old secret is refused (401, empty body); the new one verifies', async () => {
  const { server, send } = await later(24 * 3600 + 60);
  try {
    const old = await send(t.secret);
    assert.equal([old.status, old.text], [401, '']);
    assert.is((await send(newSecret)).status, 202);
  } finally {
    await server.stop();
  }
});

test('without NODE_ENV=test the offset is ignored: the real clock decides', async () => {
  const { server, send } = await later(24 * 3600 + 60, 'production');
  try {
    assert.is((await send(newSecret)).status, 401, 'a timestamp a day ahead of the real clock is stale');
    assert.is((await send(t.secret, false)).status, 202, 'within the real 24 h the old secret still verifies');
    assert.match(server.output(), /^(?![\s\S]*TEST_CLOCK_OFFSET_SECONDS shifts)/, 'no clock shift was announced');
  } finally {
    await server.stop();
  }
});

test('served with another APP_ENCRYPTION_KEY: the stored secret no longer verifies (401, not 500); rotating is the remedy', async () => {
  const server = await startServer({ dbEnv: db.env, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64') } });
  try {
    const as = { authorization: `Bearer ${adminToken}` };
    const old = await post(server.url + path, newSecret, { ref: 'main' });
    assert.equal([old.status, old.text], [401, '']);
    const shown = await (await fetch(server.url + rotatePath, { headers: as })).json();
    assert.match(shown.secretProblem, /different APP_ENCRYPTION_KEY/);
    assert.match(server.output(), /WARN 1 of 1 stored trigger secrets cannot be decrypted with the current encryption key: rotate them/, 'counted at start');
    const rotated = await fetch(`${server.url}${rotatePath}/rotate`, { method: 'POST', headers: as });
    assert.is(rotated.status, 200);
    const body = await rotated.json();
    assert.is(body.trigger.previousSecretValidUntil, null, 'no overlap for a secret nobody can verify');
    assert.is((await post(server.url + path, body.secret, { ref: 'main' })).status, 202);
  } finally {
    await server.stop();
  }
});

test.run();
