// Projects and per-project roles (viewer < operator < admin; instance admins are admin everywhere),
// against the real server: CRUD, validation, name conflicts, and who may see and change what.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser as makeUserOn } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';

let server: RunningServer;
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => server?.cleanup());

const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
const makeUser = (label: string) => makeUserOn(server, label);

const listNames = async (token?: string) => ((await call('/api/projects', { token })).body.projects as { name: string }[]).map((p) => p.name);

let alpha: Record<string, unknown> & { id: string };
let beta: Record<string, unknown> & { id: string };

let runner1 = '';
test('create: 201 with every field, and defaults for the optional ones', async () => {
  runner1 = (await call('/api/runners', { method: 'POST', json: { name: 'runner-1' } })).body.runner.id;
  const res = await call('/api/projects', {
    method: 'POST',
    json: { name: 'Alpha', repo: 'acme/alpha', runnerId: runner1, rootPath: '/srv/work/alpha', budgetUsd: 12.5, budgetAction: 'stop' },
  });
  assert.is(res.status, 201);
  assert.match(res.body.id, /^[0-9a-f-]{36}$/);
  alpha = res.body;
  // The runner was never connected: the root is accepted unchecked (test/projects/root-check.test.ts).
  const rootCheck = { state: 'unchecked', message: res.body.rootCheck?.message, checkedAt: null };
  assert.equal(alpha, { id: alpha.id, name: 'Alpha', repo: 'acme/alpha', runnerId: runner1, rootPath: '/srv/work/alpha', budgetUsd: 12.5, budgetAction: 'stop', caps: { perIssueUSD: null, perRunUSD: null }, rootCheck });

  const min = await call('/api/projects', { method: 'POST', json: { name: '  Beta  ', repo: 'acme/beta.js' } });
  assert.is(min.status, 201);
  beta = min.body;
  assert.equal(beta, { id: beta.id, name: 'Beta', repo: 'acme/beta.js', runnerId: null, rootPath: null, budgetUsd: null, budgetAction: 'warn', caps: { perIssueUSD: null, perRunUSD: null }, rootCheck: null });
  assert.is.not(beta.id, alpha.id);

  const audit = await call(`/api/audit?action=project.create&targetId=${alpha.id}`);
  assert.is(audit.body.records.length, 1, 'creation is audited');
});

test('list and get: the instance admin sees every project with role admin, sorted by name', async () => {
  const list = await call('/api/projects');
  assert.is(list.status, 200);
  assert.equal(list.body.projects, [
    { ...alpha, role: 'admin' },
    { ...beta, role: 'admin' },
  ]);
  const one = await call(`/api/projects/${alpha.id}`);
  assert.is(one.status, 200);
  assert.equal(one.body, alpha);
  const unknown = await call('/api/projects/00000000-0000-0000-0000-000000000000');
  assert.is(unknown.status, 404);
  assert.is(unknown.body.error.code, 'not_found');
  const badId = await call('/api/projects/not%20an%20id!');
  assert.is(badId.status, 400);
  assert.ok(badId.body.error.fields.projectId, 'names projectId');
});

test('patch: changes only the given fields; null clears a nullable one', async () => {
  const res = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { budgetUsd: 20, rootPath: null, runnerId: null } });
  assert.is(res.status, 200);
  assert.equal(res.body, { ...alpha, budgetUsd: 20, rootPath: null, runnerId: null, rootCheck: null });
  const got = await call(`/api/projects/${alpha.id}`);
  assert.equal(got.body, res.body);
  alpha = got.body;
  // Renaming a project to its own name in another case is not a conflict with itself.
  const same = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { name: 'ALPHA' } });
  assert.is(same.status, 200);
  assert.is(same.body.name, 'ALPHA');
  const back = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { name: 'Alpha' } });
  assert.is(back.status, 200);
  const empty = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: {} });
  assert.is(empty.status, 200);
  assert.equal(empty.body, alpha);
});

