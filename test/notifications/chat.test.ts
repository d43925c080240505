// Notifications in-process on PGlite and PostgreSQL: every writer makes one notification through
// notify(), and each is pushed to the chat channels (Slack, Telegram fakes on loopback) by the webhook
// worker — with its address guard, retries and circuit, exactly like a webhook delivery.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkBudget } from '../../functions/cost/budget.ts';
import { encryptSecret } from '../../functions/lib/crypto.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { captureRunnerNotifications } from '../../functions/notifications/capture.ts';
import { notify } from '../../functions/notifications/notify.ts';
import { offlineJob } from '../../functions/runners/presence.ts';
import { CIRCUIT_PAUSE_MS, FIRST_RETRY_MS } from '../../functions/webhooks/circuit.ts';
import { secretAad } from '../../functions/webhooks/webhooks.ts';
import { chatFake } from '../fakes/chat.ts';
import type { ChatFake } from '../fakes/chat.ts';
import { KEY, addProject, addWebhook, attempts, deliveries, emit, fakeClock, migratedDb, quiet, setAllowlist, worker } from '../webhooks/_harness.ts';

let db: Db;
let cleanup: () => Promise<void>;
let fake: ChatFake;
let project: string;
let runner: string;
test.before(async () => {
  ({ db, cleanup } = await migratedDb());
  fake = await chatFake();
  runner = `r-${Date.now()}`;
  await db.query(sql`insert into runners (id, name, paired_at, last_seen_at) values (${runner}, 'build-box', now(), now() - interval '10 minutes')`);
  project = await addProject(db, { runnerId: runner });
});
test.after(async () => {
  await fake?.close();
  await cleanup?.();
});
test.before.each(async () => {
  fake.fail(null);
  fake.slack.length = fake.telegram.length = 0;
  await db.query(sql`delete from webhooks`);
  await db.query(sql`delete from outbound_deliveries`);
  await setAllowlist(db, ['127.0.0.1/32']);
});

async function addChannel(kind: 'slack' | 'telegram', url: string, secret: string, chatId: string | null = null): Promise<string> {
  const id = crypto.randomUUID();
  await db.query(sql`
    insert into webhooks (id, kind, url, chat_id, events, projects, secret_ciphertext)
    values (${id}, ${kind}, ${url}, ${chatId}, '[]', '[]', ${encryptSecret(KEY, secret, secretAad(id))})`);
  return id;
}
const notificationsOf = (kind: string) =>
  db.query<{ id: string; kind: string; project_id: string | null; runner_id: string | null; data: Record<string, unknown> }>(sql`select * from notifications where kind = ${kind} order by id`);

test('each writer makes exactly one notification: runner.offline, budget.threshold, pane.quota_hit, person.needed', async () => {
  const ctx = { db, log: quiet, scheduledFor: new Date(), signal: new AbortController().signal };
  await offlineJob.run(ctx);
  await offlineJob.run(ctx); // the same outage: not again
  const offline = (await notificationsOf('runner.offline')).filter((n) => n.runner_id === runner);
  assert.is(offline.length, 1);
  assert.equal([offline[0].data.name, offline[0].project_id], ['build-box', null]);

  await db.query(sql`update projects set budget_usd = 1 where id = ${project}`);
  await db.query(sql`
    insert into llm_requests (runner_id, runtime, merge_key, model, at, project_id, cost_usd)
    values (${runner}, 'claude', 'k-1', 'claude-sonnet-4-5', now(), ${project}, 0.85)`);
  assert.equal(await checkBudget(db, project), [80]);
  assert.equal(await checkBudget(db, project), []);
  const budget = await notificationsOf('budget.threshold');
  assert.is(budget.length, 1);
  assert.equal([budget[0].project_id, budget[0].data.threshold], [project, 80]);

  const now = new Date().toISOString();
  const events = [
    { id: 'e-quota', source: `project:${project}`, kind: 'pane.quota_hit', ts: now, payload: { project, slot: 'w1', session: 's-1', provider: 'anthropic', resetsAt: now, text: 'PANE TEXT' } },
    { id: 'e-person', source: `project:${project}`, kind: 'person.needed', ts: now, payload: { project, data: { question: 'Which database?' } } },
    { id: 'e-other', source: `project:${project}`, kind: 'pane.prompt', ts: now, payload: { project } },
  ];
  assert.is(await captureRunnerNotifications(db, runner, events), 2);
  assert.is(await captureRunnerNotifications(db, runner, events), 0, 'a re-sent batch makes nothing new');
  const quota = await notificationsOf('pane.quota_hit');
  assert.is(quota.length, 1);
  assert.equal(quota[0].data, { runnerId: runner, projectId: project, slot: 'w1', session: 's-1', provider: 'anthropic', resetsAt: now });
  assert.is(quota[0].project_id, project);
  const person = await notificationsOf('person.needed');
  assert.equal([person.length, person[0].data.question, person[0].project_id], [1, 'Which database?', project]);
  assert.is((await notificationsOf('pane.prompt')).length, 0);

  // A project of another runner is not this runner's to name: instance admins only.
  const foreign = await addProject(db);
  await captureRunnerNotifications(db, runner, [{ id: 'e-foreign', source: 'x', kind: 'person.needed', ts: now, payload: { project: foreign } }]);
  const last = (await notificationsOf('person.needed')).at(-1)!;
  assert.equal([last.project_id, last.data.projectId], [null, undefined]);
});

