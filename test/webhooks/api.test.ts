// The webhook admin API against the real server (dist/server.mjs) with a real receiver on loopback:
// admin only, audited, 409 without the key, secret shown once, send test, rotate, edit, delivery log,
// redeliver, resume, the allowlist, runner events delivered end to end, WEBHOOKS_WORKER_ENABLED=false.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { onlyOn, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import { receiver, sleep } from './_harness.ts';
import type { Receiver } from './_harness.ts';

const KEY_ENV = { APP_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
let server: RunningServer;
let rx: Receiver;
/* eslint-disable @typescript-eslint/no-explicit-any */
const call = async (path: string, init: RequestInit & { json?: unknown } = {}, s = server) => {
  const res = await s.api(path, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
const audit = async (action: string) => (await call(`/api/audit?action=${action}`)).body.records as any[];

test.before(async () => {
  server = await startServer({ admin: true, env: KEY_ENV });
  rx = await receiver();
  assert.is((await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } })).status, 200);
});
test.after(async () => {
  await rx?.close();
  await server?.cleanup();
});
test.before.each(() => {
  rx.requests.length = 0;
  rx.handle((_req, res) => res.end('thanks'));
});

let hook: { id: string; secret: string };

test('create: 201 with the secret once; never again in reads or the audit log', async () => {
  const made = await call('/api/webhooks', { method: 'POST', json: { url: `${rx.url}/in`, events: ['pr.merged', 'slot.checkpoint', 'pr.merged'] } });
  assert.is(made.status, 201);
  assert.match(made.body.secret, /^[A-Za-z0-9_-]{43}$/);
  assert.equal([made.body.url, made.body.events, made.body.projects, made.body.circuit, made.body.circuitLabel], [`${rx.url}/in`, ['slot.checkpoint', 'pr.merged'], [], 'closed', 'Delivering']);
  hook = { id: made.body.id, secret: made.body.secret };
  const list = await call('/api/webhooks');
  const one = await call(`/api/webhooks/${hook.id}`);
  assert.is(list.body.webhooks.length, 1);
  assert.equal(one.body, list.body.webhooks[0]);
  assert.is(one.body.secretProblem, null);
  const everything = JSON.stringify([list.body, one.body, await call('/api/audit?limit=200')]);
  assert.not.ok(everything.includes(hook.secret), 'the secret is never shown again');
  const [rec] = await audit('webhook.create');
  assert.equal([rec.targetId, rec.diff.after.events], [hook.id, ['slot.checkpoint', 'pr.merged']]);
});

test('bad input is refused by field: URL scheme, credentials, fragment, unknown or test-only events, unknown project', async () => {
  const bad = async (json: unknown) => (await call('/api/webhooks', { method: 'POST', json })).body.error;
  for (const url of ['ftp://x.example/', 'https://user:pw@x.example/', 'https://x.example/#frag', 'not a url', `https://${'a'.repeat(2100)}.example/`]) {
    const e = await bad({ url, events: ['pr.merged'] });
    assert.equal([e.code, Object.keys(e.fields)], ['invalid_body', ['url']], url.slice(0, 40));
  }
  assert.ok((await bad({ url: 'https://x.example/', events: ['llm.request'] })).fields['events.0']);
  assert.ok((await bad({ url: 'https://x.example/', events: ['webhook.test'] })).fields['events.0']);
  assert.ok((await bad({ url: 'https://x.example/', events: [] })).fields.events);
  assert.ok((await bad({ url: 'https://x.example/', events: ['pr.merged'], projects: ['nope'] })).fields['projects.0']);
  assert.ok((await bad({ url: 'https://x.example/', events: ['pr.merged'], secret: 'mine' })).fields.secret, 'unknown fields named');
  assert.is((await call('/api/webhooks')).body.webhooks.length, 1, 'nothing was created');
});