test('duplicate name, case-insensitive → 409 name_taken; nothing created or renamed', async () => {
  const before = (await call('/api/projects')).body.projects;
  const dup = await call('/api/projects', { method: 'POST', json: { name: 'ALPHA', repo: 'other/repo' } });
  assert.is(dup.status, 409);
  assert.is(dup.body.error.code, 'name_taken');
  assert.match(dup.body.error.message, /ALPHA/);
  const dupTrim = await call('/api/projects', { method: 'POST', json: { name: ' alpha ', repo: 'other/repo' } });
  assert.is(dupTrim.status, 409);
  const rename = await call(`/api/projects/${beta.id}`, { method: 'PATCH', json: { name: 'aLpHa', budgetUsd: 99 } });
  assert.is(rename.status, 409);
  assert.is(rename.body.error.code, 'name_taken');
  assert.equal((await call('/api/projects')).body.projects, before, 'no project created, beta not renamed nor re-budgeted');
});

test('bad fields → 400 invalid_body naming each field; nothing created or changed', async () => {
  const before = (await call('/api/projects')).body.projects;
  const cases: [Record<string, unknown>, string][] = [
    [{ name: 'Gamma', repo: 'no-slash' }, 'repo'],
    [{ name: 'Gamma', repo: 'a/b/c' }, 'repo'],
    [{ name: 'Gamma', repo: 'acme/gamma', rootPath: 'relative/path' }, 'rootPath'],
    [{ name: 'Gamma', repo: 'acme/gamma', rootPath: '/srv/../etc' }, 'rootPath'],
    [{ name: 'Gamma', repo: 'acme/gamma', rootPath: '/srv/gamma/..' }, 'rootPath'],
    [{ name: 'Gamma', repo: 'acme/gamma', budgetAction: 'pause' }, 'budgetAction'],
    [{ name: 'Gamma', repo: 'acme/gamma', budgetUsd: -1 }, 'budgetUsd'],
    [{ name: '   ', repo: 'acme/gamma' }, 'name'],
    [{ repo: 'acme/gamma' }, 'name'],
  ];
  for (const [json, field] of cases) {
    const res = await call('/api/projects', { method: 'POST', json });
    assert.is(res.status, 400, JSON.stringify(json));
    assert.is(res.body.error.code, 'invalid_body');
    assert.ok(res.body.error.fields[field], `${JSON.stringify(json)} names ${field}: ${JSON.stringify(res.body.error.fields)}`);
  }
  const repoMsg = await call('/api/projects', { method: 'POST', json: { name: 'Gamma', repo: 'nope' } });
  assert.is(repoMsg.body.error.fields.repo, 'must be owner/name');
  const unknown = await call('/api/projects', { method: 'POST', json: { name: 'Gamma', repo: 'acme/gamma', colour: 'red' } });
  assert.is(unknown.status, 400);
  assert.is(unknown.body.error.fields.colour, 'unknown field');
  const several = await call('/api/projects', { method: 'POST', json: { name: 'Gamma', repo: 'x', rootPath: 'y', budgetAction: 'z' } });
  assert.equal(Object.keys(several.body.error.fields).sort(), ['budgetAction', 'repo', 'rootPath']);

  const patchCases: [Record<string, unknown>, string][] = [
    [{ repo: 'bad' }, 'repo'],
    [{ rootPath: 'rel' }, 'rootPath'],
    [{ rootPath: '/a/../b' }, 'rootPath'],
    [{ budgetAction: 'never' }, 'budgetAction'],
    [{ id: 'new-id' }, 'id'],
    [{ colour: 'red' }, 'colour'],
  ];
  for (const [json, field] of patchCases) {
    const res = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json });
    assert.is(res.status, 400, JSON.stringify(json));
    assert.ok(res.body.error.fields[field], `PATCH ${JSON.stringify(json)} names ${field}`);
  }
  assert.equal((await call('/api/projects')).body.projects, before, 'nothing created or changed');
});

