// Retention jobs delete by age per the spec's table (runs on PGlite and PostgreSQL).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { retentionJobs } from '../../functions/jobs/retention.ts';
import { Scheduler } from '../../functions/jobs/scheduler.ts';
import { loadConfig } from '../../functions/lib/config.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { migratedTestDb } from '../helpers/db.ts';

const quiet = createLogger('error');
let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  // Inbound deliveries belong to a trigger (0009).
  await db.query(sql`insert into users (id, email, name) values ('u', 'u@example.test', 'u')`);
  await db.query(sql`insert into projects (id, name, repo) values ('p', 'p', 'a/p')`);
  await db.query(sql`
    insert into triggers (id, project_id, name, action, value_pattern, public_id, public_id_hash, secret_ciphertext, created_by)
    values ('t', 'p', 't', 'next_round', '.*', ${'x'.repeat(24)}, 'h', 'c', 'u')`);
});
test.after(async () => cleanup?.());

async function insertAged(table: string, label: string, daysAgo: number) {
  const at = sql`now() - make_interval(days => ${daysAgo})`;
  if (table === 'activity_items') await db.query(sql`insert into activity_items (kind, data, created_at) values (${label}, '{}', ${at})`);
  if (table === 'outbound_deliveries')
    await db.query(sql`insert into outbound_deliveries (id, webhook_id, event_type, created_at) values (${label}, 'w', 'webhook.test', ${at})`);
  if (table === 'inbound_deliveries')
    await db.query(sql`insert into inbound_deliveries (id, trigger_id, delivery_id, status, created_at) values (${label}, 't', ${label}, 'accepted', ${at})`);
  if (table === 'codehost_deliveries') await db.query(sql`insert into codehost_deliveries (id, event, created_at) values (${label}, 'push', ${at})`);
  if (table === 'catalogue_events') await db.query(sql`insert into catalogue_events (id, type, body, created_at) values (${label}, 'webhook.test', '{}', ${at})`);
}

const labels = async (table: string) =>
  (await db.query<{ l: string }>(sql`select ${sql.raw(table === 'activity_items' ? 'kind' : 'id')} as l from ${sql.raw(table)} order by 1`)).map((r) => r.l);

test('each table keeps exactly its window: activity ACTIVITY_RETENTION_DAYS, events EVENTS_RETENTION_DAYS, deliveries 30 d, code-host 14 d', async () => {
  const config = loadConfig({ ACTIVITY_RETENTION_DAYS: '10', EVENTS_RETENTION_DAYS: '5' });
  const cases: [string, number][] = [
    ['activity_items', 10],
    ['catalogue_events', 5],
    ['outbound_deliveries', 30],
    ['inbound_deliveries', 30],
    ['codehost_deliveries', 14],
  ];
  for (const [table, days] of cases) {
    await insertAged(table, `${table}-old`, days + 1);
    await insertAged(table, `${table}-edge`, days - 1);
    await insertAged(table, `${table}-new`, 0);
  }
  const s = new Scheduler(db, quiet, 60);
  for (const job of retentionJobs(config)) s.register(job);
  for (const job of s.definitions()) assert.ok(await s.runNow(job.name));
  await s.settled();
  for (const [table] of cases) assert.equal(await labels(table), [`${table}-edge`, `${table}-new`], table);
  // The event list's horizon is the seq of the one deleted (the first stored): a cursor below it is gone.
  const [{ pruned }] = await db.query<{ pruned: string }>(sql`select pruned_through::text as pruned from catalogue_events_horizon`);
  const [{ first }] = await db.query<{ first: string }>(sql`select min(seq)::text as first from catalogue_events`);
  assert.is(BigInt(pruned), BigInt(first) - 1n);
  const results = await db.query<{ job: string; status: string; result: Record<string, number> }>(sql`select job, status, result from job_runs order by job`);
  assert.equal(
    results.map((r) => [r.job, r.status, r.result]),
    [
      ['retention.activity', 'ok', { deleted: 1 }],
      ['retention.codehost_deliveries', 'ok', { deleted: 1 }],
      ['retention.deliveries', 'ok', { outbound: 1, inbound: 1, deliveryIds: 0 }],
      ['retention.events', 'ok', { deleted: 1 }],
      ['retention.housekeeping', 'ok', { sessions: 0, passwordLinks: 0, actionLinks: 0, signInFailures: 0, closedIssues: 0, jobRuns: 0, runnerCommands: 0 }],
    ],
  );
});

test('the system jobs carry the spec times by default', () => {
  const jobs = retentionJobs(loadConfig({}));
  assert.equal(
    jobs.map((j) => [j.name, j.cron]),
    [
      ['retention.activity', '30 4 * * *'],
      ['retention.events', '30 4 * * *'],
      ['retention.deliveries', '45 4 * * *'],
      ['retention.housekeeping', '55 4 * * *'],
      ['retention.codehost_deliveries', '50 4 * * *'],
    ],
  );
});

