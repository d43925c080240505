// The delivery worker in-process on PGlite and PostgreSQL, with real receivers on loopback and an
// injected clock: signed POSTs, the retry schedule, the circuit table, redeliver, resume, dispatch.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { CIRCUIT_PAUSE_MS } from '../../functions/webhooks/circuit.ts';
import { redeliver, resumeCircuit } from '../../functions/webhooks/webhooks.ts';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { addProject, addWebhook, attempts, deliveries, emit, fakeClock, migratedDb, receiver, setAllowlist, worker } from './_harness.ts';
import type { Receiver } from './_harness.ts';

let db: Db;
let cleanup: () => Promise<void>;
let rx: Receiver;
let project: string;
test.before(async () => {
  ({ db, cleanup } = await migratedDb());
  rx = await receiver();
  await setAllowlist(db, ['127.0.0.1/32']);
  project = await addProject(db);
});
test.after(async () => {
  await rx?.close();
  await cleanup?.();
});
test.before.each(() => {
  rx.requests.length = 0;
  rx.handle((_req, res) => res.end('ok'));
});

const circuitOf = async (id: string) =>
  (await db.query<{ circuit_state: string; consecutive_failures: number; trial_delivery_id: string | null }>(sql`select * from webhooks where id = ${id}`))[0];

test('an event becomes one signed POST per matching webhook: headers, legacy names, raw body verifies', async () => {
  const clock = fakeClock();
  const hook = await addWebhook(db, { url: `${rx.url}/hooks/a?x=1`, events: ['pr.opened'] });
  const envelope = await emit(db, 'pr.opened', project, 'sig-1', { data: { pr: { number: 7, url: 'https://github.com/acme/widgets/pull/7' }, title: 'Fix it' } });
  await worker(db, { clock }).tick();
  assert.is(rx.requests.length, 1);
  const r = rx.requests[0];
  assert.is(r.method, 'POST');
  assert.is(r.url, '/hooks/a?x=1');
  assert.is(r.headers['content-type'], 'application/json');
  assert.is(r.headers['x-svc-event'], 'pr.opened');
  const [d] = await deliveries(db, hook.id);
  assert.is(r.headers['x-svc-delivery'], d.id);
  assert.match(String(r.headers['x-svc-signature']), /^t=\d+,v1=[0-9a-f]{64}$/);
  assert.is(r.headers['x-agent-fleet-event'], 'pr.opened', 'legacy names carry the same values');
  assert.is(r.headers['x-agent-fleet-delivery'], d.id);
  assert.is(r.headers['x-agent-fleet-signature'], r.headers['x-svc-signature']);
  assert.equal(JSON.parse(r.body), envelope);
  const t = Math.floor(clock.now() / 1000);
  assert.ok(String(r.headers['x-svc-signature']).startsWith(`t=${t},`), 't is the clock of the attempt');
  assert.equal(verifyWebhook(r.body, r.headers['x-svc-signature'] as string, hook.secret, { now: t }), { ok: true, timestamp: t });
  assert.equal(verifyWebhook(r.body, r.headers['x-svc-signature'] as string, 'wrong secret', { now: t }), { ok: false, reason: 'mismatch' });
  assert.is(d.status, 'delivered');
  assert.is(d.attempts, 1);
  assert.is(d.response_code, 200);
  assert.is(d.response_body, 'ok');
  const [a] = await attempts(db, d.id);
  assert.equal([a.attempt, a.outcome, a.address, a.response_code], [1, 'success', '127.0.0.1', 200]);
});