let viewer: TestUser;
let operator: TestUser;
let padmin: TestUser;
let nobody: TestUser;

test('members: an admin gives roles; the member list shows them', async () => {
  [viewer, operator, padmin, nobody] = [await makeUser('viewer'), await makeUser('operator'), await makeUser('padmin'), await makeUser('nobody')];
  for (const [u, role] of [
    [viewer, 'viewer'],
    [operator, 'operator'],
    [padmin, 'admin'],
  ] as const) {
    const res = await call(`/api/projects/${alpha.id}/members/${u.id}`, { method: 'PUT', json: { role } });
    assert.is(res.status, 200);
    assert.equal(res.body, { projectId: alpha.id, userId: u.id, role });
  }
  const members = await call(`/api/projects/${alpha.id}/members`);
  assert.is(members.status, 200);
  assert.equal(
    members.body.members.map((m: { userId: string; role: string }) => [m.userId, m.role]).sort(),
    [
      [viewer.id, 'viewer'],
      [operator.id, 'operator'],
      [padmin.id, 'admin'],
    ].sort(),
  );
  const badRole = await call(`/api/projects/${alpha.id}/members/${nobody.id}`, { method: 'PUT', json: { role: 'owner' } });
  assert.is(badRole.status, 400);
  assert.ok(badRole.body.error.fields.role);
  const noUser = await call(`/api/projects/${alpha.id}/members/00000000-0000-0000-0000-000000000000`, { method: 'PUT', json: { role: 'viewer' } });
  assert.is(noUser.status, 404);
  const noProject = await call(`/api/projects/00000000-0000-0000-0000-000000000000/members/${nobody.id}`, { method: 'PUT', json: { role: 'viewer' } });
  assert.is(noProject.status, 404);
  assert.is((await call(`/api/projects/${alpha.id}/members`)).body.members.length, 3, 'nobody was not added');
});

test('viewer: can GET the project and its members, PATCH → 403 naming the admin role, project unchanged', async () => {
  const got = await call(`/api/projects/${alpha.id}`, { token: viewer.token });
  assert.is(got.status, 200);
  assert.equal(got.body, alpha);
  assert.is((await call(`/api/projects/${alpha.id}/members`, { token: viewer.token })).status, 200);
  const patch = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { budgetUsd: 1 }, token: viewer.token });
  assert.is(patch.status, 403);
  assert.is(patch.body.error.code, 'forbidden');
  assert.match(patch.body.error.message, /\badmin\b/);
  assert.match(patch.body.error.message, /viewer/, 'says what role the user has');
  assert.equal((await call(`/api/projects/${alpha.id}`)).body, alpha, 'unchanged');
  // It sees only its project, with its role; not Beta.
  const list = await call('/api/projects', { token: viewer.token });
  assert.equal(list.body.projects, [{ ...alpha, role: 'viewer' }]);
  const betaGet = await call(`/api/projects/${beta.id}`, { token: viewer.token });
  assert.is(betaGet.status, 404);
  // Not an instance admin: cannot create or delete projects.
  assert.is((await call('/api/projects', { method: 'POST', json: { name: 'Mine', repo: 'a/b' }, token: viewer.token })).status, 403);
  assert.is((await call(`/api/projects/${alpha.id}`, { method: 'DELETE', token: viewer.token })).status, 403);
  assert.equal(await listNames(), ['Alpha', 'Beta']);
});