test('a URL the guard refuses whatever DNS says → 400 naming url with the reason, at create and edit; nothing stored', async () => {
  const bad = async (url: string) => (await call('/api/webhooks', { method: 'POST', json: { url, events: ['pr.merged'] } })).body;
  const cases: [string, RegExp][] = [
    ['https://localhost/in', /loopback name/],
    ['https://api.LOCALHOST./in', /loopback name/],
    ['https://10.1.2.3/in', /10\.1\.2\.3 is a refused address \(private\)/],
    ['https://169.254.169.254/latest', /refused address \(linkLocal\)/],
    ['https://[::1]/in', /refused address \(loopback\)/],
    ['http://203.0.113.9/in', /refused address|http:\/\//],
  ];
  for (const [url, why] of cases) {
    const body = await bad(url);
    assert.is(body.error?.code, 'invalid_body', url);
    assert.equal(Object.keys(body.error.fields), ['url'], url);
    assert.match(body.error.fields.url, why, url);
  }
  // http:// to a name: refused at once when no allowlisted CIDR could cover its addresses.
  assert.is((await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '' } })).status, 200);
  const plain = await bad('http://hooks.example.com/in');
  assert.match(plain.error?.fields?.url ?? '', /http:\/\/ is sent only to hosts on the address allowlist/);
  assert.is((await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } })).status, 200);
  assert.is((await call('/api/webhooks')).body.webhooks.length, 1, 'nothing was created');
  // The allowlist makes them acceptable (127.0.0.1/32 is listed), and https to a public name is fine.
  const listed = await call('/api/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/in', events: ['pr.merged'] } });
  assert.is(listed.status, 201);
  const edit = await call(`/api/webhooks/${listed.body.id}`, { method: 'PATCH', json: { url: 'https://10.0.0.1/in' } });
  assert.is(edit.status, 400);
  assert.ok(edit.body.error.fields.url);
  assert.is((await call(`/api/webhooks/${listed.body.id}`)).body.url, 'http://127.0.0.1:9/in', 'unchanged');
  assert.is((await call(`/api/webhooks/${listed.body.id}`, { method: 'DELETE' })).status, 204);
});

test('admin only: anonymous 401, a non-admin 403', async () => {
  const anon = await fetch(`${server.url}/api/webhooks`);
  assert.is(anon.status, 401);
  const made = await call('/api/users', { method: 'POST', json: { email: 'viewer@example.test', name: 'Viewer' } });
  const link = /token=([\w-]+)/.exec(made.body.passwordSetUrl)![1];
  await fetch(`${server.url}/api/password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: link, password: 'a long enough password' }) });
  const signIn = await fetch(`${server.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'viewer@example.test', password: 'a long enough password' }) });
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  for (const [method, path] of [['GET', '/api/webhooks'], ['GET', '/api/webhooks/allowlist'], ['GET', `/api/webhooks/${hook.id}/deliveries`]]) {
    const res = await fetch(`${server.url}${path}`, { method, headers: { cookie } });
    assert.is(res.status, 403, `${method} ${path}`);
  }
});