test('dispatch: only webhooks subscribed to the type and (if limited) to the project; an event id becomes one delivery per webhook', async () => {
  const other = await addProject(db);
  const all = await addWebhook(db, { url: `${rx.url}/all`, events: ['slot.stopped', 'slot.checkpoint'] });
  const onlyOther = await addWebhook(db, { url: `${rx.url}/other`, events: ['slot.stopped'], projects: [other] });
  const wrongType = await addWebhook(db, { url: `${rx.url}/wrong`, events: ['pane.prompt'] });
  await emit(db, 'slot.stopped', project, 'disp-1');
  await emit(db, 'slot.stopped', project, 'disp-1'); // the same event again: stored once
  await emit(db, 'slot.stopped', other, 'disp-2');
  const w = worker(db);
  await w.tick();
  await emit(db, 'slot.stopped', project, 'disp-1'); // re-emitted after dispatch: still one delivery
  await w.tick();
  assert.is((await deliveries(db, all.id)).length, 2);
  assert.is((await deliveries(db, onlyOther.id)).length, 1);
  assert.is((await deliveries(db, wrongType.id)).length, 0);
  assert.equal(rx.requests.map((r) => r.url).sort(), ['/all', '/all', '/other']);
  const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from webhook_outbox`);
  assert.is(n, 0, 'the outbox is drained');
});

test('an event nobody subscribes to is not even stored', async () => {
  await emit(db, 'person.needed', project, 'nobody');
  const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from webhook_outbox`);
  assert.is(n, 0);
});

test('retry schedule: 30 s doubling ±20 %, 8 attempts then failed; nothing is attempted early', async () => {
  rx.handle((_req, res) => ((res.statusCode = 500), res.end('broken')));
  const clock = fakeClock();
  const randoms = [0, 0.9999, 0.5, 0.25, 0.75, 0, 0.9999];
  let i = 0;
  const w = worker(db, { clock, random: () => randoms[i++ % randoms.length] });
  const hook = await addWebhook(db, { url: `${rx.url}/retry`, events: ['pr.merged'] });
  await emit(db, 'pr.merged', project, 'retry-1');
  await w.tick();
  const waits: number[] = [];
  for (let attempt = 1; attempt < 8; attempt++) {
    const [d] = await deliveries(db, hook.id);
    assert.is(d.status, 'pending');
    assert.is(d.attempts, attempt);
    const wait = new Date(d.next_attempt_at!).getTime() - clock.now();
    waits.push(wait);
    const base = 30_000 * 2 ** (attempt - 1);
    assert.ok(wait >= base * 0.8 && wait <= base * 1.2, `wait after attempt ${attempt}: ${wait} ms, base ${base}`);
    clock.advance(wait - 1);
    await w.tick();
    assert.is(rx.requests.length, attempt, 'not a millisecond early');
    clock.advance(1);
    await w.tick();
    assert.is(rx.requests.length, attempt + 1);
  }
  assert.equal(waits, [24_000, 71_998, 120_000, 216_000, 528_000, 768_000, 2_303_923]);
  const [d] = await deliveries(db, hook.id);
  assert.equal([d.status, d.attempts, d.next_attempt_at, d.response_code, d.response_body, d.last_error], ['failed', 8, null, 500, 'broken', 'http_status']);
  clock.advance(10 * 3600_000);
  await w.tick();
  assert.is(rx.requests.length, 8, 'a failed delivery is not retried');
  // Redeliver: one more attempt, then failed again.
  assert.ok(await redeliver(db, hook.id, d.id, new Date(clock.now())));
  assert.is(await redeliver(db, hook.id, d.id, new Date(clock.now())), null, 'only a failed delivery');
  await w.tick();
  const [again] = await deliveries(db, hook.id);
  assert.equal([again.status, again.attempts, rx.requests.length], ['failed', 9, 9]);
  rx.handle((_req, res) => res.end('fine now'));
  await redeliver(db, hook.id, d.id, new Date(clock.now()));
  await w.tick();
  const [done] = await deliveries(db, hook.id);
  assert.equal([done.status, done.attempts, done.response_body], ['delivered', 10, 'fine now']);
});

