// The runner hub over real HTTP and WebSocket: pairing, close codes, ingest, frames, commands.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { waitUntil } from '../runner/_harness.ts';

let server: RunningServer;
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => server?.cleanup());


test('pairing: a one-time code XXXX-XXXX trades for a runner id and token, once', async () => {
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'alpha' } })).json();
  assert.match(made.code, /^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
  const pair = (code: string) =>
    fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, hostname: 'h' }) });
  const ok = await pair(made.code);
  assert.is(ok.status, 200);
  const body = await ok.json();
  assert.equal(Object.keys(body).sort(), ['runnerId', 'token']);
  assert.is(body.runnerId, made.runner.id);
  assert.match(body.token, /^svc_rt_[\w-]{43}$/);
  const again = await pair(made.code);
  assert.is(again.status, 400);
  assert.is((await again.json()).error.code, 'invalid_code');
  const malformed = await pair('abc');
  assert.is(malformed.status, 400);
  assert.ok((await malformed.json()).error.fields.code);
});

test('connection: welcome frame, runner online; wrong token 4401, wrong protocol 4400', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'beta');
  const c = connect(server.url, token);
  const welcome = await c.next('welcome');
  assert.is(welcome.runnerId, runnerId);
  assert.equal(welcome.projects, []);
  c.send({ type: 'hello', version: '0.1.0', target: 'linux-amd64', hostname: 'beta-host', capabilities: ['terminal'] });
  c.send({ type: 'ping' });
  await c.next('pong');
  // The pong does not wait for hello's row update: wait for the row.
  const row = async () => (await (await server.api('/api/runners')).json()).runners.find((r: { id: string }) => r.id === runnerId);
  await waitUntil(async () => (await row()).hostname === 'beta-host', 30_000, 'the hello stored');
  const me = await row();
  assert.is(me.status, 'online');
  assert.is(me.hostname, 'beta-host');
  assert.equal(me.capabilities, ['terminal']);
  assert.is(me.remedy, null);
  assert.is(await connect(server.url, 'svc_rt_wrong').closed, 4401);
  assert.is(await connect(server.url, null).closed, 4401);
  assert.is(await connect(server.url, token, { protocol: '999' }).closed, 4400);
  assert.is(await connect(server.url, token, { protocol: null }).closed, 4400);
  c.ws.close();
  await c.closed;
  await waitUntil(async () => (await row()).status === 'offline', 30_000, 'the runner offline');
  const after = await row();
  assert.is(after.status, 'offline');
  assert.match(after.remedy, /svc-runner status/);
});

test('a second connection of the same runner replaces the first (4409); revoke closes with 4401', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'gamma');
  const first = connect(server.url, token);
  await first.next('welcome');
  const second = connect(server.url, token);
  await second.next('welcome');
  assert.is(await first.closed, 4409);
  assert.is((await server.api(`/api/runners/${runnerId}`, { method: 'DELETE' })).status, 204);
  assert.is(await second.closed, 4401);
  assert.is(await connect(server.url, token).closed, 4401);
  const r = (await (await server.api('/api/runners')).json()).runners.find((x: { id: string }) => x.id === runnerId);
  assert.is(r.status, 'revoked');
});

test('re-pairing: the old socket closes with 4409, the old token is refused, the new one works', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'delta');
  const old = connect(server.url, token);
  await old.next('welcome');
  const { code } = await (await server.api(`/api/runners/${runnerId}/pairing-code`, { method: 'POST' })).json();
  const res = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) });
  const fresh = await res.json();
  assert.is(fresh.runnerId, runnerId);
  assert.is(await old.closed, 4409);
  assert.is(await connect(server.url, token).closed, 4401);
  const c = connect(server.url, fresh.token);
  await c.next('welcome');
  c.ws.close();
});