test('no role: GET /api/projects/P → 404 (same as a missing project), P absent from the list', async () => {
  const got = await call(`/api/projects/${alpha.id}`, { token: nobody.token });
  assert.is(got.status, 404);
  assert.is(got.body.error.code, 'not_found');
  const missing = await call('/api/projects/00000000-0000-0000-0000-000000000000', { token: nobody.token });
  assert.equal(got.body, missing.body, 'indistinguishable from a project that does not exist');
  assert.is((await call(`/api/projects/${alpha.id}/members`, { token: nobody.token })).status, 404);
  assert.is((await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { name: 'Taken' }, token: nobody.token })).status, 404);
  assert.is((await call(`/api/projects/${alpha.id}/members/${nobody.id}`, { method: 'PUT', json: { role: 'admin' }, token: nobody.token })).status, 404);
  const list = await call('/api/projects', { token: nobody.token });
  assert.is(list.status, 200);
  assert.equal(list.body.projects, []);
  const me = await call('/api/me', { token: nobody.token });
  assert.equal(me.body.projects, []);
  assert.is((await call(`/api/projects/${alpha.id}/members`)).body.members.length, 3, 'it did not make itself a member');
  assert.is((await call(`/api/projects/${alpha.id}`)).body.name, 'Alpha');
});

test('operator: can GET but not PUT or DELETE members (403 naming admin); nothing changes', async () => {
  assert.is((await call(`/api/projects/${alpha.id}`, { token: operator.token })).status, 200);
  const put = await call(`/api/projects/${alpha.id}/members/${nobody.id}`, { method: 'PUT', json: { role: 'viewer' }, token: operator.token });
  assert.is(put.status, 403);
  assert.is(put.body.error.code, 'forbidden');
  assert.match(put.body.error.message, /\badmin\b/);
  const promote = await call(`/api/projects/${alpha.id}/members/${operator.id}`, { method: 'PUT', json: { role: 'admin' }, token: operator.token });
  assert.is(promote.status, 403, 'cannot promote itself');
  const del = await call(`/api/projects/${alpha.id}/members/${viewer.id}`, { method: 'DELETE', token: operator.token });
  assert.is(del.status, 403);
  const patch = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { budgetAction: 'warn' }, token: operator.token });
  assert.is(patch.status, 403);
  const members = (await call(`/api/projects/${alpha.id}/members`)).body.members as { userId: string; role: string }[];
  assert.equal(members.map((m) => [m.userId, m.role]).sort(), [
    [viewer.id, 'viewer'],
    [operator.id, 'operator'],
    [padmin.id, 'admin'],
  ].sort());
  assert.equal((await call(`/api/projects/${alpha.id}`)).body, alpha);
});

test('project admin: may PATCH and manage members, but not delete the project or touch other projects', async () => {
  const patch = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { budgetUsd: 33 }, token: padmin.token });
  assert.is(patch.status, 200);
  assert.is(patch.body.budgetUsd, 33);
  alpha = patch.body;
  const put = await call(`/api/projects/${alpha.id}/members/${nobody.id}`, { method: 'PUT', json: { role: 'viewer' }, token: padmin.token });
  assert.is(put.status, 200);
  assert.is((await call(`/api/projects/${alpha.id}`, { token: nobody.token })).status, 200, 'the new member sees it at once');
  const delMember = await call(`/api/projects/${alpha.id}/members/${nobody.id}`, { method: 'DELETE', token: padmin.token });
  assert.is(delMember.status, 204);
  const del = await call(`/api/projects/${alpha.id}`, { method: 'DELETE', token: padmin.token });
  assert.is(del.status, 403);
  assert.match(del.body.error.message, /instance admin/);
  assert.is((await call(`/api/projects/${beta.id}`, { method: 'PATCH', json: { budgetUsd: 1 }, token: padmin.token })).status, 404);
  assert.equal(await listNames(), ['Alpha', 'Beta']);
});

test('the instance admin is admin everywhere without being a member', async () => {
  const me = await call('/api/me');
  assert.is(me.body.user.instanceAdmin, true);
  assert.equal(
    me.body.projects.map((p: { id: string; role: string }) => [p.id, p.role]),
    [
      [alpha.id, 'admin'],
      [beta.id, 'admin'],
    ],
  );
  const members = (await call(`/api/projects/${beta.id}/members`)).body.members;
  assert.equal(members, [], 'not a member of Beta');
  const patch = await call(`/api/projects/${beta.id}`, { method: 'PATCH', json: { budgetAction: 'stop' } });
  assert.is(patch.status, 200);
  beta = patch.body;
  const put = await call(`/api/projects/${beta.id}/members/${operator.id}`, { method: 'PUT', json: { role: 'operator' } });
  assert.is(put.status, 200);
});

