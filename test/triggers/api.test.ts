// The triggers admin API against the real server (docs/triggers.md, "Managing triggers"): create with the
// secret shown once, list, get, edit with validation naming fields, enable/disable, rotate, dry run,
// delivery log paging, delete; project admins only, triggers of another project are 404; audited;
// 409 encryption_key_missing without the key; no secret in a later answer or the log.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { connect } from '../helpers/wsclient.ts';
import { waitUntil } from '../runner/_harness.ts';
import { createTrigger, deliveries, makeProject, nowSeconds, post, setup, skillTrigger } from './_harness.ts';
import type { Setup } from './_harness.ts';

let s: Setup;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(s.server, path, init);
const base = () => `/api/projects/${s.projectId}/triggers`;

test.before(async () => {
  s = await setup();
});
test.after(async () => s?.server.cleanup());

test('create → 201 {trigger, secret}: 24-character URL-safe publicId, full url, base64url secret; defaults filled', async () => {
  const res = await call(base(), { method: 'POST', json: skillTrigger() });
  assert.is(res.status, 201);
  const { trigger, secret } = res.body;
  assert.match(trigger.publicId, /^[A-Za-z0-9_-]{24}$/);
  assert.is(trigger.url, `${s.server.url}/hooks/${trigger.publicId}`);
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
  assert.is(trigger.projectId, s.projectId);
  assert.is(trigger.valuePattern, '^[\\w .,:/#@+-]*$');
  assert.is(trigger.output, 'report');
  assert.is(trigger.enabled, true);
  assert.is(trigger.previousSecretValidUntil, null);
  assert.not.ok(JSON.stringify(trigger).includes(secret));
  assert.not.equal(trigger.publicId, trigger.id, 'the publicId is not the database id');
});

test('the url follows PUBLIC_URL when it is set', async () => {
  const other = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'), PUBLIC_URL: 'https://svc.example.com/' } });
  try {
    const projectId = await makeProject(other, (await callAs(other, '/api/runners', { method: 'POST', json: { name: 'r' } })).body.runner.id);
    const made = await createTrigger(other, projectId, { name: 'n', action: 'next_round' });
    assert.is(made.trigger.url, `https://svc.example.com/hooks/${made.publicId}`);
  } finally {
    await other.cleanup();
  }
});

test('publicIds and secrets are different for every trigger', async () => {
  const a = await createTrigger(s.server, s.projectId);
  const b = await createTrigger(s.server, s.projectId);
  assert.not.equal(a.publicId, b.publicId);
  assert.not.equal(a.secret, b.secret);
});

test('list and get never carry the secret', async () => {
  const made = await createTrigger(s.server, s.projectId);
  const list = await call(base());
  assert.is(list.status, 200);
  assert.ok(list.body.triggers.some((t: { id: string }) => t.id === made.id));
  const one = await call(`${base()}/${made.id}`);
  assert.is(one.status, 200);
  assert.is(one.body.publicId, made.publicId);
  assert.not.ok(JSON.stringify(list.body).includes(made.secret) || JSON.stringify(one.body).includes(made.secret));
});

test('create: skill action without a skill → 400 naming skill', async () => {
  const res = await call(base(), { method: 'POST', json: { name: 'x', action: 'skill' } });
  assert.is(res.status, 400);
  assert.ok(res.body.error.fields.skill);
});

test('create: a bad regular expression → 400 naming valuePattern', async () => {
  for (const valuePattern of ['(', '[a-', '(a)\\1']) {
    const res = await call(base(), { method: 'POST', json: skillTrigger({ valuePattern }) });
    assert.is(res.status, 400, valuePattern);
    assert.equal(Object.keys(res.body.error.fields), ['valuePattern']);
  }
});

test('create: a template with a path not in allowedPaths, or bad placeholder syntax → 400 naming args.N', async () => {
  const notAllowed = await call(base(), { method: 'POST', json: skillTrigger({ args: ['ok', '{{payload.branch}}'], allowedPaths: ['ref'] }) });
  assert.is(notAllowed.status, 400);
  assert.equal(Object.keys(notAllowed.body.error.fields), ['args.1']);
  const syntax = await call(base(), { method: 'POST', json: skillTrigger({ args: ['{{payload.ref | upper}}'] }) });
  assert.is(syntax.status, 400);
  assert.equal(Object.keys(syntax.body.error.fields), ['args.0']);
});

