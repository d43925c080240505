// A project's pool through the API (issue #37; functions/projects/pool-routes.ts), against the real server
// with protocol fake runners: instance admins add a runner with the root of its clone (checked on the
// runner like the project's root: a refusal is 422 naming rootPath; offline → accepted `unchecked`),
// change it (200) and remove it (204), each audited and followed by the runner's watch list again; the
// list shows the primary runner first; bad inputs name their field; project admins are refused (403) and
// viewers read.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { waitUntil } from '../runner/_harness.ts';

let server: RunningServer;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
let primary = '';
let member = '';
let offline = '';
let offlineToken = '';
let projectId = '';
let fake: Client;
let padmin: TestUser;
let viewer: TestUser;

/** A fake pool runner online: it announces roots.check and skills.pool and answers project.inspect (a path with "missing" is no repository). */
async function onlineRunner(token: string): Promise<Client> {
  const c = connect(server.url, token);
  await c.next('welcome');
  c.send({ type: 'hello', version: '0.9.0', target: 'linux-x64', hostname: 'pool-box', capabilities: ['roots.check', 'skills.pool'] });
  c.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type !== 'command' || f.name !== 'project.inspect') return;
    const path = String(f.args.path);
    c.send(path.includes('missing')
      ? { type: 'result', requestId: f.requestId, ok: false, error: { code: 'not_a_repository', message: 'not a git repository' } }
      : { type: 'result', requestId: f.requestId, ok: true, data: { root: path } });
  });
  return c;
}

