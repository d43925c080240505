// The activity feed, whole (issue #36 item 4; functions/activity/record.ts): every fleet event a real
// action makes — catalogue events a runner sends (protocol test client), runs ending, a trigger firing
// or starting nothing, a schedule firing, an approval and a request for changes through svc, a runner
// coming online and going offline — becomes one item, seen by the right people only; a re-sent event
// makes no second item; GET /api/activity filters by kind and family; runner.offline is told to the
// admins of the projects on that runner (GET /api/notifications and the live notice), not to others.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/index.ts';
import type { Db } from '../../functions/lib/db/index.ts';
import { TEST_DB, serverDbEnv } from '../helpers/db.ts';
import { openLive } from '../helpers/live.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, createTrigger, makeProject, post, skillTrigger, waitFor } from '../triggers/_harness.ts';

type Item = { id: number; projectId: string | null; runnerId: string | null; kind: string; data: Record<string, any>; createdAt: string };

let server: RunningServer;
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let adminToken = '';
let ws: Client;
let r1 = { runnerId: '', token: '' };
let r2 = { runnerId: '', token: '' };
let projectA = '';
let projectB = '';
let projectC = '';
const u: Record<'viewerA' | 'adminB' | 'adminC', TestUser> = {} as never;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, { ...init, token: init.token ?? adminToken });
const feed = async (query = '', token?: string): Promise<Item[]> => {
  const res = await call(`/api/activity?limit=500${query}`, { token });
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.items;
};
const kinds = (items: Item[]) => [...new Set(items.map((i) => i.kind))].sort();
const PR_URL = 'https://github.com/acme/a/pull/5';

test.before(async () => {
  dbEnv = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  adminToken = server.admin.token;
  r1 = await pairRunner(server.api, server.url, 'activity-one');
  r2 = await pairRunner(server.api, server.url, 'activity-two');
  projectA = await makeProject(server, r1.runnerId);
  projectB = await makeProject(server, r1.runnerId);
  projectC = await makeProject(server, r2.runnerId);
  for (const [key, project, role] of [['viewerA', projectA, 'viewer'], ['adminB', projectB, 'admin'], ['adminC', projectC, 'admin']] as const) {
    u[key] = await makeUser(server, key);
    assert.is((await call(`/api/projects/${project}/members/${u[key].id}`, { method: 'PUT', json: { role } })).status, 200);
  }
  ws = connect(server.url, r1.token);
  await ws.next('welcome');
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
  await dbEnv?.cleanup();
});

/** Answer the next command frame as the runner would. */
async function answer(data: unknown) {
  const cmd = await ws.next('command');
  ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data });
  return cmd;
}

async function sendEvents(events: unknown[]) {
  ws.send({ type: 'events', events });
  await ws.next('ack');
}

const now = () => new Date().toISOString();
const ev = (id: string, kind: string, project: string, payload: Record<string, unknown>) => ({ id, source: `project:${project}`, kind, ts: now(), payload: { project, ...payload } });
const CATALOGUE_BATCH = () => [
  ev('c-1', 'orchestrator.started', projectA, { profile: 'cc', model: 'claude-opus-4-1', round: 3 }),
  ev('c-2', 'slot.dispatched', projectA, { slot: 'w1', issue: 7, title: 'Fix the login', branch: 'svc/7-login' }),
  ev('c-3', 'slot.checkpoint', projectA, { slot: 'w1', issue: 7, checkpoint: 'pr_open', summary: 'opened', pr: { number: 5, url: PR_URL } }),
  // pr.* as the runner's poll sends them (runner/codehost/changes.ts: the fields under `data`); the server's
  // pull request state (codehost/pulls.ts) turns each change into one envelope, so into one item.
  ev(`gh.${projectA}.5.1.opened`, 'pr.opened', projectA, { slot: 'w1', issue: 7, data: { pr: { number: 5, url: PR_URL }, title: 'Fix the login', branch: 'svc/7-login' } }),
  ev(`gh.${projectA}.5.1.checks.1`, 'pr.checks_changed', projectA, { data: { pr: { number: 5, url: PR_URL }, state: 'failed', summary: '1 failing', sha: 'c'.repeat(40) } }),
  ev(`gh.${projectA}.5.1.merged`, 'pr.merged', projectA, { data: { pr: { number: 5, url: PR_URL }, title: 'Fix the login' } }),
  ev('c-7', 'slot.stopped', projectA, { slot: 'w1', issue: 7, reason: 'done', exitCode: 0 }),
  ev('c-8', 'orchestrator.stopped', projectA, { reason: 'round over', exitCode: 0 }),
  ev(`gh.${projectB}.9.1.closed`, 'pr.closed', projectB, { data: { pr: { number: 9, url: 'https://github.com/acme/b/pull/9' }, title: 'Stale' } }),
  ev('c-10', 'issue.blocked', projectB, { slot: 'w2', issue: 11, reason: 'needs a key', summary: 'blocked' }),
  ev('c-11', 'person.needed', projectB, { slot: 'w2', question: 'Merge now?' }),
  // The pane's text never reaches the feed: only the prompt's kind and its session.
  ev('c-12', 'pane.prompt', projectB, { slot: 'w2', session: 's-2', promptKind: 'permission', text: 'PANE-TEXT-NEVER-SHOWN token=sk-live-123' }),
  ev('c-13', 'pane.quota_hit', projectB, { session: 's-2', provider: 'anthropic', resetsAt: '2026-11-28T09:00:00.000Z' }),
];
const CATALOGUE_A = ['orchestrator.started', 'orchestrator.stopped', 'pr.checks_changed', 'pr.merged', 'pr.opened', 'slot.checkpoint', 'slot.dispatched', 'slot.stopped'];
const CATALOGUE_B = ['issue.blocked', 'pane.prompt', 'pane.quota_hit', 'person.needed', 'pr.closed'];