test('GET /api/me lists the projects with the role of each user', async () => {
  const forViewer = await call('/api/me', { token: viewer.token });
  assert.is(forViewer.status, 200);
  assert.equal(forViewer.body.projects, [{ id: alpha.id, name: 'Alpha', role: 'viewer' }]);
  const forOperator = await call('/api/me', { token: operator.token });
  assert.equal(forOperator.body.projects, [
    { id: alpha.id, name: 'Alpha', role: 'operator' },
    { id: beta.id, name: 'Beta', role: 'operator' },
  ]);
  const forAdmin = await call('/api/me', { token: padmin.token });
  assert.equal(forAdmin.body.projects, [{ id: alpha.id, name: 'Alpha', role: 'admin' }]);
});

test('changing and removing a member takes effect at once', async () => {
  // Promote the viewer: it may PATCH right away.
  assert.is((await call(`/api/projects/${alpha.id}/members/${viewer.id}`, { method: 'PUT', json: { role: 'admin' } })).status, 200);
  const patch = await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { budgetUsd: 44 }, token: viewer.token });
  assert.is(patch.status, 200);
  alpha = patch.body;
  // Demote it again: PATCH is refused right away.
  assert.is((await call(`/api/projects/${alpha.id}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  assert.is((await call(`/api/projects/${alpha.id}`, { method: 'PATCH', json: { budgetUsd: 55 }, token: viewer.token })).status, 403);
  // Remove it: the project disappears for it at once.
  const del = await call(`/api/projects/${alpha.id}/members/${viewer.id}`, { method: 'DELETE' });
  assert.is(del.status, 204);
  assert.is((await call(`/api/projects/${alpha.id}`, { token: viewer.token })).status, 404);
  assert.equal((await call('/api/projects', { token: viewer.token })).body.projects, []);
  assert.equal((await call('/api/me', { token: viewer.token })).body.projects, []);
  const again = await call(`/api/projects/${alpha.id}/members/${viewer.id}`, { method: 'DELETE' });
  assert.is(again.status, 404);
  assert.equal((await call(`/api/projects/${alpha.id}`)).body, alpha, 'the refused PATCH changed nothing');
});

test('add a member by e-mail (POST members): project admins name people they cannot list; unknown or inactive e-mail → 400 on the email field; operators → 403; audited', async () => {
  const padminToken = padmin.token;
  const newcomer = await makeUser('newcomer');
  const added = await call(`/api/projects/${alpha.id}/members`, { method: 'POST', json: { email: newcomer.email.toUpperCase(), role: 'operator' }, token: padminToken });
  assert.is(added.status, 201, JSON.stringify(added.body));
  assert.equal([added.body.userId, added.body.email, added.body.role], [newcomer.id, newcomer.email, 'operator']);
  const members = (await call(`/api/projects/${alpha.id}/members`)).body.members as { userId: string; role: string }[];
  assert.is(members.find((m) => m.userId === newcomer.id)?.role, 'operator');
  // Again with another role: the role changes (no duplicate row).
  assert.is((await call(`/api/projects/${alpha.id}/members`, { method: 'POST', json: { email: newcomer.email, role: 'viewer' }, token: padminToken })).status, 201);
  assert.is(((await call(`/api/projects/${alpha.id}/members`)).body.members as { userId: string }[]).filter((m) => m.userId === newcomer.id).length, 1);
  const unknown = await call(`/api/projects/${alpha.id}/members`, { method: 'POST', json: { email: 'nobody-here@example.test', role: 'viewer' }, token: padminToken });
  assert.is(unknown.status, 400);
  assert.match(unknown.body.error.fields.email, /no active user/);
  assert.is((await call(`/api/users/${newcomer.id}`, { method: 'PATCH', json: { active: false } })).status, 200);
  const inactive = await call(`/api/projects/${alpha.id}/members`, { method: 'POST', json: { email: newcomer.email, role: 'admin' }, token: padminToken });
  assert.is(inactive.status, 400, 'an inactive user answers like an unknown one');
  assert.equal(inactive.body.error.fields, unknown.body.error.fields);
  const bad = await call(`/api/projects/${alpha.id}/members`, { method: 'POST', json: { email: 'not-an-email', role: 'owner' } });
  assert.is(bad.status, 400);
  assert.ok(bad.body.error.fields.email && bad.body.error.fields.role, 'both fields named');
  const byOperator = await call(`/api/projects/${alpha.id}/members`, { method: 'POST', json: { email: newcomer.email, role: 'admin' }, token: operator.token });
  assert.is(byOperator.status, 403);
  const audit = await call(`/api/audit?action=project.member_set&targetId=${alpha.id}`);
  const mine = (audit.body.records as { diff: { userId: string; after: string } }[]).filter((r) => r.diff.userId === newcomer.id);
  assert.equal(mine.map((r) => r.diff.after), ['viewer', 'operator'], 'both audited, newest first');
});

test('delete: 204, then 404 everywhere; memberships go with it; a second delete → 404', async () => {
  const del = await call(`/api/projects/${alpha.id}`, { method: 'DELETE' });
  assert.is(del.status, 204);
  assert.is((await call(`/api/projects/${alpha.id}`)).status, 404);
  assert.is((await call(`/api/projects/${alpha.id}/members`)).status, 404);
  assert.equal(await listNames(), ['Beta']);
  assert.is((await call(`/api/projects/${alpha.id}`, { token: padmin.token })).status, 404);
  assert.equal((await call('/api/me', { token: padmin.token })).body.projects, []);
  assert.equal((await call('/api/me', { token: operator.token })).body.projects, [{ id: beta.id, name: 'Beta', role: 'operator' }]);
  const again = await call(`/api/projects/${alpha.id}`, { method: 'DELETE' });
  assert.is(again.status, 404);
  // The name is free again.
  const reuse = await call('/api/projects', { method: 'POST', json: { name: 'alpha', repo: 'acme/alpha2' } });
  assert.is(reuse.status, 201);
  assert.is.not(reuse.body.id, alpha.id);
  assert.equal((await call(`/api/projects/${reuse.body.id}/members`)).body.members, [], 'old memberships did not come back');
  const audit = await call(`/api/audit?action=project.delete&targetId=${alpha.id}`);
  assert.is(audit.body.records.length, 1);
});

test('concurrent creates of the same name: exactly one 201, the others 409 name_taken (never 500)', async () => {
  // A few rounds: the first burst on a fresh connection pool may happen to serialize.
  for (let round = 0; round < 3; round++) {
    const name = `Race-${round}-${randomBytes(3).toString('hex')}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call('/api/projects', { method: 'POST', json: { name: i % 2 ? name.toLowerCase() : name, repo: `acme/race${i}` } })),
    );
    const statuses = answers.map((a) => a.status).sort();
    assert.equal(statuses, [201, 409, 409, 409, 409, 409, 409, 409], `round ${round} statuses: ${statuses.join(', ')}`);
    for (const a of answers.filter((x) => x.status === 409)) assert.is(a.body.error.code, 'name_taken');
    assert.is((await listNames()).filter((n) => n.toLowerCase() === name.toLowerCase()).length, 1);
  }
  assert.not.match(server.output(), /unhandled error/);
});