test('events: acked after storing; a re-sent batch is acked again and stored once', async () => {
  const { token } = await pairRunner(server.api, server.url, 'epsilon');
  const c = connect(server.url, token);
  await c.next('welcome');
  const events = [1, 2, 3].map((i) => ({ id: `e-${i}`, source: 'test', kind: 'runner.test', ts: new Date().toISOString(), payload: { i } }));
  c.send({ type: 'events', events });
  assert.equal((await c.next('ack')).ids, ['e-1', 'e-2', 'e-3']);
  c.send({ type: 'events', events: events.slice(1) });
  assert.equal((await c.next('ack')).ids, ['e-2', 'e-3']);
  c.ws.close();
  // Storage itself is checked in the PostgreSQL-only ingest test (hub-replicas.test.ts).
});

test('malformed, unknown, binary and oversized frames are refused with an error frame; the socket lives on', async () => {
  const { token } = await pairRunner(server.api, server.url, 'zeta');
  const c = connect(server.url, token);
  await c.next('welcome');
  const bad = [
    'not json',
    JSON.stringify({ type: 'launch-missiles' }),
    JSON.stringify({ type: 'events', events: [{ id: 'x' }] }),
    JSON.stringify({ type: 'hello', version: 1 }),
    JSON.stringify({ type: 'events', events: [{ id: 'big', source: 's', kind: 'k', ts: new Date().toISOString(), payload: { blob: 'x'.repeat(1024 * 1024 + 10) } }] }),
  ];
  for (const frame of bad) {
    c.send(frame);
    const err = await c.next('error');
    assert.is(err.code, 'invalid_frame', frame.slice(0, 40));
  }
  c.ws.send(Buffer.from([1, 2, 3]));
  assert.is((await c.next('error')).code, 'invalid_frame');
  c.send({ type: 'ping' });
  await c.next('pong');
  c.ws.close();
});

test('U+0000 or a lone surrogate in a stored frame (hello, event payload key) → invalid_frame naming the field; not acked, not stored', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'nul');
  const hostname = async () => (await (await server.api('/api/runners')).json()).runners.find((r: { id: string }) => r.id === runnerId).hostname;
  const before = await hostname();
  const c = connect(server.url, token);
  await c.next('welcome');
  c.send('{"type":"hello","version":"1","target":"t","hostname":"h\\u0000","capabilities":[]}');
  const hello = await c.next('error');
  assert.is(hello.code, 'invalid_frame');
  assert.match(hello.message, /^hostname: .*U\+0000/);
  const ts = new Date().toISOString();
  c.send(`{"type":"events","events":[{"id":"e1","source":"s","kind":"k","ts":"${ts}","payload":{"ok\\ud800":1}}]}`);
  const events = await c.next('error');
  assert.is(events.code, 'invalid_frame');
  assert.match(events.message, /^events\.0\.payload\.ok\ufffd: /);
  c.send({ type: 'ping' });
  await c.next('pong');
  assert.not.ok(c.frames.some((f) => f.type === 'ack'), 'nothing acked');
  assert.is(await hostname(), before, 'hostname not changed');
  c.ws.close();
});

test('a flood of frames is bounded: frames beyond the rate are dropped, the connection and server stay up', async () => {
  const { token } = await pairRunner(server.api, server.url, 'eta');
  const c = connect(server.url, token);
  await c.next('welcome');
  for (let i = 0; i < 2000; i++) c.send({ type: 'ping' });
  await c.next('error').then((e) => assert.is(e.code, 'rate_limited'));
  const count = () => c.frames.filter((f) => f.type === 'pong').length;
  // The flood is over when the pong count has stopped changing for half a second.
  let last = -1;
  let since = Date.now();
  await waitUntil(() => {
    if (count() !== last) [last, since] = [count(), Date.now()];
    return Date.now() - since > 500;
  }, 30_000, 'the flood answered');
  const pongs = count();
  assert.ok(pongs < 2000 && pongs >= 100, `${pongs} pongs`);
  c.send({ type: 'ping' });
  await waitUntil(() => count() > pongs, 30_000, 'a pong after the flood');
  assert.is((await fetch(`${server.url}/health`)).status, 200);
  c.ws.close();
});