test('runner.online: the first connection is an item for instance admins and the admins of the projects on that runner only', async () => {
  const online = await waitFor('runner.online', async () => (await feed('&kind=runner.online')).filter((i) => i.runnerId === r1.runnerId));
  assert.is(online.length, 1);
  assert.equal([online[0].projectId, online[0].data.name], [null, 'activity-one']);
  assert.equal((await feed('&kind=runner.*', u.adminB.token)).map((i) => i.runnerId), [r1.runnerId], "an admin of a project on the runner sees it");
  assert.equal(await feed('&kind=runner.online', u.viewerA.token), [], 'a viewer of a project on it does not');
  assert.equal(await feed('&kind=runner.online', u.adminC.token), [], 'an admin of a project on another runner does not');
});

test('every catalogue event a runner sends is an item of its project, once; never the pane text', async () => {
  await sendEvents(CATALOGUE_BATCH());
  const all = await feed();
  assert.equal(kinds(all.filter((i) => i.projectId === projectA)), CATALOGUE_A);
  assert.equal(kinds(all.filter((i) => i.projectId === projectB)), CATALOGUE_B);
  const opened = all.find((i) => i.kind === 'pr.opened')!;
  assert.equal([opened.data.pr, opened.data.slot, opened.data.issue, opened.data.title], [{ number: 5, url: PR_URL }, 'w1', 7, 'Fix the login']);
  assert.match(opened.data.eventId, /^evt_/);
  const prompt = all.find((i) => i.kind === 'pane.prompt')!;
  assert.equal([prompt.data.promptKind, prompt.data.session], ['permission', 's-2']);
  assert.not.match(JSON.stringify(all), 'PANE-TEXT');
  assert.not.match(JSON.stringify(all), 'sk-live');

  // The runner sends the batch again (an ack it never got): no second item.
  await sendEvents(CATALOGUE_BATCH());
  assert.is((await feed()).length, all.length, 'a re-sent event makes no second item');

  // Who sees what: a project's viewers its items; nobody another project's.
  const viewer = await feed('', u.viewerA.token);
  assert.equal(kinds(viewer), CATALOGUE_A);
  assert.ok(viewer.every((i) => i.projectId === projectA));
  const adminB = await feed('', u.adminB.token);
  assert.equal(kinds(adminB.filter((i) => i.projectId)), CATALOGUE_B);
  assert.equal(await feed('', u.adminC.token), []);
});

test('the kind filter: kinds, a comma list, repeated, a family, with the project filter; unknown kinds are 400', async () => {
  assert.equal(kinds(await feed('&kind=pr.*')), ['pr.checks_changed', 'pr.closed', 'pr.merged', 'pr.opened']);
  assert.equal(kinds(await feed('&kind=slot.stopped&kind=pr.merged')), ['pr.merged', 'slot.stopped']);
  assert.equal(kinds(await feed('&kind=slot.stopped,issue.blocked')), ['issue.blocked', 'slot.stopped']);
  assert.equal(kinds(await feed(`&kind=pr.*&projectId=${projectB}`)), ['pr.closed']);
  assert.equal(kinds(await feed('&kind=pr.*', u.viewerA.token)), ['pr.checks_changed', 'pr.merged', 'pr.opened']);
  for (const bad of ['bogus', 'pr.nope', 'nope.*', 'pr.opened,bogus', '*']) {
    const res = await call(`/api/activity?kind=${encodeURIComponent(bad)}`);
    assert.is(res.status, 400, bad);
    assert.match(JSON.stringify(res.body), 'kind');
  }
});