test('concurrent renames to the same name: exactly one 200, the others 409 name_taken (never 500)', async () => {
  for (let round = 0; round < 3; round++) {
    const name = `Rename-${round}-${randomBytes(3).toString('hex')}`;
    const made: string[] = [];
    for (let i = 0; i < 6; i++) made.push((await call('/api/projects', { method: 'POST', json: { name: `${name}-src${i}`, repo: 'acme/src' } })).body.id);
    const answers = await Promise.all(made.map((id) => call(`/api/projects/${id}`, { method: 'PATCH', json: { name } })));
    const statuses = answers.map((a) => a.status).sort();
    assert.equal(statuses, [200, 409, 409, 409, 409, 409], `round ${round} statuses: ${statuses.join(', ')}`);
    assert.is((await listNames()).filter((n) => n === name).length, 1);
  }
  assert.not.match(server.output(), /unhandled error/);
});

test('a budget with more than 2 decimals: the PATCH answer is what is stored (what GET answers)', async () => {
  const made = await call('/api/projects', { method: 'POST', json: { name: `Budget-${randomBytes(3).toString('hex')}`, repo: 'acme/budget', budgetUsd: 1.005 } });
  assert.is(made.status, 201);
  assert.equal(made.body, (await call(`/api/projects/${made.body.id}`)).body, 'POST answer = stored');
  const patch = await call(`/api/projects/${made.body.id}`, { method: 'PATCH', json: { budgetUsd: 12.345 } });
  assert.is(patch.status, 200);
  const got = await call(`/api/projects/${made.body.id}`);
  assert.equal(patch.body, got.body, `PATCH answered ${patch.body.budgetUsd}, GET answers ${got.body.budgetUsd}`);
});

