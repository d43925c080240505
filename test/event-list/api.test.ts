// The event list over HTTP (issue #39 part 1; functions/event-list/): every catalogue event a runner sends
// is listed with the envelope webhooks send, whether or not a webhook subscribes, once; pages follow the
// cursor in stored order and a later call with the last `next` returns only newer events; type and
// projectId filters; who sees what (project viewers their projects', instance admins all, Send test's
// project-less event admins only); 400s naming the field; 410 with the oldest cursor after retention;
// GET /api/events/:eventId. Runs on PGlite and PostgreSQL.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { TEST_DB, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, makeProject } from '../triggers/_harness.ts';

type Envelope = { id: string; type: string; ts: string; project: { id: string; repo: string } | null; slot?: string; issue?: number; data: Record<string, unknown> };
let server: RunningServer;
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let ws: Client;
let projectA = '';
let projectB = '';
let viewerA: TestUser;
let adminToken = '';
const call = (path: string, init: string | { method?: string } = {}) =>
  typeof init === 'string' ? callAs(server, path, { token: init }) : callAs(server, path, { ...init, token: adminToken });

test.before(async () => {
  dbEnv = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  adminToken = server.admin.token;
  const r = await pairRunner(server.api, server.url, 'events-one');
  projectA = await makeProject(server, r.runnerId);
  projectB = await makeProject(server, r.runnerId);
  viewerA = await makeUser(server, 'viewer-a');
  assert.is((await callAs(server, `/api/projects/${projectA}/members/${viewerA.id}`, { method: 'PUT', json: { role: 'viewer' }, token: adminToken })).status, 200);
  ws = connect(server.url, r.token);
  await ws.next('welcome');
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
  await dbEnv?.cleanup();
});

async function send(events: unknown[]) {
  ws.send({ type: 'events', events });
  await ws.next('ack');
}
const ev = (id: string, kind: string, project: string, payload: Record<string, unknown> = {}) => ({ id, source: `project:${project}`, kind, ts: new Date().toISOString(), payload: { project, ...payload } });
/** n slot.checkpoint events of a project, numbered from `from` (the issue carries the number). */
const batch = (tag: string, project: string, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ev(`${tag}-${from + i}`, 'slot.checkpoint', project, { slot: 'w1', issue: from + i, checkpoint: 'plan', summary: `step ${from + i}` }));

/** Follow the cursor from `after` until a call finds nothing; every event once, and the last cursor. */
async function readAll(query: string, token?: string, after?: string): Promise<{ events: Envelope[]; last: string | undefined; pages: number }> {
  const events: Envelope[] = [];
  let pages = 0;
  for (;;) {
    const res = await call(`/api/events?${query}${after ? `&after=${after}` : ''}`, token ?? {});
    assert.is(res.status, 200, JSON.stringify(res.body));
    pages++;
    events.push(...res.body.events);
    if (res.body.next === null) {
      assert.is(res.body.events.length, 0, 'next is null only when nothing was found');
      return { events, last: after, pages };
    }
    after = res.body.next;
  }
}

test('every catalogue event a runner sends is listed once, in stored order, with no webhook subscribed; pages follow the cursor', async () => {
  await send(batch('a', projectA, 1, 120));
  await send([...batch('b', projectB, 1, 30), ev('tool', 'tool.call', projectA, { name: 'x' })]); // tool.call is no catalogue event
  await send(batch('a', projectA, 1, 120)); // re-sent (an ack lost): nothing new
  const { events, pages } = await readAll('limit=50');
  assert.is(events.length, 150);
  assert.is(pages, 4, '50 + 50 + 50, then an empty page');
  assert.is(new Set(events.map((e) => e.id)).size, 150, 'each once');
  assert.equal(events.slice(0, 120).map((e) => e.issue), Array.from({ length: 120 }, (_, i) => i + 1), 'in the order stored');
  assert.ok(events.every((e) => e.type === 'slot.checkpoint'));
  const first = events[0];
  assert.equal([first.project, first.slot, first.data], [{ id: projectA, repo: first.project!.repo }, 'w1', { checkpoint: 'plan', summary: 'step 1' }]);
  // The one envelope, as its own resource.
  const one = await call(`/api/events/${first.id}`);
  assert.is(one.status, 200);
  assert.equal(one.body, first);
  assert.is((await call('/api/events/evt_0000')).status, 404);
});

test('a later call with the last next returns only the newer events', async () => {
  const { last } = await readAll('limit=500');
  assert.ok(last);
  const empty = await call(`/api/events?after=${last}`);
  assert.equal([empty.body.events, empty.body.next], [[], null]);
  await send(batch('c', projectA, 1, 3));
  const newer = await call(`/api/events?after=${last}`);
  assert.equal(newer.body.events.map((e: Envelope) => e.id.length && e.issue), [1, 2, 3]);
  assert.ok(newer.body.next);
});