test.before(async () => {
  server = await startServer({ admin: true });
  primary = (await call('/api/runners', { method: 'POST', json: { name: 'primary' } })).body.runner.id;
  const m = await pairRunner(server.api, server.url, 'pool-member');
  member = m.runnerId;
  ({ runnerId: offline, token: offlineToken } = await pairRunner(server.api, server.url, 'sleeping'));
  projectId = (await call('/api/projects', { method: 'POST', json: { name: 'Pooled', repo: 'acme/pooled', runnerId: primary, rootPath: '/srv/pooled' } })).body.id;
  fake = await onlineRunner(m.token);
  await waitUntil(async () => (await call(`/api/runners/${member}`)).body.capabilities.includes('skills.pool'), 15_000, 'the hello stored');
  padmin = await makeUser(server, 'padmin');
  viewer = await makeUser(server, 'viewer');
  await call(`/api/projects/${projectId}/members/${padmin.id}`, { method: 'PUT', json: { role: 'admin' } });
  await call(`/api/projects/${projectId}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } });
});
test.after(async () => {
  fake?.ws.close();
  await server?.cleanup();
});

const projectsFrames = () => fake.frames.filter((f) => f.type === 'projects').length;

test('add a runner online: checked ok, 201; the list shows the primary first, then the member with tags, capacity and takesPoolRuns; audited; its watch list re-sent', async () => {
  const framesBefore = projectsFrames();
  const added = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'PUT', json: { rootPath: '/home/ci/pooled' } });
  assert.is(added.status, 201, JSON.stringify(added.body));
  assert.equal(added.body, {
    runnerId: member, name: 'pool-member', primary: false, status: 'online', tags: [], rootPath: '/home/ci/pooled', rootState: 'ok', rootMessage: null,
    maxConcurrentRuns: null, runningRuns: null, takesPoolRuns: true,
  });
  await waitUntil(() => projectsFrames() > framesBefore, 10_000, 'the watch list sent again');
  const list = await call(`/api/projects/${projectId}/runners`, { token: viewer.token });
  assert.is(list.status, 200, 'a viewer reads the pool');
  assert.equal(list.body.runners.map((r: { runnerId: string; primary: boolean; rootPath: string }) => [r.runnerId, r.primary, r.rootPath]), [[primary, true, '/srv/pooled'], [member, false, '/home/ci/pooled']]);
  assert.is(list.body.runners[0].status, 'offline');
  assert.is(list.body.runners[0].takesPoolRuns, false);
  const audit = await call(`/api/audit?action=project.pool_set&targetId=${projectId}`);
  assert.is(audit.body.records.length, 1);
  const detail = await call(`/api/runners/${member}`);
  assert.equal([detail.body.projects, detail.body.poolProjects.map((p: { id: string; rootPath: string }) => [p.id, p.rootPath])], [[], [[projectId, '/home/ci/pooled']]], 'the runner shows the pool it is a member of');
});

test('change the root: 200; a root that is no repository on the runner → 422 naming rootPath, nothing changed', async () => {
  const changed = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'PUT', json: { rootPath: '/home/ci/pooled-2' } });
  assert.is(changed.status, 200, JSON.stringify(changed.body));
  assert.is(changed.body.rootPath, '/home/ci/pooled-2');
  const refused = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'PUT', json: { rootPath: '/home/ci/missing' } });
  assert.is(refused.status, 422);
  assert.ok(refused.body.error.fields.rootPath);
  assert.match(refused.body.error.fields.rootPath, /git clone/);
  const list = await call(`/api/projects/${projectId}/runners`);
  assert.is(list.body.runners[1].rootPath, '/home/ci/pooled-2');
});

test('an offline runner is accepted unchecked', async () => {
  const added = await call(`/api/projects/${projectId}/runners/${offline}`, { method: 'PUT', json: { rootPath: '/srv/sleeping' } });
  assert.is(added.status, 201, JSON.stringify(added.body));
  assert.is(added.body.rootState, 'unchecked');
  assert.is(added.body.status, 'offline');
  assert.match(added.body.rootMessage, /runner|announced/);
});

test('the offline runner connects: its pool root is checked then (ok for a clone)', async () => {
  const token = offlineToken;
  const c = await onlineRunner(token);
  try {
    await waitUntil(async () => (await call(`/api/projects/${projectId}/runners`)).body.runners.find((r: { runnerId: string }) => r.runnerId === offline)?.rootState === 'ok', 15_000, 'the root checked on connect');
  } finally {
    c.ws.close();
  }
});

test('bad inputs: relative root (400 rootPath), unknown runner (404), revoked runner (400 runnerId), the primary runner (409), an overlapping root (422)', async () => {
  const relative = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'PUT', json: { rootPath: 'srv/x' } });
  assert.is(relative.status, 400);
  assert.ok(relative.body.error.fields.rootPath);
  const unknown = await call(`/api/projects/${projectId}/runners/00000000-0000-0000-0000-000000000000`, { method: 'PUT', json: { rootPath: '/srv/x' } });
  assert.is(unknown.status, 404);
  const revoked = (await pairRunner(server.api, server.url, 'revoked')).runnerId;
  assert.is((await call(`/api/runners/${revoked}`, { method: 'DELETE' })).status, 204);
  const refused = await call(`/api/projects/${projectId}/runners/${revoked}`, { method: 'PUT', json: { rootPath: '/srv/x' } });
  assert.is(refused.status, 400);
  assert.ok(refused.body.error.fields.runnerId);
  const prim = await call(`/api/projects/${projectId}/runners/${primary}`, { method: 'PUT', json: { rootPath: '/srv/other' } });
  assert.is(prim.status, 409);
  assert.match(prim.body.error.message, /primary runner/);
  const other = (await call('/api/projects', { method: 'POST', json: { name: 'Other', repo: 'acme/other', runnerId: member, rootPath: '/work/other' } })).body.id;
  assert.ok(other);
  const overlap = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'PUT', json: { rootPath: '/work/other/inner' } });
  assert.is(overlap.status, 422);
  assert.ok(overlap.body.error.fields.rootPath);
});

test('a revoked runner still in a pool is not removed from the runners list (409 naming the project) until it leaves the pool', async () => {
  const r = (await pairRunner(server.api, server.url, 'leaving')).runnerId;
  assert.is((await call(`/api/projects/${projectId}/runners/${r}`, { method: 'PUT', json: { rootPath: '/srv/leaving' } })).status, 201);
  assert.is((await call(`/api/runners/${r}`, { method: 'DELETE' })).status, 204, 'revoked');
  const kept = await call(`/api/runners/${r}`, { method: 'DELETE' });
  assert.is(kept.status, 409);
  assert.match(kept.body.error.message, /Pooled/);
  assert.is((await call(`/api/projects/${projectId}/runners/${r}`, { method: 'DELETE' })).status, 204);
  assert.is((await call(`/api/runners/${r}`, { method: 'DELETE' })).status, 204, 'removed once out of the pool');
});

test('a project admin who is not instance admin: 403 on PUT and DELETE, nothing changed', async () => {
  const put = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'PUT', json: { rootPath: '/srv/elsewhere' }, token: padmin.token });
  assert.is(put.status, 403);
  const del = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'DELETE', token: padmin.token });
  assert.is(del.status, 403);
  assert.is((await call(`/api/projects/${projectId}/runners`)).body.runners.length, 3);
});

test('remove: 204, audited, the watch list re-sent; a non-member → 404', async () => {
  const framesBefore = projectsFrames();
  assert.is((await call(`/api/projects/${projectId}/runners/${member}`, { method: 'DELETE' })).status, 204);
  await waitUntil(() => projectsFrames() > framesBefore, 10_000, 'the watch list sent again');
  assert.equal((await call(`/api/projects/${projectId}/runners`)).body.runners.map((r: { runnerId: string }) => r.runnerId), [primary, offline]);
  const removals = (await call(`/api/audit?action=project.pool_remove&targetId=${projectId}`)).body.records;
  assert.is(removals.filter((r: { diff: { runnerId: string } }) => r.diff.runnerId === member).length, 1);
  const again = await call(`/api/projects/${projectId}/runners/${member}`, { method: 'DELETE' });
  assert.is(again.status, 404);
});

test.run();