test('create: bad allowed paths, unknown fields, skill fields with next_round → 400 naming them', async () => {
  const paths = await call(base(), { method: 'POST', json: skillTrigger({ allowedPaths: ['ok', 'a..b', `${'x.'.repeat(10)}x`] }) });
  assert.is(paths.status, 400);
  assert.equal(Object.keys(paths.body.error.fields).sort(), ['allowedPaths.1', 'allowedPaths.2']);
  const unknown = await call(base(), { method: 'POST', json: { ...skillTrigger(), projectId: 'other' } });
  assert.is(unknown.status, 400);
  assert.ok(unknown.body.error.fields.projectId);
  const mixed = await call(base(), { method: 'POST', json: { name: 'n', action: 'next_round', skill: 'review', args: ['x'] } });
  assert.is(mixed.status, 400);
  assert.equal(Object.keys(mixed.body.error.fields).sort(), ['args', 'skill']);
});

test('edit: fields change, the project stays fixed, a bad pattern is 400 naming valuePattern and changes nothing', async () => {
  const made = await createTrigger(s.server, s.projectId);
  const edited = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { name: 'renamed', args: ['{{payload.ref}}', '{{payload.pr.number}}'], allowedPaths: ['ref', 'pr.number'], output: 'pull_request', model: 'claude-opus-4-1' } });
  assert.is(edited.status, 200);
  assert.equal([edited.body.name, edited.body.args, edited.body.output, edited.body.model], ['renamed', ['{{payload.ref}}', '{{payload.pr.number}}'], 'pull_request', 'claude-opus-4-1']);
  const moved = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { projectId: 'elsewhere' } });
  assert.is(moved.status, 400);
  assert.ok(moved.body.error.fields.projectId);
  const bad = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { valuePattern: '(' } });
  assert.is(bad.status, 400);
  assert.equal(Object.keys(bad.body.error.fields), ['valuePattern']);
  const narrowed = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { allowedPaths: ['ref'] } });
  assert.is(narrowed.status, 400, 'removing a path a template uses is refused');
  assert.equal(Object.keys(narrowed.body.error.fields), ['args.1']);
  assert.is((await call(`${base()}/${made.id}`)).body.name, 'renamed');
  const toRound = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { action: 'next_round' } });
  assert.is(toRound.status, 200);
  assert.equal([toRound.body.skill, toRound.body.args], [null, []], 'switching to next_round clears the skill fields');
});

test('enable/disable: a disabled trigger answers 404 like an unknown one, enabled again it verifies', async () => {
  const made = await createTrigger(s.server, s.projectId);
  assert.is((await call(`${base()}/${made.id}/disable`, { method: 'POST' })).body.enabled, false);
  const off = await post(made.url, made.secret, { ref: 'main' });
  assert.is(off.status, 404);
  assert.is(off.text, '');
  assert.is((await call(`${base()}/${made.id}/enable`, { method: 'POST' })).body.enabled, true);
  assert.is((await post(made.url, made.secret, { ref: 'main' })).status, 202);
  const viaPatch = await call(`${base()}/${made.id}`, { method: 'PATCH', json: { enabled: false } });
  assert.is(viaPatch.body.enabled, false);
});

test('rotate: the new secret is shown once and verifies; the old one keeps verifying within 24 h', async () => {
  const made = await createTrigger(s.server, s.projectId);
  const rotated = await call(`${base()}/${made.id}/rotate`, { method: 'POST' });
  assert.is(rotated.status, 200);
  const fresh = rotated.body.secret;
  assert.match(fresh, /^[A-Za-z0-9_-]{43}$/);
  assert.not.equal(fresh, made.secret);
  const until = Date.parse(rotated.body.trigger.previousSecretValidUntil);
  assert.ok(Math.abs(until - (Date.now() + 24 * 3600 * 1000)) < 60_000, 'the previous secret is valid 24 h more');
  assert.is((await post(made.url, fresh, { ref: 'a' })).status, 202);
  assert.is((await post(made.url, made.secret, { ref: 'b' })).status, 202, 'the old secret still verifies');
  assert.not.ok(JSON.stringify((await call(`${base()}/${made.id}`)).body).includes(fresh));
});