test('type (repeatable) and projectId filters; the viewer sees its project only, and not a project it has no role on (404)', async () => {
  await send([ev('o-1', 'orchestrator.started', projectA, { profile: 'cc', round: 1 }), ev('q-1', 'pane.quota_hit', projectB, { session: 's', provider: 'anthropic' })]);
  const types = async (q: string, token?: string) => [...new Set((await readAll(q, token)).events.map((e) => e.type))].sort();
  assert.equal(await types('type=orchestrator.started'), ['orchestrator.started']);
  assert.equal(await types('type=orchestrator.started&type=pane.quota_hit'), ['orchestrator.started', 'pane.quota_hit']);
  assert.equal((await readAll(`projectId=${projectB}&limit=500`)).events.length, 31);
  const viewer = (await readAll('limit=500', viewerA.token)).events;
  assert.ok(viewer.length > 0 && viewer.every((e) => e.project?.id === projectA), 'a viewer sees its project only');
  assert.is((await call(`/api/events?projectId=${projectB}`, viewerA.token)).status, 404);
  const other = (await readAll(`type=pane.quota_hit`)).events[0];
  assert.is((await call(`/api/events/${other.id}`, viewerA.token)).status, 404, "another project's event does not exist for the viewer");
  assert.is((await call(`/api/events/${viewer[0].id}`, viewerA.token)).status, 200);
  assert.is((await fetch(`${server.url}/api/events`)).status, 401, 'no token, no list');
});

test('Send test is listed too (no project: instance admins only), and its delivery names it', async () => {
  const hook = await callAs(server, '/api/webhooks', { method: 'POST', json: { url: 'https://receiver.example.com/hook', events: ['pr.opened'] }, token: adminToken });
  assert.is(hook.status, 201);
  const sent = await callAs(server, `/api/webhooks/${hook.body.id}/test`, { method: 'POST', token: adminToken });
  assert.is(sent.status, 202);
  const one = await call(`/api/events/${sent.body.eventId}`);
  assert.equal([one.status, one.body.type, one.body.project], [200, 'webhook.test', null]);
  const delivery = await call(`/api/webhooks/${hook.body.id}/deliveries/${sent.body.deliveryId}`);
  assert.equal(delivery.body.envelope, one.body, 'the list holds the envelope exactly as the delivery sends it');
  assert.is((await call(`/api/events/${sent.body.eventId}`, viewerA.token)).status, 404);
  assert.ok((await readAll('type=webhook.test')).events.some((e) => e.id === sent.body.eventId));
  assert.equal((await readAll('type=webhook.test', viewerA.token)).events, []);
});

test('bad queries are 400 naming the field', async () => {
  for (const [q, field] of [['limit=0', 'limit'], ['limit=501', 'limit'], ['limit=x', 'limit'], ['after=nonsense', 'after'], ['type=pr.nope', 'type'], ['projectId=../x', 'projectId'], ['color=red', 'color']] as const) {
    const res = await call(`/api/events?${q}`);
    assert.is(res.status, 400, q);
    assert.ok(res.body.error.fields?.[field], `${q}: ${JSON.stringify(res.body)}`);
  }
  assert.is((await call('/api/events?limit=500')).status, 200);
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

test('retention: a cursor older than the events kept answers 410 with the oldest cursor still valid', async () => {
  const before = (await readAll('limit=500')).events;
  const cursors: string[] = [];
  let after: string | undefined;
  for (let i = 0; i < 3; i++) {
    const res = await call(`/api/events?limit=10${after ? `&after=${after}` : ''}`);
    after = res.body.next as string;
    cursors.push(after);
  }
  // The first 20 events age past EVENTS_RETENTION_DAYS (30 by default) while no server holds the database.
  assert.is(await server.stop(), 0);
  await onDb((db) => db.query(sql`update catalogue_events set created_at = now() - interval '31 days' where id in (select jsonb_array_elements_text(${sql.json(before.slice(0, 20).map((e) => e.id))}))`));
  const old = server;
  server = await startServer({ dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  await old.cleanup();
  assert.is((await call('/api/schedules/retention.events/run', { method: 'POST' })).status, 202);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const jobs = (await call('/api/schedules')).body.jobs as { name: string; lastRun: { status: string } | null }[];
    if (jobs.find((j) => j.name === 'retention.events')?.lastRun?.status === 'ok') break;
    if (Date.now() > deadline) throw new Error('retention.events did not finish');
    await new Promise((r) => setTimeout(r, 100));
  }
  const gone = await call(`/api/events?after=${cursors[0]}`);
  assert.is(gone.status, 410, JSON.stringify(gone.body));
  assert.is(gone.body.error.code, 'cursor_expired');
  assert.is(gone.body.oldest, cursors[1], 'the oldest cursor still valid: right after the last event deleted');
  const resumed = await readAll('limit=500', undefined, gone.body.oldest);
  assert.equal(resumed.events.map((e) => e.id), before.slice(20).map((e) => e.id), 'from there on, nothing lost');
  assert.equal((await readAll('limit=500')).events.map((e) => e.id), before.slice(20).map((e) => e.id), 'without a cursor: from the oldest kept');
  assert.is((await call(`/api/events?after=${cursors[2]}`)).status, 200);
});

test.run();