test('runs that end: run.succeeded and run.failed once per run, with the skill and the run id; paths cut from the error', async () => {
  const base = (runId: string, state: string, extra: Record<string, unknown> = {}) =>
    ev(`run.${runId}.${state}`, 'skill_run.state', projectA, { runId, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now(), state, at: now(), ...extra });
  await sendEvents([base('act-ok', 'running'), base('act-ok', 'succeeded'), base('act-bad', 'running'), base('act-bad', 'failed', { error: 'could not read /home/alice/.config/secret.json' })]);
  await sendEvents([base('act-ok', 'succeeded')]);
  const ok = await feed('&kind=run.succeeded');
  assert.equal(ok.map((i) => [i.projectId, i.data.runId, i.data.skill, i.data.state]), [[projectA, 'act-ok', 'review', 'succeeded']]);
  const bad = await feed('&kind=run.failed');
  assert.equal(bad.map((i) => [i.data.runId, i.data.state]), [['act-bad', 'failed']]);
  assert.is(bad[0].data.error, 'could not read [path]');
  assert.equal(kinds(await feed('&kind=run.*', u.adminC.token)), []);
});

test('triggers: one that fires is trigger.fired with its run; one whose runner is offline is trigger.refused with why', async () => {
  const t = await createTrigger(server, projectA, skillTrigger({ name: 'on push' }));
  const [res] = await Promise.all([post(t.url, t.secret, { ref: 'main' }, { delivery: 'act-fire-1' }), answer({ runId: 'run-trig-1', state: 'queued' })]);
  assert.is(res.status, 202);
  const fired = await waitFor('trigger.fired', async () => (await feed('&kind=trigger.fired'))[0]);
  assert.equal([fired.projectId, fired.data.trigger, fired.data.runId, fired.data.deliveryId, fired.data.skill], [projectA, 'on push', 'run-trig-1', 'act-fire-1', 'review']);

  const off = await createTrigger(server, projectC, skillTrigger({ name: 'offline hook' }));
  assert.is((await post(off.url, off.secret, { ref: 'main' }, { delivery: 'act-off-1' })).status, 202);
  const refused = await waitFor('trigger.refused', async () => (await feed('&kind=trigger.refused'))[0]);
  assert.equal([refused.projectId, refused.data.trigger, refused.data.reason], [projectC, 'offline hook', 'runner_offline']);
  assert.equal((await feed('&kind=trigger.*', u.adminC.token)).map((i) => i.kind), ['trigger.refused']);
  assert.equal((await feed('&kind=trigger.*', u.viewerA.token)).map((i) => i.kind), ['trigger.fired']);

  // Refused by the hook itself (its placeholder rules: 422): an item too, once for a repeated delivery id.
  const strict = await createTrigger(server, projectA, skillTrigger({ name: 'strict hook', args: ['--ref', '{{payload.ref}}'], allowedPaths: ['ref'] }));
  assert.is((await post(strict.url, strict.secret, { ref: '$(rm -rf /)' }, { delivery: 'act-422' })).status, 422);
  assert.is((await post(strict.url, strict.secret, { ref: '$(rm -rf /)' }, { delivery: 'act-422' })).status, 409, 'the same id again is a replay');
  const byHook = (await feed('&kind=trigger.refused')).filter((i) => i.data.trigger === 'strict hook');
  assert.equal(byHook.map((i) => [i.projectId, i.data.reason, i.data.deliveryId]), [[projectA, 'invalid_payload', 'act-422']]);
  assert.not.ok(JSON.stringify(byHook).includes('rm -rf'), 'never the payload');
});

test('schedule.fired: a schedule run that starts is an item with its run', async () => {
  const made = await call(`/api/projects/${projectA}/schedules`, { method: 'POST', json: { name: 'nightly', cron: '0 3 * * *', timezone: 'UTC', skill: 'review', args: [] } });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const [res] = await Promise.all([call(`/api/projects/${projectA}/schedules/${made.body.id}/run`, { method: 'POST' }), answer({ runId: 'run-sched-act', state: 'queued' })]);
  assert.is(res.status, 202, JSON.stringify(res.body));
  const [item] = await feed('&kind=schedule.fired');
  assert.equal([item.projectId, item.data.schedule, item.data.runId, item.data.skill], [projectA, 'nightly', 'run-sched-act', 'review']);
});