test('circuit: 10 consecutive failures open it; pending deliveries wait; after 15 min one trial; fail → open again; success → closed', async () => {
  rx.handle((_req, res) => ((res.statusCode = 503), res.end()));
  const clock = fakeClock();
  const w = worker(db, { clock, concurrency: 1 });
  const hook = await addWebhook(db, { url: `${rx.url}/circuit`, events: ['pane.quota_hit'] });
  for (let i = 0; i < 12; i++) await emit(db, 'pane.quota_hit', project, `circuit-${i}`);
  await w.tick();
  assert.is(rx.requests.length, 10, 'the 11th and 12th are not attempted');
  let c = await circuitOf(hook.id);
  assert.equal([c.circuit_state, c.consecutive_failures], ['open', 10]);
  const pending = await deliveries(db, hook.id);
  assert.ok(pending.every((d) => d.status === 'pending'));
  assert.is(pending.filter((d) => d.attempts === 0).length, 2);
  clock.advance(CIRCUIT_PAUSE_MS - 1000);
  await w.tick();
  assert.is(rx.requests.length, 10, 'still paused at 14:59');
  clock.advance(1000);
  await w.tick();
  assert.is(rx.requests.length, 11, 'exactly one trial');
  c = await circuitOf(hook.id);
  assert.is(c.circuit_state, 'open', 'failed trial → open again');
  const trial = (await db.query<{ delivery_id: string; trial: boolean }>(sql`select delivery_id, trial from outbound_attempts where trial`))[0];
  assert.ok(trial, 'the attempt is marked as the trial');
  clock.advance(CIRCUIT_PAUSE_MS - 1);
  await w.tick();
  assert.is(rx.requests.length, 11, 'paused for another 15 minutes');
  rx.handle((_req, res) => res.end('back'));
  clock.advance(1);
  await w.tick();
  c = await circuitOf(hook.id);
  assert.equal([c.circuit_state, c.consecutive_failures, c.trial_delivery_id], ['closed', 0, null]);
  const after = await deliveries(db, hook.id);
  assert.ok(after.every((d) => d.status === 'delivered'), 'normal delivery resumed: the backlog went out');
  assert.is(rx.requests.length, 11 + 12);
});

test('a success resets the count: 9 failures, a success, 9 failures keep it closed', async () => {
  const clock = fakeClock();
  const w = worker(db, { clock, concurrency: 1 });
  const hook = await addWebhook(db, { url: `${rx.url}/reset`, events: ['pr.closed'] });
  let n = 0;
  rx.handle((_req, res) => ((res.statusCode = ++n === 10 ? 200 : 500), res.end()));
  for (let i = 0; i < 19; i++) await emit(db, 'pr.closed', project, `reset-${i}`);
  await w.tick();
  const c = await circuitOf(hook.id);
  assert.equal([c.circuit_state, c.consecutive_failures], ['closed', 9]);
});

test('resume deliveries closes an open circuit by hand and the waiting deliveries go out', async () => {
  rx.handle((_req, res) => ((res.statusCode = 500), res.end()));
  const clock = fakeClock();
  const w = worker(db, { clock, concurrency: 1 });
  const hook = await addWebhook(db, { url: `${rx.url}/resume`, events: ['issue.blocked'] });
  for (let i = 0; i < 11; i++) await emit(db, 'issue.blocked', project, `resume-${i}`);
  await w.tick();
  assert.is((await circuitOf(hook.id)).circuit_state, 'open');
  rx.handle((_req, res) => res.end());
  assert.is(await resumeCircuit(db, hook.id), 'open');
  clock.advance(60 * 60_000);
  await w.tick();
  assert.is((await circuitOf(hook.id)).circuit_state, 'closed');
  assert.ok((await deliveries(db, hook.id)).every((d) => d.status === 'delivered'));
});