test('housekeeping forgets ended sessions, used links, old failures, issues closed over a day ago and old job runs, and keeps live ones', async () => {
  await db.exec(`insert into users (id, email, name) values ('u1', 'u1@example.test', 'U1')`);
  await db.exec(`insert into sessions (id, user_id, expires_at, revoked_at) values
    ('live', 'u1', now() + interval '1 hour', null),
    ('expired', 'u1', now() - interval '2 days', null),
    ('revoked', 'u1', now() + interval '1 hour', now() - interval '2 days'),
    ('just-revoked', 'u1', now() + interval '1 hour', now())`);
  await db.exec(`insert into password_links (token_hash, user_id, expires_at, used_at) values
    ('fresh', 'u1', now() + interval '1 hour', null), ('used', 'u1', now() + interval '1 hour', now() - interval '2 days')`);
  await db.exec(`insert into auth_failures (key, at) values ('account:x', now()), ('account:x', now() - interval '3 days')`);
  await db.exec(`insert into job_runs (job, scheduled_for, status) values ('old.job', now() - interval '40 days', 'ok'), ('old.job', now() - interval '1 day', 'ok')`);
  await db.exec(`insert into codehost_issues (project_id, number, title, url, state, updated_at) values
    ('p', 1, 'open long ago', 'https://h/1', 'open', now() - interval '9 days'), ('p', 2, 'closed long ago', 'https://h/2', 'closed', now() - interval '2 days'),
    ('p', 3, 'just closed', 'https://h/3', 'closed', now())`);
  const s = new Scheduler(db, quiet, 60);
  for (const job of retentionJobs(loadConfig({}))) s.register(job);
  await s.runNow('retention.housekeeping');
  await s.settled();
  assert.equal((await db.query<{ n: number }>(sql`select number as n from codehost_issues where project_id = 'p' order by number`)).map((r) => r.n), [1, 3]);
  const ids = (await db.query<{ id: string }>(sql`select id from sessions order by id`)).map((r) => r.id);
  assert.equal(ids, ['just-revoked', 'live']);
  assert.equal((await db.query<{ t: string }>(sql`select token_hash as t from password_links`)).map((r) => r.t), ['fresh']);
  const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from auth_failures`);
  assert.is(n, 1);
  const [{ j }] = await db.query<{ j: number }>(sql`select count(*)::int as j from job_runs where job = 'old.job'`);
  assert.is(j, 1);
});

test('a large backlog is deleted in batches, all of it', async () => {
  await db.query(sql`insert into activity_items (kind, created_at) select 'bulk', now() - interval '400 days' from generate_series(1, 12000)`);
  const s = new Scheduler(db, quiet, 60);
  for (const job of retentionJobs(loadConfig({}))) s.register(job);
  await s.runNow('retention.activity');
  await s.settled();
  const [{ c }] = await db.query<{ c: number }>(sql`select count(*)::int as c from activity_items where kind = 'bulk'`);
  assert.is(c, 0);
});

test('code-host app deliveries as the hook records them: older than 14 days purged, newer kept, a redelivery of a purged id is new again', async () => {
  await db.query(sql`
    insert into codehost_apps (id, name, public_id, public_id_hash, webhook_secret_ciphertext)
    values ('app', 'a', ${'a'.repeat(24)}, 'ha', 'c')`);
  const add = (id: string, delivery: string, daysAgo: number) =>
    db.query(sql`
      insert into codehost_deliveries (id, app_id, delivery_id, event, action, repo, outcome, polls, created_at)
      values (${id}, 'app', ${delivery}, 'pull_request', 'opened', 'a/p', 'polled', ${sql.json([{ projectId: 'p', runnerId: 'r', status: 'done' }])},
              now() - make_interval(days => ${daysAgo}, mins => 1))`);
  await add('gh-old', 'd-old', 14);
  await add('gh-edge', 'd-edge', 13);
  const s = new Scheduler(db, quiet, 60);
  for (const job of retentionJobs(loadConfig({}))) s.register(job);
  await s.runNow('retention.codehost_deliveries');
  await s.settled();
  const left = (await db.query<{ id: string }>(sql`select id from codehost_deliveries where app_id = 'app' order by id`)).map((r) => r.id);
  assert.equal(left, ['gh-edge']);
  // The unique (app, delivery id) no longer holds the purged id.
  await add('gh-again', 'd-old', 0);
  // Deleting the app deletes its log.
  await db.query(sql`delete from codehost_apps where id = 'app'`);
  const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from codehost_deliveries where id like 'gh-%'`);
  assert.is(n, 0);
});

test.run();
