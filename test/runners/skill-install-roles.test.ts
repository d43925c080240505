// Profile installs from the skill catalog need the admin role on the server side (spec: Server
// commands to a runner: `skill.install` — "profile installs need admin"; docs/security.md, "Runners and
// project roots"): `skill.install` with a `profileId`, against the real server with a connected runner,
// once per role. The instance admin's command reaches the runner with its profileId and the runner's
// answer comes back; a project admin, an operator and a viewer of a project on that runner get 403 and
// the runner sees nothing; someone with no project on the runner gets 404.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

let server: RunningServer;
let runnerId = '';
let runner: Client;
const users: Record<'padmin' | 'operator' | 'viewer' | 'outsider', TestUser> = {} as never;
const args = { source: { repo: 'https://example.com/skills.git', path: 'skills/review' }, profileId: 'team' };
const install = (token?: string) => callAs(server, `/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'skill.install', args }, token });
const commandsSeen = () => runner.frames.filter((f) => f.type === 'command').length;

test.before(async () => {
  server = await startServer({ admin: true });
  const paired = await pairRunner(server.api, server.url, 'catalog-box');
  runnerId = paired.runnerId;
  const project = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'P', repo: 'acme/p', runnerId, rootPath: '/srv/p' } });
  assert.is(project.status, 201, JSON.stringify(project.body));
  for (const role of ['padmin', 'operator', 'viewer', 'outsider'] as const) {
    users[role] = await makeUser(server, role);
    if (role === 'outsider') continue;
    const m = await callAs(server, `/api/projects/${project.body.id}/members/${users[role].id}`, { method: 'PUT', json: { role: role === 'padmin' ? 'admin' : role } });
    assert.is(m.status, 200);
  }
  runner = connect(server.url, paired.token);
  await runner.next('welcome');
});
test.after(async () => {
  runner?.ws.close();
  await server?.cleanup();
});

test('instance admin: the profile install reaches the runner with its profileId; the answer comes back', async () => {
  const answered = install();
  const frame = await runner.next('command');
  assert.is(frame.name, 'skill.install');
  assert.equal(frame.args, args);
  runner.send({ type: 'result', requestId: frame.requestId, ok: true, data: { name: 'review', installedTo: 'profile team' } });
  const res = await answered;
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body, { name: 'skill.install', ok: true, data: { name: 'review', installedTo: 'profile team' } });
});

for (const role of ['padmin', 'operator', 'viewer'] as const) {
  test(`${role === 'padmin' ? 'project admin' : role} of a project on the runner: 403, nothing sent`, async () => {
    const before = commandsSeen();
    const res = await install(users[role].token);
    assert.is(res.status, 403, JSON.stringify(res.body));
    assert.is(res.body.error.code, 'forbidden');
    assert.match(res.body.error.message, /instance admin/);
    assert.is(commandsSeen(), before, 'the runner got no command');
  });
}

test('a user with no project on the runner: 404, nothing sent', async () => {
  const before = commandsSeen();
  const res = await install(users.outsider.token);
  assert.is(res.status, 404, JSON.stringify(res.body));
  assert.is(commandsSeen(), before);
});

test.run();