test('rotation: the next attempt is signed with the new secret at once', async () => {
  const { encryptWebhookSecret } = await import('../../functions/webhooks/webhooks.ts');
  const { KEY } = await import('./_harness.ts');
  const hook = await addWebhook(db, { url: `${rx.url}/rotate`, events: ['slot.dispatched'] });
  await emit(db, 'slot.dispatched', project, 'rot-1');
  const w = worker(db);
  await w.tick();
  await db.query(sql`update webhooks set secret_ciphertext = ${encryptWebhookSecret(KEY, hook.id, 'the-new-secret')} where id = ${hook.id}`);
  await emit(db, 'slot.dispatched', project, 'rot-2');
  await w.tick();
  const [first, second] = rx.requests;
  assert.ok(verifyWebhook(first.body, first.headers['x-svc-signature'] as string, hook.secret).ok);
  assert.ok(verifyWebhook(second.body, second.headers['x-svc-signature'] as string, 'the-new-secret').ok);
  assert.not.ok(verifyWebhook(second.body, second.headers['x-svc-signature'] as string, hook.secret).ok, 'the old secret no longer verifies');
});

test('a secret that cannot be decrypted fails the attempt (secret_unavailable) and sends nothing', async () => {
  const hook = await addWebhook(db, { url: `${rx.url}/nokey`, events: ['orchestrator.stopped'] });
  await emit(db, 'orchestrator.stopped', project, 'nokey');
  await worker(db, { keys: { encryption: null } }).tick();
  assert.is(rx.requests.length, 0);
  const [d] = await deliveries(db, hook.id);
  assert.equal([d.status, d.attempts, d.last_error], ['pending', 1, 'secret_unavailable']);
});

test('server events (schedule.*): emitted with a stable id, delivered once even when emitted twice; only server types', async () => {
  const { emitEvent } = await import('../../functions/webhooks/capture.ts');
  const hook = await addWebhook(db, { url: `${rx.url}/schedules`, events: ['schedule.failed', 'schedule.disabled'] });
  const e = { type: 'schedule.failed' as const, origin: ['schedule', 'nightly', '2026-01-01T03:00:00Z'], ts: new Date('2026-01-01T03:00:05Z'), projectId: project, data: { schedule: 'nightly', error: 'exit 1 in /home/alice/run.sh', scheduledFor: '2026-01-01T03:00:00Z' } };
  const id = await emitEvent(db, e);
  assert.is(await emitEvent(db, e), id);
  assert.is(await emitEvent(db, { ...e, projectId: 'no-such-project' }), null);
  await worker(db).tick();
  await emitEvent(db, e);
  await worker(db).tick();
  assert.is(rx.requests.length, 1);
  const body = JSON.parse(rx.requests[0].body);
  assert.equal([body.id, body.type, body.ts, body.project.id], [id, 'schedule.failed', '2026-01-01T03:00:05.000Z', project]);
  assert.equal(body.data, { schedule: 'nightly', error: 'exit 1 in [path]', scheduledFor: '2026-01-01T03:00:00.000Z' });
  assert.is((await deliveries(db, hook.id)).length, 1);
  try {
    await emitEvent(db, { ...e, type: 'slot.dispatched' as never });
    assert.unreachable('a runner type is not emitted by the server');
  } catch (err) {
    assert.match(String(err), /not a server event/);
  }
});