test('send test: 202, a webhook.test envelope with id test_<delivery id> and project null, signed, in the log', async () => {
  const sent = await call(`/api/webhooks/${hook.id}/test`, { method: 'POST' });
  assert.is(sent.status, 202);
  assert.is(sent.body.eventId, `test_${sent.body.deliveryId}`);
  const r = await until('the test delivery', async () => rx.requests[0]);
  const envelope = JSON.parse(r.body);
  assert.equal([envelope.id, envelope.type, envelope.project, Object.keys(envelope)], [`test_${sent.body.deliveryId}`, 'webhook.test', null, ['id', 'type', 'ts', 'project', 'data']]);
  assert.match(envelope.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal([r.headers['x-svc-event'], r.headers['x-svc-delivery']], ['webhook.test', sent.body.deliveryId]);
  assert.ok(verifyWebhook(r.body, r.headers['x-svc-signature'] as string, hook.secret).ok);
  assert.is(r.headers['x-agent-fleet-signature'], r.headers['x-svc-signature']);
  const log = await until('delivered in the log', async () => {
    const d = (await call(`/api/webhooks/${hook.id}/deliveries`)).body.deliveries[0];
    return d?.status === 'delivered' && d;
  });
  assert.equal([log.id, log.event, log.attempts, log.nextAttemptAt, log.responseCode, log.responseBody], [sent.body.deliveryId, 'webhook.test', 1, null, 200, 'thanks']);
  assert.ok((await audit('webhook.test')).some((a) => a.targetId === hook.id && a.diff.deliveryId === sent.body.deliveryId));
});

test('rotate: a new secret once; the next delivery is signed with it and not with the old one', async () => {
  const rotated = await call(`/api/webhooks/${hook.id}/rotate`, { method: 'POST' });
  assert.is(rotated.status, 200);
  assert.is.not(rotated.body.secret, hook.secret);
  await call(`/api/webhooks/${hook.id}/test`, { method: 'POST' });
  const r = await until('a delivery after rotation', async () => rx.requests[0]);
  const sig = r.headers['x-svc-signature'] as string;
  assert.ok(verifyWebhook(r.body, sig, rotated.body.secret).ok);
  assert.not.ok(verifyWebhook(r.body, sig, hook.secret).ok);
  hook.secret = rotated.body.secret;
  const [rec] = await audit('webhook.rotate');
  assert.is(rec.targetId, hook.id);
  assert.not.ok(JSON.stringify(rec).includes(rotated.body.secret));
});

test('delivery log of a failure: code, body cut to 2 KB, attempts, next attempt; one delivery shows its attempts', async () => {
  rx.handle((_req, res) => res.writeHead(500).end('e'.repeat(5000)));
  const sent = await call(`/api/webhooks/${hook.id}/test`, { method: 'POST' });
  const d = await until('a failed attempt', async () => {
    const x = (await call(`/api/webhooks/${hook.id}/deliveries?status=pending`)).body.deliveries.find((y: any) => y.id === sent.body.deliveryId);
    return x?.attempts === 1 && x.responseCode && x;
  });
  assert.equal([d.status, d.responseCode, d.responseBody.length, d.lastError], ['pending', 500, 2048, 'http_status']);
  const wait = new Date(d.nextAttemptAt).getTime() - Date.now();
  assert.ok(wait > 20_000 && wait <= 36_000, `next attempt in ${wait} ms`);
  const one = await call(`/api/webhooks/${hook.id}/deliveries/${d.id}`);
  assert.equal(one.body.attemptLog.map((a: any) => [a.attempt, a.outcome, a.responseCode, a.address]), [[1, 'failure', 500, '127.0.0.1']]);
  assert.is(one.body.envelope.id, `test_${d.id}`);
  const redeliver = await call(`/api/webhooks/${hook.id}/deliveries/${d.id}/redeliver`, { method: 'POST' });
  assert.equal([redeliver.status, redeliver.body.error.code], [409, 'not_failed']);
  assert.is((await call(`/api/webhooks/${hook.id}/deliveries/00000000-0000-0000-0000-000000000000/redeliver`, { method: 'POST' })).status, 404);
  assert.is((await call(`/api/webhooks/${hook.id}/deliveries?status=nope`)).status, 400);
  assert.is((await call(`/api/webhooks/${hook.id}/deliveries?limit=500`)).status, 400);
});

test('edit URL, events and projects: audited with before and after', async () => {
  const project = await call('/api/projects', { method: 'POST', json: { name: 'Hooks', repo: 'acme/hooks' } });
  const res = await call(`/api/webhooks/${hook.id}`, { method: 'PATCH', json: { url: `${rx.url}/edited`, events: ['pr.opened'], projects: [project.body.id] } });
  assert.is(res.status, 200);
  assert.equal([res.body.url, res.body.events, res.body.projects], [`${rx.url}/edited`, ['pr.opened'], [project.body.id]]);
  const [rec] = await audit('webhook.update');
  assert.equal([rec.diff.before.url, rec.diff.after.url, rec.diff.after.events], [`${rx.url}/in`, `${rx.url}/edited`, ['pr.opened']]);
  assert.is((await call(`/api/webhooks/${hook.id}`, { method: 'PATCH', json: { url: 'gopher://x' } })).status, 400);
  assert.is((await call('/api/webhooks/00000000-0000-0000-0000-000000000000', { method: 'PATCH', json: {} })).status, 404);
});

test('resume deliveries: 200, closed, audited; the catalogue lists every type', async () => {
  const res = await call(`/api/webhooks/${hook.id}/resume`, { method: 'POST' });
  assert.equal([res.status, res.body.circuit, res.body.consecutiveFailures], [200, 'closed', 0]);
  assert.is((await audit('webhook.resume'))[0].targetId, hook.id);
  const cat = await call('/api/webhooks/catalogue');
  assert.is(cat.body.events.length, 16);
  assert.equal(cat.body.events.find((e: any) => e.type === 'slot.checkpoint').data, ['checkpoint', 'summary', 'pr']);
});

test('allowlist: validated per line (400 names the lines), stored normalized, audited with before and after', async () => {
  const bad = await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: 'ok.example\n*.evil.example\n10.0.0.0/33' } });
  assert.equal([bad.status, Object.keys(bad.body.error.fields)], [400, ['allowlist.line2', 'allowlist.line3']]);
  const good = await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32\nReceiver.Example.\n\n[::1]' } });
  assert.equal([good.status, good.body.entries, good.body.allowlist], [200, ['127.0.0.1/32', 'receiver.example', '::1'], '127.0.0.1/32\nreceiver.example\n::1']);
  assert.equal((await call('/api/webhooks/allowlist')).body.entries, good.body.entries);
  const [rec] = await audit('webhook.allowlist.update');
  assert.equal([rec.diff.before, rec.diff.after], [['127.0.0.1/32'], ['127.0.0.1/32', 'receiver.example', '::1']]);
});

