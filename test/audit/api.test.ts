// Every admin mutation leaves an audit record; listing, filters, paging and verification over HTTP.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TEST_DB, onlyOn, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let dbEnv: Record<string, string>;
let cleanupDb: () => Promise<void>;
test.before(async () => {
  ({ env: dbEnv, cleanup: cleanupDb } = await serverDbEnv());
  server = await startServer({ admin: true, dbEnv, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') } });
});
test.after(async () => {
  await server?.cleanup();
  await cleanupDb?.();
});

interface Rec {
  seq: number;
  action: string;
  actorLabel: string;
  targetType: string;
  targetId: string | null;
  diff: unknown;
  requestId: string | null;
}
const list = async (query = '') => {
  const res = await server.api(`/api/audit${query}`);
  assert.is(res.status, 200, `GET /api/audit${query}`);
  return (await res.json()) as { records: Rec[]; nextCursor: string | null };
};

test('each admin mutation writes one record with actor, action, target, redacted diff and request id', async () => {
  const j = (method: string, path: string, json?: unknown) => server.api(path, { method, json, headers: { 'x-request-id': `req-${path}-${method}` } });
  const user = await (await j('POST', '/api/users', { email: 'ann@example.test', name: 'Ann' })).json();
  await j('PATCH', `/api/users/${user.user.id}`, { name: 'Ann B' });
  const project = await (await j('POST', '/api/projects', { name: 'Alpha', repo: 'acme/alpha' })).json();
  await j('PATCH', `/api/projects/${project.id}`, { budgetUsd: 50, budgetAction: 'stop' });
  await j('PUT', `/api/projects/${project.id}/members/${user.user.id}`, { role: 'operator' });
  await j('PATCH', '/api/settings', { 'instance.name': 'Team svc' });
  const hook = await j('POST', '/api/webhooks', { url: 'https://hooks.example/audit', events: ['pr.merged'] });
  assert.is(hook.status, 201);
  const hookSecret = (await hook.json()).secret as string;
  await j('PUT', '/api/prices/claude-sonnet-4', { inputUsdPerMTok: 3, outputUsdPerMTok: 15 });
  await j('POST', '/api/schedules/retention.activity/run');

  const { records } = await list('?limit=500');
  const actions = records.map((r) => r.action).reverse();
  assert.equal(actions, [
    'user.create', // the CLI bootstrap
    'user.password_set',
    'token.create',
    'user.create',
    'user.update',
    'project.create',
    'project.update',
    'project.member_set',
    'settings.update',
    'webhook.create',
    'price.set',
    'schedule.run',
  ]);
  const byAction = new Map(records.map((r) => [r.action, r]));
  assert.is(records[records.length - 1].actorLabel, 'cli');
  assert.is(byAction.get('project.update')!.actorLabel, server.admin.email);
  assert.is(byAction.get('project.update')!.requestId, `req-/api/projects/${project.id}-PATCH`);
  assert.is(byAction.get('project.update')!.targetId, project.id);
  assert.equal((byAction.get('project.update')!.diff as { after: { budgetUsd: number } }).after.budgetUsd, 50);
  assert.equal(byAction.get('project.member_set')!.diff, { userId: user.user.id, before: null, after: 'operator' });
  assert.ok(hookSecret.length >= 32);
  assert.not.ok(JSON.stringify(records).includes(hookSecret), 'no secret in any record');
});

test('refused requests leave no record', async () => {
  const before = (await list('?limit=1')).records[0].seq;
  assert.is((await server.api('/api/projects', { method: 'POST', json: { name: 'Bad', repo: 'not a repo' } })).status, 400);
  assert.is((await server.api('/api/projects', { method: 'POST', json: { name: 'alpha', repo: 'acme/dupe' } })).status, 409);
  assert.is((await list('?limit=1')).records[0].seq, before);
});

test('filters by action, target and actor; time window', async () => {
  const created = await list('?action=project.create');
  assert.equal(created.records.map((r) => r.action), ['project.create']);
  const target = created.records[0].targetId!;
  const onProject = await list(`?targetType=project&targetId=${target}`);
  assert.equal(onProject.records.map((r) => r.action), ['project.member_set', 'project.update', 'project.create']);
  const me = (await (await server.api('/api/me')).json()).user.id;
  assert.ok((await list(`?actor=${me}`)).records.every((r) => r.actorLabel === server.admin.email));
  assert.is((await list(`?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).records.length, 0);
  assert.ok((await list(`?until=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).records.length > 5);
});

test('cursor paging walks every record once, newest first', async () => {
  const all = (await list('?limit=500')).records.map((r) => r.seq);
  const seen: number[] = [];
  let cursor: string | null = null;
  do {
    const page: { records: Rec[]; nextCursor: string | null } = await list(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
    seen.push(...page.records.map((r) => r.seq));
    cursor = page.nextCursor;
  } while (cursor);
  assert.equal(seen, all);
  assert.equal(all, [...all].sort((a, b) => b - a));
});

test('bad query parameters → 400 naming them', async () => {
  for (const [q, field] of [
    ['?limit=0', 'limit'],
    ['?limit=9999', 'limit'],
    ['?cursor=abc', 'cursor'],
    ['?since=yesterday', 'since'],
    ['?colour=red', 'colour'],
  ]) {
    const res = await server.api(`/api/audit${q}`);
    assert.is(res.status, 400, q);
    assert.ok((await res.json()).error.fields[field], `${q} names ${field}`);
  }
});

async function verifyNow() {
  const run = await server.api('/api/schedules/audit.verify/run', { method: 'POST' });
  assert.is(run.status, 202);
  const { scheduledFor } = await run.json();
  for (let i = 0; i < 100; i++) {
    const v = (await (await server.api('/api/audit/verification')).json()).verification;
    if (v && v.startedAt >= scheduledFor) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('verification did not finish');
}

test('verification: ok with the number of records checked, and the next nightly run', async () => {
  const v = await verifyNow();
  assert.is(v.ok, true);
  assert.is(v.firstBrokenSeq, null);
  const count = (await list('?limit=500')).records.length;
  assert.ok(v.recordsChecked >= count - 1, `${v.recordsChecked} of ${count}`);
  const body = await (await server.api('/api/audit/verification')).json();
  assert.match(body.nextRunAt, /T03:00:00\.000Z$/);
});

onlyOn('postgres', test, 1, () => {
  test('a superuser edits a row behind the trigger: verification names that row', async () => {
    const db = postgres(dbEnv.DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      await db.unsafe(`alter table audit_records disable trigger user;
                       update audit_records set actor_label = 'mallory' where seq = 4;
                       alter table audit_records enable trigger user;`);
    } finally {
      await db.end();
    }
    const v = await verifyNow();
    assert.is(v.ok, false);
    assert.is(v.firstBrokenSeq, 4);
    assert.match(v.problem, /record 4 was altered/);
    assert.match(server.output(), /ERROR audit chain broken .*firstBrokenSeq=4/);
  });
});

test.run();