test('dry run: 200 would fire with the rendered args; 422 with every reason; nothing fired, nothing recorded', async () => {
  // The project's runner is connected (it reports no profiles, like an older runner: not known to be unable).
  const runner = connect(s.server.url, s.runner.token);
  await runner.next('welcome');
  const made = await createTrigger(s.server, s.projectId, skillTrigger({ args: ['--ref', '{{payload.ref}}', '{{payload.n}}'], allowedPaths: ['ref', 'n'] }));
  const ok = await call(`${base()}/${made.id}/dry-run`, { method: 'POST', json: { payload: { ref: 'main', n: 7 } } });
  assert.is(ok.status, 200);
  assert.equal(ok.body.verdict, 'would_fire');
  assert.equal(ok.body.args, ['--ref', 'main', '7']);
  const bad = await call(`${base()}/${made.id}/dry-run`, { method: 'POST', json: { payload: { ref: '$(rm -rf /)' } } });
  assert.is(bad.status, 422);
  assert.is(bad.body.error.code, 'invalid_payload');
  assert.equal(bad.body.reasons.map((r: { field: string; code: string }) => `${r.field}:${r.code}`), ['args.1:pattern', 'args.2:missing']);
  const notObject = await call(`${base()}/${made.id}/dry-run`, { method: 'POST', json: { payload: [1] } });
  assert.is(notObject.status, 422);
  assert.equal(await deliveries(s.server, s.projectId, made.id), [], 'a dry run records nothing');
  runner.ws.close();
  await runner.closed;
  // The client sees its close before the server has recorded it: wait until the server reads it offline.
  await waitUntil(async () => (await call(`/api/runners/${s.runner.runnerId}`)).body.status === 'offline', 15_000, 'the server reads the runner offline');
  // Offline, the accepted payload still renders, but the run could not start now.
  const offline = await call(`${base()}/${made.id}/dry-run`, { method: 'POST', json: { payload: { ref: 'main', n: 7 } } });
  assert.equal([offline.status, offline.body.verdict, offline.body.reason, offline.body.args], [200, 'would_fail', 'runner_offline', ['--ref', 'main', '7']]);
});

test('deliveries: newest first, paged with before, filtered by status; each row has its delivery id and state', async () => {
  const made = await createTrigger(s.server, s.projectId, skillTrigger({ valuePattern: '[a-z]*' }));
  for (const [i, ref] of ['a', 'b', 'BAD', 'c'].entries()) await post(made.url, made.secret, { ref }, { delivery: `d-${i}` });
  const all = await deliveries(s.server, s.projectId, made.id);
  assert.equal(all.map((d) => d.deliveryId), ['d-3', 'd-2', 'd-1', 'd-0']);
  const refused = all.find((d) => d.deliveryId === 'd-2')!;
  assert.is(refused.status, 'refused');
  assert.is(refused.reason, 'invalid_payload');
  assert.equal(refused.reasons.map((r: { code: string }) => r.code), ['pattern']);
  const page1 = await call(`${base()}/${made.id}/deliveries?limit=2`);
  assert.equal(page1.body.deliveries.map((d: { deliveryId: string }) => d.deliveryId), ['d-3', 'd-2']);
  const page2 = await call(`${base()}/${made.id}/deliveries?limit=2&before=${page1.body.nextBefore}`);
  assert.equal(page2.body.deliveries.map((d: { deliveryId: string }) => d.deliveryId), ['d-1', 'd-0']);
  assert.is(page2.body.nextBefore, null);
  const onlyRefused = await deliveries(s.server, s.projectId, made.id, '?status=refused');
  assert.equal(onlyRefused.map((d) => d.deliveryId), ['d-2']);
});

test('delete → 204: its URL answers 404 and its log is gone', async () => {
  const made = await createTrigger(s.server, s.projectId);
  await post(made.url, made.secret, { ref: 'a' });
  assert.is((await call(`${base()}/${made.id}`, { method: 'DELETE' })).status, 204);
  assert.is((await call(`${base()}/${made.id}`)).status, 404);
  assert.is((await call(`${base()}/${made.id}/deliveries`)).status, 404);
  const gone = await post(made.url, made.secret, { ref: 'a' });
  assert.equal([gone.status, gone.text], [404, '']);
});