test('runner events through the hub: only catalogue events of its project are delivered, once, even when re-sent', async () => {
  const { runnerId, token } = await pairRunner(server.api, server.url, 'hooks-runner');
  const project = await call('/api/projects', { method: 'POST', json: { name: 'Fleet', repo: 'acme/fleet', runnerId, rootPath: '/srv/fleet' } });
  const made = await call('/api/webhooks', { method: 'POST', json: { url: `${rx.url}/fleet`, events: ['slot.checkpoint', 'pane.prompt'] } });
  const ts = new Date().toISOString();
  const events = [
    { id: 'e1', source: 'fleet', kind: 'slot.checkpoint', ts, payload: { project: project.body.id, slot: 'w1', issue: 12, cwd: '/srv/fleet/.wt-fleet-w1', data: { checkpoint: 'pr_open', summary: 'PR is up for /srv/fleet/src/a.ts', pr: { number: 5, url: 'https://github.com/acme/fleet/pull/5' } } } },
    { id: 'e2', source: 'otlp', kind: 'llm.request', ts, payload: { project: project.body.id, model: 'opus', prompt: 'secret prompt' } },
    { id: 'e3', source: 'pane', kind: 'pane.text', ts, payload: { project: project.body.id, text: 'whole pane' } },
    { id: 'e4', source: 'fleet', kind: 'pane.prompt', ts, payload: { project: 'another-project', data: { session: 's' } } },
  ];
  const c = connect(server.url, token);
  await c.next('welcome');
  c.send({ type: 'events', events });
  await c.next('ack');
  const r = await until('the fleet delivery', async () => rx.requests.find((x) => x.url === '/fleet'));
  c.send({ type: 'events', events }); // no ack seen, say: the runner sends the batch again
  await c.next('ack');
  await sleep(1500);
  c.ws.close();
  const fleet = rx.requests.filter((x) => x.url === '/fleet');
  assert.is(fleet.length, 1, 'one delivery, one envelope');
  const envelope = JSON.parse(r.body);
  assert.equal(envelope.project, { id: project.body.id, repo: 'acme/fleet' });
  assert.equal([envelope.type, envelope.slot, envelope.issue], ['slot.checkpoint', 'w1', 12]);
  assert.equal(envelope.data, { checkpoint: 'pr_open', summary: 'PR is up for [path]', pr: { number: 5, url: 'https://github.com/acme/fleet/pull/5' } });
  assert.not.ok(r.body.includes('/srv/fleet'), 'no file system path');
  assert.ok(verifyWebhook(r.body, r.headers['x-svc-signature'] as string, made.body.secret).ok);
});

test('delete: 204, gone with its log, audited', async () => {
  const res = await server.api(`/api/webhooks/${hook.id}`, { method: 'DELETE' });
  assert.is(res.status, 204);
  assert.is((await call(`/api/webhooks/${hook.id}`)).status, 404);
  assert.is((await call(`/api/webhooks/${hook.id}/deliveries`)).status, 404);
  assert.is((await audit('webhook.delete'))[0].targetId, hook.id);
});

// Without a key only with DATABASE_URL: the embedded database generates one (test/settings/encryption-key.test.ts).
onlyOn('postgres', test, 1, () => {
  test('without APP_ENCRYPTION_KEY: create, rotate and send test answer 409 encryption_key_missing; nothing stored', async () => {
    const bare = await startServer({ admin: true });
    try {
      const res = await call('/api/webhooks', { method: 'POST', json: { url: 'https://hooks.example/in', events: ['pr.merged'] } }, bare);
      assert.equal([res.status, res.body.error.code], [409, 'encryption_key_missing']);
      assert.equal((await call('/api/webhooks', {}, bare)).body.webhooks, []);
      assert.equal((await call('/api/audit?action=webhook.create', {}, bare)).body.records, []);
      assert.is((await call('/api/webhooks/00000000-0000-0000-0000-000000000000/rotate', { method: 'POST' }, bare)).body.error.code, 'encryption_key_missing');
      assert.is((await call('/api/webhooks/00000000-0000-0000-0000-000000000000/test', { method: 'POST' }, bare)).body.error.code, 'encryption_key_missing');
    } finally {
      await bare.cleanup();
    }
  });
});