test('approvals through svc: pr.approved and pr.changes_requested with who and the pull request, never the comment', async () => {
  const [approve] = await Promise.all([call(`/api/projects/${projectA}/commands`, { method: 'POST', json: { name: 'pr.approve', args: { number: 5 } } }), answer({ pr: 5, decision: 'approve', written: true })]);
  assert.is(approve.status, 200, JSON.stringify(approve.body));
  const [changes] = await Promise.all([
    call(`/api/projects/${projectA}/commands`, { method: 'POST', json: { name: 'pr.requestChanges', args: { number: 5, comment: 'COMMENT-NOT-IN-FEED' } } }),
    answer({ pr: 5, decision: 'request_changes', written: true }),
  ]);
  assert.is(changes.status, 200);
  const items = await feed('&kind=pr.approved,pr.changes_requested');
  assert.equal(items.map((i) => [i.kind, i.projectId, i.data.pr, i.data.byName]), [
    ['pr.changes_requested', projectA, { number: 5, url: PR_URL }, 'Admin'],
    ['pr.approved', projectA, { number: 5, url: PR_URL }, 'Admin'],
  ]);
  assert.not.match(JSON.stringify(items), 'COMMENT-NOT-IN-FEED');
  assert.equal(kinds(await feed('&kind=pr.approved', u.viewerA.token)), ['pr.approved']);
  assert.equal(await feed('&kind=pr.approved', u.adminB.token), []);
});

/** Run `f` on the server's database (PGlite: only while no server holds it). */
async function onDb(f: (db: Db) => Promise<unknown>) {
  const db = TEST_DB === 'postgres' ? await openPostgres(dbEnv.env.DATABASE_URL, 1) : await openPglite(dbEnv.env.PGLITE_DATA_DIR);
  try {
    await f(db);
  } finally {
    await db.close();
  }
}

test('runner.offline: the admins of the projects on that runner are told (list and live notice) and see the item; others are not', async () => {
  ws.ws.close();
  await waitFor('the runner read offline', async () => (await call(`/api/runners/${r1.runnerId}`)).body.status === 'offline');
  // Gone for ten minutes: the database says so while no server holds it.
  assert.is(await server.stop(), 0);
  await onDb((db) => db.query(sql`update runners set last_seen_at = now() - interval '10 minutes' where id = ${r1.runnerId}`));
  const old = server;
  server = await startServer({ dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  await old.cleanup();

  const liveB = openLive(server.url, { token: u.adminB.token });
  const liveC = openLive(server.url, { token: u.adminC.token });
  const liveViewer = openLive(server.url, { token: u.viewerA.token });
  await Promise.all([liveB, liveC, liveViewer].map((l) => new Promise((r) => l.ws.once('open', r))));
  const ran = await call('/api/schedules/runners.offline/run', { method: 'POST' });
  assert.is(ran.status, 202, JSON.stringify(ran.body));

  const notice = await liveB.next((n) => n.type === 'notification' && n.kind === 'runner.offline');
  assert.not.ok('projectId' in notice);
  const listed = (token: string) => call('/api/notifications', { token }).then((r) => (r.body.notifications as { kind: string; data: Record<string, unknown> }[]).filter((n) => n.kind === 'runner.offline'));
  assert.equal((await listed(u.adminB.token)).map((n) => n.data.runnerId), [r1.runnerId], 'an admin of a project on the runner sees it');
  assert.equal(await listed(u.adminC.token), [], 'an admin of a project on another runner does not');
  assert.equal(await listed(u.viewerA.token), [], 'a viewer of a project on the runner does not');
  assert.equal((await listed(adminToken)).length, 1, 'instance admins do');
  // The notice went out in one pass over the sockets: the others would have it by now.
  assert.not.ok(liveC.notices.some((n) => n.type === 'notification' && n.kind === 'runner.offline'));
  assert.not.ok(liveViewer.notices.some((n) => n.type === 'notification' && n.kind === 'runner.offline'));

  const item = (await feed('&kind=runner.offline', u.adminB.token)).map((i) => [i.runnerId, i.data.name]);
  assert.equal(item, [[r1.runnerId, 'activity-one']]);
  assert.equal(await feed('&kind=runner.offline', u.adminC.token), []);
  for (const l of [liveB, liveC, liveViewer]) l.close();
});

test.run();
