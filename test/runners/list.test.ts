// The runner list's hygiene against the real server: a runner added without a name takes the machine's
// hostname when it pairs; duplicate names are warned about; a never-paired or revoked runner can be
// removed (and its codes stop working), a paired one is revoked first; a runner's detail shows its
// projects and last events; a runner older than the bundle the server serves is marked updateAvailable.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect } from '../helpers/wsclient.ts';

let server: RunningServer;
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(server, path, init);
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => server?.cleanup());

const pair = (code: string, hostname: string) =>
  fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, hostname, version: '0.1.0', target: 'linux-amd64' }) });
const listed = async (id: string) => ((await call('/api/runners')).body.runners as { id: string; name: string; status: string }[]).find((r) => r.id === id);

test('no name: the runner is named after the hostname it pairs from; a given name is kept', async () => {
  const made = await call('/api/runners', { method: 'POST', json: {} });
  assert.is(made.status, 201);
  assert.is(made.body.runner.name, '');
  assert.is((await pair(made.body.code, 'build-07.example')).status, 200);
  assert.is((await listed(made.body.runner.id))!.name, 'build-07.example');
  const named = await call('/api/runners', { method: 'POST', json: { name: 'gpu box' } });
  assert.is((await pair(named.body.code, 'other-host')).status, 200);
  assert.is((await listed(named.body.runner.id))!.name, 'gpu box', 'a chosen name wins');
});

test('a duplicate name (any case) is created with a warning; a unique one without', async () => {
  const first = await call('/api/runners', { method: 'POST', json: { name: 'Twin' } });
  assert.equal(first.body.warnings, []);
  const second = await call('/api/runners', { method: 'POST', json: { name: 'twin' } });
  assert.is(second.status, 201);
  assert.is(second.body.warnings.length, 1);
  assert.match(second.body.warnings[0], /also named twin/);
});

test('a never-paired runner is removed: gone from the list, its code refused, its detail 404, audited', async () => {
  const made = await call('/api/runners', { method: 'POST', json: { name: 'never-paired' } });
  assert.is((await call(`/api/runners/${made.body.runner.id}`, { method: 'DELETE' })).status, 204);
  assert.is(await listed(made.body.runner.id), undefined);
  assert.is((await call(`/api/runners/${made.body.runner.id}`)).status, 404);
  assert.is((await pair(made.body.code, 'h')).status, 400, 'its pairing code no longer works');
  assert.is((await call(`/api/runners/${made.body.runner.id}/pairing-code`, { method: 'POST' })).status, 404);
  const audit = await call(`/api/audit?action=runner.remove&targetId=${made.body.runner.id}`);
  assert.is(audit.body.records.length, 1);
  assert.is((await call(`/api/runners/${made.body.runner.id}`, { method: 'DELETE' })).status, 404, 'a second remove → 404');
});

test('a paired runner: DELETE revokes it first (4401); a second DELETE removes it; one still serving a project is kept (409 naming it)', async () => {
  const made = await call('/api/runners', { method: 'POST', json: { name: 'in-use' } });
  const { token } = await (await pair(made.body.code, 'h')).json();
  const id = made.body.runner.id;
  const project = await call('/api/projects', { method: 'POST', json: { name: 'Uses it', repo: 'acme/uses', runnerId: id, rootPath: '/srv/uses' } });
  assert.is(project.status, 201);
  const c = connect(server.url, token);
  await c.next('welcome');
  assert.is((await call(`/api/runners/${id}`, { method: 'DELETE' })).status, 204);
  assert.is(await c.closed, 4401);
  assert.is((await listed(id))!.status, 'revoked', 'still listed after the revoke');
  const refused = await call(`/api/runners/${id}`, { method: 'DELETE' });
  assert.is(refused.status, 409);
  assert.is(refused.body.error.code, 'runner_in_use');
  assert.match(refused.body.error.message, /Uses it/);
  assert.is((await listed(id))!.status, 'revoked');
  assert.is((await call(`/api/projects/${project.body.id}`, { method: 'DELETE' })).status, 204);
  assert.is((await call(`/api/runners/${id}`, { method: 'DELETE' })).status, 204);
  assert.is(await listed(id), undefined);
  assert.is(await connect(server.url, token).closed, 4401, 'its token stays refused');
});

test('detail: id, version, capabilities, projects and the last events, newest first', async () => {
  const made = await call('/api/runners', { method: 'POST', json: { name: 'detailed' } });
  const id = made.body.runner.id;
  const { token } = await (await pair(made.body.code, 'detail-host')).json();
  await call('/api/projects', { method: 'POST', json: { name: 'Detail project', repo: 'acme/d', runnerId: id, rootPath: '/srv/d' } });
  const c = connect(server.url, token);
  await c.next('welcome');
  c.send({ type: 'hello', version: '0.1.0', target: 'linux-amd64', hostname: 'detail-host', capabilities: ['terminal'] });
  const ts = new Date().toISOString();
  c.send({ type: 'events', events: [1, 2, 3].map((i) => ({ id: `e${i}`, source: 'runner', kind: `runner.test_${i}`, ts, payload: {} })) });
  await c.next('ack');
  // Frames are handled as they come, each with its own queries: the hello's row update may land after the ack.
  let d = await call(`/api/runners/${id}`);
  for (const until = Date.now() + 10_000; d.body.capabilities?.length === 0 && Date.now() < until; d = await call(`/api/runners/${id}`)) await new Promise((r) => setTimeout(r, 50));
  assert.is(d.status, 200);
  assert.is(d.body.id, id);
  assert.is(d.body.name, 'detailed');
  assert.is(d.body.version, '0.1.0');
  assert.equal(d.body.capabilities, ['terminal']);
  assert.equal(d.body.projects.map((p: { name: string }) => p.name), ['Detail project']);
  assert.equal(d.body.lastEvents.map((e: { kind: string }) => e.kind).sort(), ['runner.test_1', 'runner.test_2', 'runner.test_3']);
  assert.is((await call('/api/runners/no-such-runner')).status, 404);
  c.ws.close();
});

test('updateAvailable: the runner reported a version older than the bundle this server serves; the same, a newer or no version: not', async () => {
  const served = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version as string;
  const flags: Record<string, boolean> = {};
  for (const [name, version] of [['old', '0.0.1'], ['same', served], ['newer', '99.0.0'], ['unknown', 'dev']]) {
    const made = await call('/api/runners', { method: 'POST', json: { name: `v-${name}` } });
    const { token } = await (await pair(made.body.code, `v-${name}`)).json();
    const c = connect(server.url, token);
    await c.next('welcome');
    c.send({ type: 'hello', version, target: 'linux-amd64', hostname: `v-${name}`, capabilities: [] });
    let d = await call(`/api/runners/${made.body.runner.id}`);
    for (const until = Date.now() + 10_000; d.body.version !== version && Date.now() < until; d = await call(`/api/runners/${made.body.runner.id}`)) await new Promise((r) => setTimeout(r, 50));
    assert.is(d.body.version, version);
    assert.is(d.body.bundleVersion, served);
    flags[name] = d.body.updateAvailable;
    assert.is((await listed(made.body.runner.id) as unknown as { updateAvailable: boolean }).updateAvailable, d.body.updateAvailable, 'the list says the same');
    c.ws.close();
  }
  assert.equal(flags, { old: true, same: false, newer: false, unknown: false });
  assert.is((await call('/api/runners')).body.bundleVersion, served);
});

test.run();