test('commands: the runner gets the frame, its answer comes back; errors → 502; bad input → 400; offline → 503', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'theta');
  const cmd = (name: string, args: unknown = {}) => server.api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name, args } });
  assert.is((await cmd('runner.ping')).status, 503);
  const c = connect(server.url, token);
  await c.next('welcome');
  const answered = cmd('runner.ping');
  const frame = await c.next('command');
  assert.is(frame.name, 'runner.ping');
  assert.is(frame.timeoutMs, 30_000);
  assert.equal(frame.args, {});
  c.send({ type: 'result', requestId: frame.requestId, ok: true, data: { pong: true } });
  const res = await answered;
  assert.is(res.status, 200);
  assert.equal(await res.json(), { name: 'runner.ping', ok: true, data: { pong: true } });

  const failing = cmd('runner.describe');
  const f2 = await c.next('command');
  c.send({ type: 'result', requestId: f2.requestId, ok: false, error: { code: 'disabled', message: 'refused here' } });
  const r2 = await failing;
  assert.is(r2.status, 502);
  assert.equal((await r2.json()).error, { code: 'disabled', message: 'refused here' });

  const unknown = await cmd('rm.rf');
  assert.is(unknown.status, 400);
  assert.ok((await unknown.json()).error.fields.name);
  const badArgs = await cmd('project.inspect', { path: 'relative/../x' });
  assert.is(badArgs.status, 400);
  assert.ok((await badArgs.json()).error.fields.path);
  const extra = await cmd('runner.ping', { shell: 'rm -rf /' });
  assert.is(extra.status, 400);
  assert.equal((await extra.json()).error.fields, { shell: 'unknown field' });
  assert.is(c.frames.filter((f) => f.type === 'command').length, 2, 'refused commands never reached the runner');
  c.ws.close();
});

test('a command with no answer → 504 naming the command after its timeout (orchestrator.status: 5 s)', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'iota');
  const project = await (await server.api('/api/projects', { method: 'POST', json: { name: 'Iota', repo: 'acme/iota', runnerId, rootPath: '/srv/iota' } })).json();
  const c = connect(server.url, token);
  const welcome = await c.next('welcome');
  assert.equal(welcome.projects, [{ id: project.id, root: '/srv/iota' }]);
  const t = Date.now();
  const res = await server.api(`/api/projects/${project.id}/commands`, { method: 'POST', json: { name: 'orchestrator.status' } });
  assert.is(res.status, 504);
  const body = await res.json();
  assert.is(body.error.code, 'command_timeout');
  assert.match(body.error.message, /orchestrator\.status/);
  assert.ok(Date.now() - t >= 4900, 'waited the command timeout');
  const sent = await c.next('command');
  assert.equal(sent.args, { projectId: project.id });
  c.ws.close();
});

test('a command whose socket went away before the answer: sent again when the runner is back — a read-only one always, others only to a runner that replays answers', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'mu');
  const project = await (await server.api('/api/projects', { method: 'POST', json: { name: 'Mu', repo: 'acme/mu', runnerId, rootPath: '/srv/mu' } })).json();
  const cmd = (name: string, args: unknown = {}) => server.api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name, args } });
  const projectCmd = (name: string, args: Record<string, unknown>) => server.api(`/api/projects/${project.id}/commands`, { method: 'POST', json: { name, args } });
  const hello = (c: ReturnType<typeof connect>, capabilities: string[]) => c.send({ type: 'hello', version: '0.2.0', target: 'linux-amd64', hostname: 'h', capabilities });

  // A read-only command: the first socket gets it and dies unanswered; the next socket gets the same request.
  const first = connect(server.url, token);
  await first.next('welcome');
  hello(first, []);
  const ping = cmd('runner.ping');
  const lost = await first.next('command');
  first.ws.terminate();
  await first.closed;
  const second = connect(server.url, token);
  await second.next('welcome');
  hello(second, []);
  const again = await second.next('command');
  assert.equal([again.requestId, again.name], [lost.requestId, 'runner.ping']);
  second.send({ type: 'result', requestId: again.requestId, ok: true, data: { pong: true } });
  assert.is((await ping).status, 200);

  // A command that changes something (pr.approve): not again to a runner that does not replay answers…
  const approve = projectCmd('pr.approve', { number: 7 });
  const a1 = await second.next('command');
  assert.is(a1.name, 'pr.approve');
  second.ws.terminate();
  await second.closed;
  const third = connect(server.url, token);
  await third.next('welcome');
  hello(third, []);
  // …but to one that does (the same requestId; it answers with its first answer, never runs it twice).
  const fourth = connect(server.url, token); // replaces the third
  await fourth.next('welcome');
  hello(fourth, ['commands.replay']);
  const a2 = await fourth.next('command');
  assert.equal([a2.requestId, a2.name], [a1.requestId, 'pr.approve']);
  assert.not.ok(third.frames.some((f) => f.type === 'command'), 'not sent to the runner without replay');
  fourth.send({ type: 'result', requestId: a2.requestId, ok: true, data: { written: true } });
  assert.is((await approve).status, 200);
  fourth.ws.close();
});