test('restarted with another key: one WARN with the count, secretProblem on the webhooks, Send test → 409 secret_unavailable with nothing queued; rotate makes it work again', async () => {
  const { env: dbEnv, cleanup } = await serverDbEnv();
  const servers: RunningServer[] = [];
  try {
    const a = await startServer({ dbEnv, admin: true, env: KEY_ENV });
    servers.push(a);
    const ids: string[] = [];
    for (const path of ['a', 'b']) ids.push((await call('/api/webhooks', { method: 'POST', json: { url: `https://hooks.example/${path}`, events: ['pr.merged'] } }, a)).body.id);
    assert.is(await a.stop(), 0);
    assert.not.match(a.output(), /cannot be decrypted/);

    const b = await startServer({ dbEnv, env: { APP_ENCRYPTION_KEY: randomBytes(32).toString('base64') } });
    servers.push(b);
    const asAdmin = (path: string, init: RequestInit & { json?: unknown } = {}) => call(path, { ...init, headers: { authorization: `Bearer ${a.admin.token}` } }, b);
    const warned = b.output().split('\n').filter((l) => /cannot be decrypted with the current encryption key/.test(l));
    assert.is(warned.length, 1, 'one line for the one kind affected');
    assert.match(warned[0], /WARN 2 of 2 stored webhook secrets cannot be decrypted .*rotate them.* kind="webhook secrets" count=2/);

    const one = await asAdmin(`/api/webhooks/${ids[0]}`);
    assert.match(one.body.secretProblem, /different APP_ENCRYPTION_KEY/);
    const refused = await asAdmin(`/api/webhooks/${ids[0]}/test`, { method: 'POST' });
    assert.is(refused.status, 409);
    assert.equal(refused.body.error, { code: 'secret_unavailable', message: "this webhook's secret was encrypted with another APP_ENCRYPTION_KEY: rotate it first" });
    assert.equal((await asAdmin(`/api/webhooks/${ids[0]}/deliveries`)).body.deliveries, [], 'nothing queued');
    assert.equal((await asAdmin('/api/audit?action=webhook.test')).body.records, [], 'nothing audited');

    const rotated = await asAdmin(`/api/webhooks/${ids[0]}/rotate`, { method: 'POST' });
    assert.is(rotated.status, 200);
    assert.is(rotated.body.secretProblem, null);
    const sent = await asAdmin(`/api/webhooks/${ids[0]}/test`, { method: 'POST' });
    assert.is(sent.status, 202, 'after rotating, Send test queues again');
    assert.is((await asAdmin(`/api/webhooks/${ids[0]}/deliveries`)).body.deliveries[0].id, sent.body.deliveryId);
    assert.match((await asAdmin(`/api/webhooks/${ids[1]}`)).body.secretProblem, /different APP_ENCRYPTION_KEY/, 'the other one still needs rotating');
  } finally {
    for (const s of servers) await s.cleanup();
    await cleanup();
  }
});

test('validation texts are plain and said once: no events → "Choose at least one event", missing, wrong type, too long', async () => {
  const fieldsOf = async (json: unknown) => {
    const res = await call('/api/webhooks', { method: 'POST', json });
    assert.is(res.status, 400);
    assert.not.match(JSON.stringify(res.body), /Too small|Too big|Invalid input|expected (array|string)/, 'no raw validator text');
    return res.body.error;
  };
  const none = await fieldsOf({ url: 'https://x.example/', events: [] });
  assert.equal([none.message, none.fields], ['invalid fields: events', { events: 'Choose at least one event' }]);
  assert.equal((await fieldsOf({ url: 'https://x.example/' })).fields, { events: 'is required' });
  assert.equal((await fieldsOf({ url: 42, events: ['pr.merged'] })).fields, { url: 'must be text' });
  const many = Array.from({ length: 501 }, (_, i) => `p${i}`);
  assert.equal((await fieldsOf({ url: 'https://x.example/', events: ['pr.merged'], projects: many })).fields, { projects: 'must have at most 500 items' });
});

test('WEBHOOKS_WORKER_ENABLED=false: this process neither dispatches nor delivers', async () => {
  const off = await startServer({ admin: true, env: { ...KEY_ENV, WEBHOOKS_WORKER_ENABLED: 'false' } });
  try {
    assert.match(off.output(), /webhook dispatcher and worker disabled on this instance/);
    await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } }, off);
    const made = await call('/api/webhooks', { method: 'POST', json: { url: `${rx.url}/off`, events: ['pr.merged'] } }, off);
    const sent = await call(`/api/webhooks/${made.body.id}/test`, { method: 'POST' }, off);
    assert.is(sent.status, 202);
    await sleep(2500);
    assert.is(rx.requests.length, 0);
    const [d] = (await call(`/api/webhooks/${made.body.id}/deliveries`, {}, off)).body.deliveries;
    assert.equal([d.status, d.attempts], ['pending', 0]);
  } finally {
    await off.cleanup();
  }
});

test.run();