test("a trigger is found only through its own project's path: project B's admin gets 404 for every operation", async () => {
  const made = await createTrigger(s.server, s.projectId);
  const projectB = await makeProject(s.server, s.runner.runnerId);
  const padminB = await makeUser(s.server, 'padmin-b');
  assert.is((await call(`/api/projects/${projectB}/members/${padminB.id}`, { method: 'PUT', json: { role: 'admin' } })).status, 200);
  const other = `/api/projects/${projectB}/triggers/${made.id}`;
  for (const [method, path, json] of [
    ['GET', other], ['PATCH', other, { name: 'x' }], ['DELETE', other], ['POST', `${other}/rotate`], ['POST', `${other}/enable`],
    ['POST', `${other}/disable`], ['POST', `${other}/dry-run`, { payload: {} }], ['GET', `${other}/deliveries`],
  ] as [string, string, unknown?][]) {
    const res = await call(path, { method, json, token: padminB.token });
    assert.is(res.status, 404, `${method} ${path}`);
  }
  assert.is((await call(`${base()}`, { token: padminB.token })).status, 404, "A's list is 404 to B's admin");
  assert.is((await call(`${base()}/${made.id}`)).body.name, made.trigger.name, 'unchanged');
});

test('an operator of the project gets 403; the project admin may manage its triggers', async () => {
  const op = await makeUser(s.server, 'op');
  const padmin = await makeUser(s.server, 'padmin');
  await call(`/api/projects/${s.projectId}/members/${op.id}`, { method: 'PUT', json: { role: 'operator' } });
  await call(`/api/projects/${s.projectId}/members/${padmin.id}`, { method: 'PUT', json: { role: 'admin' } });
  assert.is((await call(base(), { token: op.token })).status, 403);
  assert.is((await call(base(), { method: 'POST', json: skillTrigger(), token: op.token })).status, 403);
  const made = await call(base(), { method: 'POST', json: skillTrigger(), token: padmin.token });
  assert.is(made.status, 201);
  assert.is(made.body.trigger.createdBy, padmin.id);
});

test('every change is audited, without the secret', async () => {
  const made = await createTrigger(s.server, s.projectId);
  await call(`${base()}/${made.id}`, { method: 'PATCH', json: { name: 'audited' } });
  const rotated = await call(`${base()}/${made.id}/rotate`, { method: 'POST' });
  await call(`${base()}/${made.id}/disable`, { method: 'POST' });
  await call(`${base()}/${made.id}`, { method: 'DELETE' });
  const audit = await call(`/api/audit?targetType=trigger&targetId=${made.id}`);
  assert.is(audit.status, 200);
  const actions = (audit.body.records as { action: string; targetId: string }[]).filter((r) => r.targetId === made.id).map((r) => r.action);
  for (const a of ['trigger.create', 'trigger.update', 'trigger.rotate', 'trigger.disable', 'trigger.delete']) assert.ok(actions.includes(a), `${a} in ${actions}`);
  const text = JSON.stringify(audit.body);
  assert.not.ok(text.includes(made.secret) || text.includes(rotated.body.secret));
  assert.not.ok(s.server.output().includes(made.secret) || s.server.output().includes(rotated.body.secret), 'no secret in the log');
});

// Without a key only with DATABASE_URL: the embedded database generates one (test/settings/encryption-key.test.ts).
onlyOn('postgres', test, 1, () => {
  test('without APP_ENCRYPTION_KEY: create and rotate → 409 encryption_key_missing', async () => {
    const bare = await startServer({ admin: true });
    try {
      const projectId = await makeProject(bare, (await callAs(bare, '/api/runners', { method: 'POST', json: { name: 'r' } })).body.runner.id);
      const res = await callAs(bare, `/api/projects/${projectId}/triggers`, { method: 'POST', json: skillTrigger() });
      assert.is(res.status, 409);
      assert.is(res.body.error.code, 'encryption_key_missing');
    } finally {
      await bare.cleanup();
    }
  });
});

test('a timestamp from the docs signer default is accepted (sanity of the harness clock)', async () => {
  const made = await createTrigger(s.server, s.projectId);
  assert.is((await post(made.url, made.secret, { ref: 'x' }, { timestamp: nowSeconds() })).status, 202);
});

test('list: each trigger with its newest delivery (refused ones too), or null before the first', async () => {
  const made = await createTrigger(s.server, s.projectId);
  const other = await createTrigger(s.server, s.projectId);
  const lastOf = async (id: string) => (await call(base())).body.triggers.find((t: { id: string }) => t.id === id).lastDelivery;
  assert.is(await lastOf(made.id), null);
  assert.is((await post(made.url, made.secret, { ref: 'x' }, { delivery: 'last-1' })).status, 202);
  assert.is((await post(made.url, made.secret, '[]', { delivery: 'last-2' })).status, 422);
  const last = await lastOf(made.id);
  assert.equal([last.deliveryId, last.status, last.reason], ['last-2', 'refused', 'invalid_payload']);
  assert.is(await lastOf(other.id), null, "another trigger's deliveries are not its own");
});

test.run();