test('anonymous callers get 401 on every project route', async () => {
  for (const [method, path] of [
    ['GET', '/api/projects'],
    ['POST', '/api/projects'],
    ['GET', `/api/projects/${beta.id}`],
    ['PATCH', `/api/projects/${beta.id}`],
    ['DELETE', `/api/projects/${beta.id}`],
    ['GET', `/api/projects/${beta.id}/members`],
  ]) {
    const res = await fetch(server.url + path, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' || method === 'DELETE' ? undefined : '{}' });
    assert.is(res.status, 401, `${method} ${path}`);
  }
  assert.is((await call(`/api/projects/${beta.id}`)).status, 200, 'beta is still there');
});

test('a project admin cannot move its project to a runner or root path (403, instance admins only); same values pass; nothing moves', async () => {
  const other = (await call('/api/runners', { method: 'POST', json: { name: 'other-team' } })).body.runner.id;
  const made = await call('/api/projects', { method: 'POST', json: { name: `Placed-${randomBytes(3).toString('hex')}`, repo: 'acme/placed', runnerId: runner1, rootPath: '/srv/placed' } });
  assert.is(made.status, 201);
  const owner = await makeUser('owner');
  assert.is((await call(`/api/projects/${made.body.id}/members/${owner.id}`, { method: 'PUT', json: { role: 'admin' } })).status, 200);
  for (const json of [{ runnerId: other }, { rootPath: '/' }, { rootPath: '/etc' }, { runnerId: null }, { rootPath: null }, { runnerId: other, rootPath: '/srv/x' }]) {
    const res = await call(`/api/projects/${made.body.id}`, { method: 'PATCH', json, token: owner.token });
    assert.is(res.status, 403, JSON.stringify(json));
    assert.is(res.body.error.code, 'forbidden');
    assert.match(res.body.error.message, /instance admin/);
  }
  assert.equal((await call(`/api/projects/${made.body.id}`)).body, made.body, 'nothing moved');
  const same = await call(`/api/projects/${made.body.id}`, { method: 'PATCH', json: { runnerId: runner1, rootPath: '/srv/placed', budgetUsd: 3 }, token: owner.token });
  assert.is(same.status, 200, 'the same runner and root with other changes pass');
  assert.is(same.body.budgetUsd, 3);
  const audit = await call(`/api/audit?action=project.update&targetId=${made.body.id}`);
  assert.is(audit.body.records.length, 1, 'only the allowed change is audited');
  const moved = await call(`/api/projects/${made.body.id}`, { method: 'PATCH', json: { runnerId: other, rootPath: '/srv/elsewhere' } });
  assert.is(moved.status, 200, 'an instance admin may move it');
  assert.is(moved.body.runnerId, other);
});

test('placement: an unknown or revoked runner → 400 naming runnerId; overlapping roots on one runner → 422 root_overlaps naming rootPath', async () => {
  const tag = randomBytes(3).toString('hex');
  const unknown = await call('/api/projects', { method: 'POST', json: { name: `P-${tag}-1`, repo: 'acme/p', runnerId: 'no-such-runner', rootPath: '/srv/p' } });
  assert.is(unknown.status, 400);
  assert.is(unknown.body.error.fields.runnerId, 'no such runner');
  const made = (await call('/api/runners', { method: 'POST', json: { name: 'gone' } })).body;
  const paired = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: made.code, hostname: 'h', version: '0.1.0', target: 'linux-amd64' }) });
  assert.is(paired.status, 200);
  const gone = made.runner.id;
  assert.is((await call(`/api/runners/${gone}`, { method: 'DELETE' })).status, 204, 'revoked');
  const revoked = await call('/api/projects', { method: 'POST', json: { name: `P-${tag}-2`, repo: 'acme/p', runnerId: gone, rootPath: '/srv/p' } });
  assert.is(revoked.status, 400);
  assert.match(revoked.body.error.fields.runnerId, /revoked/);
  const removed = (await call('/api/runners', { method: 'POST', json: { name: 'removed' } })).body.runner.id;
  assert.is((await call(`/api/runners/${removed}`, { method: 'DELETE' })).status, 204, 'never paired: removed');
  const onRemoved = await call('/api/projects', { method: 'POST', json: { name: `P-${tag}-r`, repo: 'acme/p', runnerId: removed, rootPath: '/srv/p' } });
  assert.is(onRemoved.body.error?.fields?.runnerId, 'no such runner');
  const host = (await call('/api/runners', { method: 'POST', json: { name: 'host' } })).body.runner.id;
  const base = await call('/api/projects', { method: 'POST', json: { name: `P-${tag}-3`, repo: 'acme/p', runnerId: host, rootPath: '/srv/team/app' } });
  assert.is(base.status, 201);
  for (const rootPath of ['/srv/team/app', '/srv/team/app/', '/srv/team', '/', '/srv/team/app/sub', '/srv//team/app']) {
    const res = await call('/api/projects', { method: 'POST', json: { name: `P-${tag}-x`, repo: 'acme/p', runnerId: host, rootPath } });
    assert.is(res.status, 422, rootPath);
    assert.is(res.body.error.code, 'root_overlaps');
    assert.match(res.body.error.fields.rootPath, new RegExp(`P-${tag}-3`));
  }
  const sibling = await call('/api/projects', { method: 'POST', json: { name: `P-${tag}-4`, repo: 'acme/p', runnerId: host, rootPath: '/srv/team/app2' } });
  assert.is(sibling.status, 201, '/srv/team/app2 does not overlap /srv/team/app');
  const elsewhere = await call('/api/projects', { method: 'POST', json: { name: `P-${tag}-5`, repo: 'acme/p', runnerId: runner1, rootPath: '/srv/team/app' } });
  assert.is(elsewhere.status, 201, 'the same root on another runner is fine');
  const moveInto = await call(`/api/projects/${sibling.body.id}`, { method: 'PATCH', json: { rootPath: '/srv/team/app/inner' } });
  assert.is(moveInto.status, 422, 'an edit is checked too');
  const unknownPatch = await call(`/api/projects/${sibling.body.id}`, { method: 'PATCH', json: { runnerId: 'nope' } });
  assert.is(unknownPatch.status, 400);
  assert.ok(unknownPatch.body.error.fields.runnerId);
  assert.is((await call(`/api/projects/${sibling.body.id}`)).body.rootPath, '/srv/team/app2', 'unchanged');
  const names = await listNames();
  assert.not.ok(names.includes(`P-${tag}-1`) || names.includes(`P-${tag}-2`) || names.includes(`P-${tag}-x`), 'nothing refused was created');
});

test.run();