test('repo in the watch list: only a runner that announces the codehost capability gets each project\'s repo (an older runner\'s strict frames would refuse it)', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'lambda');
  const project = await (await server.api('/api/projects', { method: 'POST', json: { name: 'Lambda', repo: 'acme/lambda', runnerId, rootPath: '/srv/lambda' } })).json();
  const old = connect(server.url, token);
  assert.equal((await old.next('welcome')).projects, [{ id: project.id, root: '/srv/lambda' }]);
  old.send({ type: 'hello', version: '0.1.0', target: 'linux-amd64', hostname: 'h', capabilities: ['terminal'] });
  await server.api(`/api/projects/${project.id}`, { method: 'PATCH', json: { repo: 'acme/lambda2' } });
  assert.equal((await old.next('projects')).projects, [{ id: project.id, root: '/srv/lambda' }], 'no repo for a runner without the capability');
  old.ws.close();
  await old.closed;
  const c = connect(server.url, token);
  assert.equal((await c.next('welcome')).projects, [{ id: project.id, root: '/srv/lambda' }], 'the welcome precedes hello: no repo yet');
  c.send({ type: 'hello', version: '0.2.0', target: 'linux-amd64', hostname: 'h', capabilities: ['terminal', 'codehost'] });
  assert.equal((await c.next('projects')).projects, [{ id: project.id, root: '/srv/lambda', repo: 'acme/lambda2' }]);
  await server.api(`/api/projects/${project.id}`, { method: 'PATCH', json: { repo: 'acme/lambda3' } });
  await waitUntil(() => c.frames.filter((f) => f.type === 'projects').some((f) => (f as { projects: { repo?: string }[] }).projects[0]?.repo === 'acme/lambda3'), 30_000, 'the changed repo');
  c.ws.close();
});

test('roles: runner-wide commands are for instance admins (a member gets 403, a stranger 404); project commands follow the project role', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'kappa');
  const c = connect(server.url, token);
  await c.next('welcome');
  const project = await (await server.api('/api/projects', { method: 'POST', json: { name: 'Kappa', repo: 'acme/kappa', runnerId, rootPath: '/srv/kappa' } })).json();
  assert.equal((await c.next('projects')).projects, [{ id: project.id, root: '/srv/kappa' }]);
  const viewer = await makeUser(server, 'viewer');
  const asViewer = (path: string, json: unknown) => callAs(server, path, { method: 'POST', json, token: viewer.token });
  assert.is((await asViewer(`/api/runners/${runnerId}/commands`, { name: 'runner.ping' })).status, 404, 'not a member yet');
  await server.api(`/api/projects/${project.id}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } });
  const ping = await asViewer(`/api/runners/${runnerId}/commands`, { name: 'runner.ping' });
  assert.is(ping.status, 403);
  assert.match(ping.body.error.message, /instance admin/);
  const status = asViewer(`/api/projects/${project.id}/commands`, { name: 'orchestrator.status' });
  const frame = await c.next('command');
  assert.is(frame.name, 'orchestrator.status', 'the refused ping was never sent');
  c.send({ type: 'result', requestId: frame.requestId, ok: true, data: { running: false } });
  assert.is((await status).status, 200);
  const refresh = await asViewer(`/api/projects/${project.id}/commands`, { name: 'project.refresh' });
  assert.is(refresh.status, 403);
  assert.match(refresh.body.error.message, /operator/);
  c.ws.close();
});

test.run();