/** Polls `check` until it answers true (every 20 ms, at most `ms`). */
async function until(what: string, check: () => Promise<boolean> | boolean, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('claimed ahead: stop() hands back what was never sent (attempt taken back, no attempt row, lease gone)', async () => {
  const held: Array<() => void> = [];
  rx.handle((_req, res) => held.push(() => res.end('late')));
  const hook = await addWebhook(db, { url: `${rx.url}/ahead-stop`, events: ['orchestrator.started'] });
  for (let i = 0; i < 3; i++) await emit(db, 'orchestrator.started', project, `ahead-stop-${i}`);
  const w = worker(db, { concurrency: 1 });
  await w.start();
  // One POST held at the receiver, one more claimed ahead of it, the third not claimed.
  await until('one POST and one claimed ahead', async () => rx.requests.length === 1 && (await deliveries(db, hook.id)).filter((d) => d.attempts === 1).length === 2);
  const sent = rx.requests[0].headers['x-svc-delivery'];
  const stopping = w.stop(50);
  await stopping;
  held.forEach((f) => f());
  assert.is(rx.requests.length, 1, 'nothing claimed ahead was sent while stopping');
  const rows = await deliveries(db, hook.id);
  const ahead = rows.filter((d) => d.id !== sent && d.attempts === 0);
  assert.is(ahead.length, 2, 'the delivery claimed ahead counts no attempt, like the one never claimed');
  for (const d of ahead) assert.equal(await attempts(db, d.id), [], 'and has no attempt row');
  const leased = await db.query<{ n: number }>(sql`select count(*)::int as n from outbound_deliveries where webhook_id = ${hook.id} and id <> ${sent} and lease_owner is not null`);
  assert.is(leased[0].n, 0, 'no lease is left on them');
  const [first] = await attempts(db, sent as string);
  assert.equal([first.outcome, first.error], ['failure', 'aborted'], 'the POST in flight was aborted and counted');
  // The next worker takes all three at once.
  rx.handle((_req, res) => res.end('ok'));
  await worker(db).tick();
  assert.ok((await deliveries(db, hook.id)).every((d) => d.status === 'delivered'));
});

test('claimed ahead: one that waited past half the lease left after an attempt is handed back and claimed again', async () => {
  const clock = fakeClock();
  // lease 5 s, attempt 2 s: a delivery claimed ahead may wait 1.5 s for its slot.
  const w = worker(db, { clock, concurrency: 1 });
  const hook = await addWebhook(db, { url: `${rx.url}/ahead-stale`, events: ['person.needed'] });
  for (let i = 0; i < 2; i++) await emit(db, 'person.needed', project, `ahead-stale-${i}`);
  let advanced = 0;
  rx.handle((_req, res) => {
    if (!advanced) advanced = clock.advance(1600); // the first POST takes 1.6 s of the clock
    res.end('ok');
  });
  await w.tick();
  const rows = await deliveries(db, hook.id);
  assert.equal(rows.map((d) => [d.status, d.attempts]), [['delivered', 1], ['delivered', 1]], 'each sent once, one attempt each');
  const second = rx.requests[1].headers['x-svc-delivery'] as string;
  const started = await db.query<{ delivery_id: string; started_at: Date }>(sql`select delivery_id, started_at from outbound_attempts where delivery_id = ${second}`);
  assert.is(started.length, 1);
  assert.ok(new Date(started[0].started_at).getTime() >= advanced, 'its attempt started at the second claim, not the first');
});
test('claimed ahead: a delivery taken ahead while the circuit was closed is handed back, not sent, once it opens', async () => {
  const clock = fakeClock();
  const w = worker(db, { clock, concurrency: 1 });
  const hook = await addWebhook(db, { url: `${rx.url}/ahead-circuit`, events: ['orchestrator.stopped'] });
  for (let i = 0; i < 11; i++) await emit(db, 'orchestrator.stopped', project, `ahead-circuit-${i}`);
  const counted = async () => (await deliveries(db, hook.id)).filter((d) => d.attempts > 0).length;
  const mine = () => rx.requests.filter((r) => r.url === '/ahead-circuit');
  rx.handle((_req, res, received) => {
    if (received.url !== '/ahead-circuit') return res.end('ok'); // other tests' webhooks that take these events
    const fail = () => ((res.statusCode = 503), res.end());
    // The 10th failure opens the circuit; it is answered only once the 11th was claimed ahead.
    if (mine().indexOf(received) !== 9) return fail();
    until('the 11th claimed ahead', async () => (await counted()) === 11).then(fail, fail);
  });
  await w.tick();
  assert.is(mine().length, 10, 'the 11th is not sent after the circuit opened');
  assert.is((await circuitOf(hook.id)).circuit_state, 'open');
  const rows = await deliveries(db, hook.id);
  const waiting = rows.filter((d) => d.attempts === 0);
  assert.is(waiting.length, 1, 'it counts no attempt');
  assert.equal(await attempts(db, waiting[0].id), [], 'and has no attempt row');
});

test.run();