test('Slack and Telegram pushes arrive with the right body, unsigned, through the worker', async () => {
  const slack = await addChannel('slack', `${new URL(fake.slackUrl).origin}/…`, fake.slackUrl);
  const telegram = await addChannel('telegram', fake.url, fake.telegramToken, '-100123');
  const id = await notify(db, { kind: 'person.needed', projectId: project, data: { question: 'Ship it?' } });
  assert.ok(id);
  await worker(db, { clock: fakeClock(Date.now() + 2000) }).tick();
  assert.is(fake.slack.length, 1);
  assert.equal(fake.slack[0].body, { text: `A person is needed [p-${project}]: Ship it?` });
  assert.is(fake.slack[0].path, new URL(fake.slackUrl).pathname);
  assert.equal(Object.keys(fake.slack[0].headers).filter((h) => h.startsWith('x-svc-')), []);
  assert.is(fake.telegram.length, 1);
  assert.equal(fake.telegram[0].body, { chat_id: '-100123', text: `A person is needed [p-${project}]: Ship it?`, disable_web_page_preview: true });
  for (const c of [slack, telegram]) {
    const d = await deliveries(db, c);
    assert.equal([d.length, d[0].status, d[0].event_id], [1, 'delivered', `notification:${id}`]);
  }
  // A stable key makes no second notification and no second push.
  assert.ok(await notify(db, { kind: 'pane.quota_hit', data: {}, dedupeKey: 'k-once' }));
  assert.is(await notify(db, { kind: 'pane.quota_hit', data: {}, dedupeKey: 'k-once' }), null);
  assert.is((await deliveries(db, slack)).length, 2);
});

test('a wrong Telegram token is a failed attempt (401) and is retried; the token is never recorded', async () => {
  const telegram = await addChannel('telegram', fake.url, '987654321:wrong_token_wrong_token_wrong', '42');
  await notify(db, { kind: 'runner.offline', data: { name: 'x' } });
  const clock = fakeClock(Date.now() + 2000);
  const w = worker(db, { clock });
  await w.tick();
  const [d] = await deliveries(db, telegram);
  assert.equal([d.status, d.attempts, d.response_code, d.last_error], ['pending', 1, 401, 'http_status']);
  const log = await attempts(db, d.id);
  assert.ok(!JSON.stringify(log).includes('wrong_token'), 'the token is in no attempt record');
  assert.ok(!JSON.stringify(d).includes('wrong_token'));
});

test('a failing chat receiver is retried on the webhook schedule and its circuit opens after 10 failures', async () => {
  fake.fail(503);
  const slack = await addChannel('slack', 'x', fake.slackUrl);
  const clock = fakeClock(Date.now() + 2000);
  const w = worker(db, { clock, concurrency: 1 });
  await notify(db, { kind: 'runner.offline', data: { name: 'retry-me' } });
  await w.tick();
  let [d] = await deliveries(db, slack);
  assert.equal([d.status, d.attempts, d.response_code], ['pending', 1, 503]);
  clock.advance(FIRST_RETRY_MS * 1.2 + 1);
  await w.tick();
  [d] = await deliveries(db, slack);
  assert.is(d.attempts, 2, 'retried after the first back-off');
  fake.fail(null);
  clock.advance(FIRST_RETRY_MS * 2.4 + 1);
  await w.tick();
  [d] = await deliveries(db, slack);
  assert.equal([d.status, d.attempts], ['delivered', 3]);
  assert.is(fake.slack.length, 1);

  fake.fail(500);
  for (let i = 0; i < 12; i++) await notify(db, { kind: 'runner.offline', data: { name: `c-${i}` } });
  await w.tick();
  const [c] = await db.query<{ circuit_state: string; consecutive_failures: number }>(sql`select * from webhooks where id = ${slack}`);
  assert.equal([c.circuit_state, c.consecutive_failures], ['open', 10]);
  const hitsWhenOpen = fake.hits;
  clock.advance(CIRCUIT_PAUSE_MS - 1000);
  await w.tick();
  assert.is(fake.hits, hitsWhenOpen, 'paused: nothing is attempted');
  fake.fail(null);
  clock.advance(1000);
  await w.tick();
  const [after] = await db.query<{ circuit_state: string }>(sql`select * from webhooks where id = ${slack}`);
  assert.is(after.circuit_state, 'closed', 'the trial succeeded');
  assert.ok(fake.slack.length >= 2);
});

test('the guard refuses a loopback chat receiver unless the allowlist names it', async () => {
  await setAllowlist(db, []);
  const slack = await addChannel('slack', 'x', fake.slackUrl);
  await notify(db, { kind: 'runner.offline', data: { name: 'guarded' } });
  const clock = fakeClock(Date.now() + 2000);
  await worker(db, { clock }).tick();
  const [d] = await deliveries(db, slack);
  assert.equal([d.status, d.last_error], ['pending', 'blocked_address']);
  assert.is(fake.slack.length, 0, 'nothing left the process');
  await setAllowlist(db, ['127.0.0.1/32']);
  clock.advance(FIRST_RETRY_MS * 1.2 + 1);
  await worker(db, { clock }).tick();
  assert.is((await deliveries(db, slack))[0].status, 'delivered');
  assert.is(fake.slack.length, 1);
});

test('chat channels never receive catalogue events, and webhooks never receive notifications', async () => {
  const slack = await addChannel('slack', 'x', fake.slackUrl);
  const hook = await addWebhook(db, { url: `${fake.url}/services/hook`, events: ['pane.quota_hit'] });
  await emit(db, 'pane.quota_hit', project, 'catalogue-only');
  await notify(db, { kind: 'runner.offline', data: { name: 'n' } });
  await worker(db, { clock: fakeClock(Date.now() + 2000) }).tick();
  assert.equal((await deliveries(db, hook.id)).map((d) => d.event_id.startsWith('notification:')), [false]);
  assert.equal((await deliveries(db, slack)).map((d) => d.event_id.startsWith('notification:')), [true]);
});

test.run();
