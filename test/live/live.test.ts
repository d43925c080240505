// GET /api/live against the real server: who may connect (cookie or token, same origin), who receives
// which notice (a viewer of project A nothing about project B; audit results only to instance admins;
// project changes to the project's members, and to a member as they are removed),
// sign-out closes the socket, and — on PostgreSQL — a change made through one process reaches a socket
// held by another within a second.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { openLive, signIn } from '../helpers/live.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

let server: RunningServer;
let viewer: TestUser;
const runners: Record<'a' | 'b', { runnerId: string; token: string }> = {} as never;
const projects: Record<'a' | 'b', string> = {} as never;

test.before(async () => {
  server = await startServer({ admin: true });
  for (const k of ['a', 'b'] as const) {
    runners[k] = await pairRunner(server.api, server.url, `live-${k}`);
    const p = await callAs(server, '/api/projects', { method: 'POST', json: { name: `P${k}`, repo: `acme/${k}`, runnerId: runners[k].runnerId, rootPath: `/srv/${k}` } });
    assert.is(p.status, 201, JSON.stringify(p.body));
    projects[k] = p.body.id;
  }
  viewer = await makeUser(server, 'viewer');
  assert.is((await callAs(server, `/api/projects/${projects.a}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
});
test.after(async () => server?.cleanup());

/** A run state event of project `k`, sent by its runner through the hub. */
async function runEvent(runner: Client, k: 'a' | 'b', state = 'queued'): Promise<string> {
  const runId = `run-${k}-${randomBytes(4).toString('hex')}`;
  const now = new Date().toISOString();
  const payload = { runId, project: projects[k], skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', model: 'm', timeoutSec: 600, createdAt: now, branch: 'b', state, at: now };
  runner.send({ type: 'events', events: [{ id: `run.${runId}.${state}`, source: `project:${projects[k]}`, kind: 'skill_run.state', ts: now, payload }] });
  await runner.next('ack');
  return runId;
}

test('plain GET: 401 without a caller, 426 (upgrade required) when signed in; no cookie on the socket → 4401', async () => {
  assert.is((await fetch(`${server.url}/api/live`)).status, 401);
  const plain = await callAs(server, '/api/live');
  assert.is(plain.status, 426);
  assert.is(plain.body.error.code, 'upgrade_required');
  const anon = openLive(server.url);
  const { code } = await anon.closed;
  assert.is(code, 4401);
  assert.equal(anon.notices, [{ type: 'error', code: 'unauthorized', message: 'sign in first' }]);
});

test('a foreign Origin is refused (4403) even with a valid session cookie; no Origin (a script) is accepted', async () => {
  const { cookie } = await signIn(server.url, server.admin.email, server.admin.password);
  const evil = openLive(server.url, { cookie, origin: 'https://evil.example' });
  assert.is((await evil.closed).code, 4403);
  assert.is(evil.notices[0].code, 'bad_origin');
  assert.not.ok(evil.notices.some((n) => n.type === 'ready'));
  const script = openLive(server.url, { token: server.admin.token, origin: null });
  await script.next((n) => n.type === 'ready');
  script.close();
});

test('role filtering: the viewer of A hears about A (runner, runs) and never about B; the admin hears both', async () => {
  const { cookie } = await signIn(server.url, viewer.email, viewer.password);
  const v = openLive(server.url, { cookie });
  const admin = openLive(server.url, { token: server.admin.token });
  await Promise.all([v.next((n) => n.type === 'ready'), admin.next((n) => n.type === 'ready')]);

  // B first, then A: notices of one process arrive in commit order, so once A's arrived B's would have.
  const rb = connect(server.url, runners.b.token);
  await rb.next('welcome');
  await admin.next((n) => n.type === 'runner' && n.id === runners.b.runnerId && n.online === true);
  const runB = await runEvent(rb, 'b');
  const ra = connect(server.url, runners.a.token);
  await ra.next('welcome');
  const runA = await runEvent(ra, 'a');
  await v.next((n) => n.type === 'runner' && n.id === runners.a.runnerId && n.online === true);
  const seen = await v.next((n) => n.type === 'run' && n.id === runA);
  assert.equal(seen, { type: 'run', projectId: projects.a, id: runA, state: 'queued' });
  await admin.next((n) => n.type === 'run' && n.id === runB);
  await admin.next((n) => n.type === 'run' && n.id === runA);

  // Offline flips: A's runner closes, then B's; the viewer sees A's go offline only.
  rb.ws.close();
  await admin.next((n) => n.type === 'runner' && n.id === runners.b.runnerId && n.online === false);
  ra.ws.close();
  await v.next((n) => n.type === 'runner' && n.id === runners.a.runnerId && n.online === false);
  const aboutB = v.notices.filter((n) => n.projectId === projects.b || n.id === runners.b.runnerId || n.id === runB);
  assert.equal(aboutB, [], 'nothing about project B or its runner');

  // Audit verification results are for instance admins only (the viewer then gets a later A notice).
  assert.is((await callAs(server, '/api/schedules/audit.verify/run', { method: 'POST' })).status, 202);
  const verified = await admin.next((n) => n.type === 'audit.verification');
  assert.is(verified.ok, true);
  const ra2 = connect(server.url, runners.a.token);
  await ra2.next('welcome');
  const later = await runEvent(ra2, 'a');
  await v.next((n) => n.type === 'run' && n.id === later);
  ra2.ws.close();
  assert.not.ok(v.notices.some((n) => n.type === 'audit.verification'), 'no audit notice for a non-admin');

  // Removed from A and added to B: from then on nothing about A, and B's notices (in order after A's).
  assert.is((await callAs(server, `/api/projects/${projects.a}/members/${viewer.id}`, { method: 'DELETE' })).status, 204);
  const ra3 = connect(server.url, runners.a.token);
  await ra3.next('welcome');
  const afterRemoval = await runEvent(ra3, 'a');
  ra3.ws.close();
  assert.is((await callAs(server, `/api/projects/${projects.b}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  const rb2 = connect(server.url, runners.b.token);
  await rb2.next('welcome');
  const onB = await runEvent(rb2, 'b');
  await v.next((n) => n.type === 'run' && n.id === onB);
  rb2.ws.close();
  assert.not.ok(v.notices.some((n) => n.id === afterRemoval), 'a removed member hears nothing more about the project');
  v.close();
  admin.close();
});

test('project notices: members and instance admins hear a project change; a member removed, or of a deleted project, hears that once; nobody else', async () => {
  // The viewer is a member of B only (the test above moved them).
  const { cookie } = await signIn(server.url, viewer.email, viewer.password);
  const v = openLive(server.url, { cookie });
  const admin = openLive(server.url, { token: server.admin.token });
  await Promise.all([v.next((n) => n.type === 'ready'), admin.next((n) => n.type === 'ready')]);
  const is = (projectId: string, change: string) => (n: Record<string, any>) => n.type === 'project' && n.projectId === projectId && n.change === change;

  // A changed, then B: the viewer hears B's only; the admin both.
  assert.is((await callAs(server, `/api/projects/${projects.a}`, { method: 'PATCH', json: { budgetUsd: 10 } })).status, 200);
  assert.is((await callAs(server, `/api/projects/${projects.b}`, { method: 'PATCH', json: { budgetUsd: 20 } })).status, 200);
  assert.equal(await v.next(is(projects.b, 'updated')), { type: 'project', projectId: projects.b, change: 'updated' });
  await admin.next(is(projects.a, 'updated'));
  await admin.next(is(projects.b, 'updated'));
  assert.not.ok(v.notices.some(is(projects.a, 'updated')), 'nothing about A');

  // A new project: instance admins only (it has no member yet).
  const c = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'Pc', repo: 'acme/c' } });
  await admin.next(is(c.body.id, 'created'));
  // Removed from B: told by name, then nothing more about B; added to C: told, as C's member.
  assert.is((await callAs(server, `/api/projects/${projects.b}/members/${viewer.id}`, { method: 'DELETE' })).status, 204);
  await v.next(is(projects.b, 'members'));
  assert.is((await callAs(server, `/api/projects/${projects.b}`, { method: 'PATCH', json: { budgetUsd: 30 } })).status, 200);
  assert.is((await callAs(server, `/api/projects/${c.body.id}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  await v.next(is(c.body.id, 'members'));
  assert.is(v.notices.filter((n) => n.type === 'project' && n.projectId === projects.b).length, 2, 'B: its change while a member, and the removal');
  assert.not.ok(v.notices.some(is(c.body.id, 'created')), 'C was created before the viewer joined it');
  // C deleted: its member hears it although the membership goes with the project.
  assert.is((await callAs(server, `/api/projects/${c.body.id}`, { method: 'DELETE' })).status, 204);
  await v.next(is(c.body.id, 'deleted'));
  await admin.next(is(c.body.id, 'deleted'));
  // Back in B as a viewer for the tests below.
  assert.is((await callAs(server, `/api/projects/${projects.b}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  v.close();
  admin.close();
});

test('sign-out closes the socket of that session with 4401; a deactivated user is closed too', async () => {
  const { cookie, csrf } = await signIn(server.url, viewer.email, viewer.password);
  const live = openLive(server.url, { cookie });
  await live.next((n) => n.type === 'ready');
  const out = await fetch(`${server.url}/api/session`, { method: 'DELETE', headers: { cookie, 'x-csrf-token': csrf } });
  assert.is(out.status, 204);
  const { code } = await live.closed;
  assert.is(code, 4401);

  const other = await makeUser(server, 'leaver');
  const byToken = openLive(server.url, { token: other.token });
  await byToken.next((n) => n.type === 'ready');
  assert.is((await callAs(server, `/api/users/${other.id}`, { method: 'PATCH', json: { active: false } })).status, 200);
  assert.is((await byToken.closed).code, 4401);
});

onlyOn('postgres', test, 1, () => {
  test('two processes on one PostgreSQL: a runner connecting to A, then leaving, reaches a live socket held by B within 1 s', async () => {
    const pg = await freshPostgres();
    const started: RunningServer[] = [];
    try {
      const a = await startServer({ dbEnv: { DATABASE_URL: pg.url }, admin: true });
      started.push(a);
      const b = await startServer({ dbEnv: { DATABASE_URL: pg.url } });
      started.push(b);
      const runner = await pairRunner(a.api, a.url, 'cross');
      const live = openLive(b.url, { token: a.admin.token });
      await live.next((n) => n.type === 'ready');
      const rc = connect(a.url, runner.token);
      await rc.next('welcome'); // A publishes before it welcomes: the clock starts late, not early
      let t0 = performance.now();
      await live.next((x) => x.type === 'runner' && x.id === runner.runnerId && x.online === true, 5000);
      const onMs = performance.now() - t0;
      t0 = performance.now();
      rc.ws.close();
      await live.next((x) => x.type === 'runner' && x.id === runner.runnerId && x.online === false, 5000);
      const offMs = performance.now() - t0;
      assert.ok(onMs < 1000, `online took ${Math.round(onMs)} ms`);
      assert.ok(offMs < 1000, `offline took ${Math.round(offMs)} ms`);
      live.close();
    } finally {
      await Promise.all(started.map((s) => s.cleanup()));
      await pg.drop();
    }
  });
});

test.run();
