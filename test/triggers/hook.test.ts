// POST /hooks/<publicId> against the real server (spec: Errors → Inbound trigger responses; Inbound
// trigger signature; Limits "Trigger …"): every row of the responses table, each signed header missing,
// duplicated, empty or garbage, the timestamp window at its edges, bodies that are not JSON objects,
// 10,000-deep nesting, invalid UTF-8, a slow client, and 100 concurrent POSTs of one delivery id.
import { gzipSync } from 'node:zlib';
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signTrigger } from '../../docs/examples/sign-trigger.ts';
import { LEGACY_PREFIX } from '../../functions/webhooks/signature.ts';
import { createTrigger, deliveries, nowSeconds, post, rawPost, setup, skillTrigger } from './_harness.ts';
import type { Made, Setup } from './_harness.ts';

let s: Setup;
const BODY_TIMEOUT_S = 2;

test.before(async () => {
  s = await setup({ env: { TRIGGER_BODY_TIMEOUT_SECONDS: String(BODY_TIMEOUT_S) } });
});
test.after(async () => s?.server.cleanup());

const make = (over: Record<string, unknown> = {}) => createTrigger(s.server, s.projectId, skillTrigger(over));
const log = (t: Made) => deliveries(s.server, s.projectId, t.id);

test('202 {deliveryId, status}: the row is committed before the answer', async () => {
  const t = await make();
  const res = await post(t.url, t.secret, { ref: 'main' }, { delivery: 'first-1' });
  assert.is(res.status, 202);
  assert.equal(res.body, { deliveryId: 'first-1', status: 'accepted' });
  const rows = await log(t);
  assert.equal(rows.map((d) => d.deliveryId), ['first-1']);
  assert.ok(['accepted', 'firing', 'fired', 'failed', 'skipped'].includes(rows[0].status));
  assert.equal(rows[0].args, ['--ref', 'main']);
});

test('404 with an empty body: unknown publicId, malformed publicId, disabled trigger, deleted trigger — all alike', async () => {
  const t = await make();
  const disabled = await make();
  await s.server.api(`/api/projects/${s.projectId}/triggers/${disabled.id}/disable`, { method: 'POST' });
  const origin = s.server.url;
  const cases: [string, string, string][] = [
    ['unknown', `${origin}/hooks/${'A'.repeat(24)}`, t.secret],
    ['too short', `${origin}/hooks/${t.publicId.slice(1)}`, t.secret],
    ['too long', `${origin}/hooks/${t.publicId}x`, t.secret],
    ['bad characters', `${origin}/hooks/${'%25'.repeat(8)}`, t.secret],
    ['a sub-path', `${origin}/hooks/${t.publicId}/x`, t.secret],
    ['disabled', disabled.url, disabled.secret],
  ];
  for (const [what, url, secret] of cases) {
    const res = await post(url, secret, { ref: 'main' });
    assert.is(res.status, 404, what);
    assert.is(res.text, '', `${what}: empty body`);
    assert.is(res.headers.get('content-type'), null, `${what}: no content type`);
  }
  assert.equal(await log(disabled), [], 'nothing recorded for the disabled trigger');
});

test('404 timing does not tell which publicIds exist: unknown, malformed and disabled take the same time (medians of interleaved samples)', async () => {
  const disabled = await make();
  await s.server.api(`/api/projects/${s.projectId}/triggers/${disabled.id}/disable`, { method: 'POST' });
  const origin = s.server.url;
  const targets: Record<string, string> = { unknown: `${origin}/hooks/${'B'.repeat(24)}`, malformed: `${origin}/hooks/x`, disabled: disabled.url };
  const times: Record<string, number[]> = { unknown: [], malformed: [], disabled: [] };
  const once = async (url: string) => {
    const started = process.hrtime.bigint();
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    await res.arrayBuffer();
    assert.is(res.status, 404);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  for (const url of Object.values(targets)) await once(url); // warm
  // Interleaved, in a rotating order, so load on the machine falls on every kind alike.
  const kinds = Object.keys(targets);
  for (let i = 0; i < 150; i++) {
    for (let k = 0; k < kinds.length; k++) {
      const kind = kinds[(i + k) % kinds.length];
      times[kind].push(await once(targets[kind]));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const medians = Object.fromEntries(kinds.map((k) => [k, median(times[k])]));
  const spread = Math.max(...Object.values(medians)) / Math.min(...Object.values(medians));
  // The same query for each; what differs is one returned row (~1 µs). 1.5× is far above that noise
  // and far below a second query or a decryption, which is what a leak would look like.
  assert.ok(spread < 1.5, `medians differ by ${spread.toFixed(2)}×: ${JSON.stringify(medians)}`);
});

test('415: Content-Encoding present (even a valid gzip of JSON), a non-JSON or missing content type', async () => {
  const t = await make();
  const json = JSON.stringify({ ref: 'main' });
  const gz = gzipSync(json);
  const zipped = await post(t.url, t.secret, gz, { headers: { 'content-encoding': 'gzip' } });
  assert.is(zipped.status, 415);
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/json-patch+json', null]) {
    const res = await post(t.url, t.secret, json, { contentType });
    assert.is(res.status, 415, String(contentType));
  }
  assert.is((await post(t.url, t.secret, json, { contentType: 'application/json; charset=utf-8' })).status, 202, 'parameters are fine');
  assert.is((await log(t)).length, 1);
});

test('413: a declared body over 256 KB is refused unread', async () => {
  const t = await make();
  const big = JSON.stringify({ ref: 'x'.repeat(256 * 1024) });
  const res = await post(t.url, t.secret, big);
  assert.is(res.status, 413);
  assert.is((await post(t.url, t.secret, JSON.stringify({ ref: 'main', pad: 'x'.repeat(256 * 1024 - 40) }))).status, 202, 'just under 256 KB passes');
});

test('413 as soon as a streamed (chunked) body crosses 256 KB, while the client is still sending', async () => {
  const t = await make();
  const u = new URL(t.url);
  const headers = { 'content-type': 'application/json', ...signTrigger(t.secret, 'never mind') };
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers }, (res) => resolve(res.statusCode!));
    req.on('error', reject);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    for (let i = 0; i < 5; i++) req.write(chunk); // 320 KB written, the request never ended
  });
  assert.is(status, 413);
  assert.equal(await log(t), []);
});

test('408 and a closed connection when the body trickles in slower than TRIGGER_BODY_TIMEOUT_SECONDS (256 KB at one byte a second)', async () => {
  const t = await make();
  const started = Date.now();
  const res = await rawPost(t.url, ['content-type: application/json', ...Object.entries(signTrigger(t.secret, '{}')).map(([k, v]) => `${k}: ${v}`)], Array.from({ length: 600 }, () => ' '), 1000, 256 * 1024);
  assert.is(res.status, 408);
  const took = Date.now() - started;
  assert.ok(took >= BODY_TIMEOUT_S * 1000 - 100 && took < BODY_TIMEOUT_S * 1000 + 8000, `closed after ${took} ms`);
  assert.equal(await log(t), []);
});

test('401 with an empty body: wrong secret, another trigger’s signature, a tampered body', async () => {
  const t = await make();
  const other = await make();
  const wrong = await post(t.url, t.secret, { ref: 'main' }, { secret: 'not-the-secret' });
  assert.equal([wrong.status, wrong.text], [401, '']);
  const others = await post(t.url, t.secret, { ref: 'main' }, { secret: other.secret });
  assert.equal([others.status, others.text], [401, ''], "another trigger's signature");
  const headers = { 'content-type': 'application/json', ...signTrigger(t.secret, '{"ref":"main"}') };
  const tampered = await fetch(t.url, { method: 'POST', headers, body: '{"ref":"evil"}' });
  assert.equal([tampered.status, await tampered.text()], [401, '']);
  assert.equal(await log(t), [], 'nothing recorded');
});

for (const name of ['Timestamp', 'Delivery', 'Signature']) {
  const header = `X-Svc-${name}`;
  test(`401: ${header} missing`, async () => {
    const t = await make();
    assert.is((await post(t.url, t.secret, { ref: 'a' }, { headers: { [header]: null } })).status, 401);
  });
  test(`401: ${header} empty`, async () => {
    const t = await make();
    assert.is((await post(t.url, t.secret, { ref: 'a' }, { headers: { [header]: '' } })).status, 401);
  });
  test(`401: ${header} garbage`, async () => {
    const t = await make();
    const garbage = { Timestamp: 'yesterday', Delivery: 'has spaces in it', Signature: 'sha256=not-hex' }[name]!;
    assert.is((await post(t.url, t.secret, { ref: 'a' }, { headers: { [header]: garbage } })).status, 401);
  });
  test(`401: ${header} sent twice (two header lines, same value)`, async () => {
    const t = await make();
    const body = JSON.stringify({ ref: 'a' });
    const signed = signTrigger(t.secret, body);
    const lines = ['content-type: application/json', ...Object.entries(signed).map(([k, v]) => `${k}: ${v}`), `${header}: ${signed[header]}`];
    const res = await rawPost(t.url, lines, [body]);
    assert.is(res.status, 401);
    assert.equal(await log(t), []);
  });
}

test('legacy header names (the webhooks’ former prefix) are accepted', async () => {
  const t = await make();
  const body = JSON.stringify({ ref: 'main' });
  const legacy = Object.fromEntries(Object.entries(signTrigger(t.secret, body)).map(([k, v]) => [k.replace('X-Svc-', LEGACY_PREFIX), v]));
  const res = await fetch(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...legacy }, body });
  assert.is(res.status, 202);
});

/** Sign at `offset` seconds from now; retried until the request started and ended within one second. */
async function atOffset(t: Made, offset: number) {
  for (;;) {
    const before = nowSeconds();
    const res = await post(t.url, t.secret, { ref: 'a' }, { timestamp: before + offset });
    if (nowSeconds() === before) return res.status;
  }
}

test('timestamp −300 s → 202', async () => assert.is(await atOffset(await make(), -300), 202));
test('timestamp +300 s → 202', async () => assert.is(await atOffset(await make(), 300), 202));
test('timestamp −301 s → 401', async () => assert.is(await atOffset(await make(), -301), 401));
test('timestamp +301 s → 401', async () => assert.is(await atOffset(await make(), 301), 401));

test('timestamps that are not integers, or huge → 401', async () => {
  const t = await make();
  const now = nowSeconds();
  for (const ts of [`${now}.0`, `${now}.5`, `-${now}`, `+${now}`, `${now}e0`, '9'.repeat(13), '999999999999', '1e10', `0x${now.toString(16)}`, `${now} `]) {
    const body = JSON.stringify({ ref: 'a' });
    // Signed with the very text sent, so only the timestamp's shape is wrong.
    const signed = signTrigger(t.secret, body, { timestamp: ts as unknown as number });
    const res = await fetch(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...signed }, body });
    assert.is(res.status, 401, ts);
  }
  assert.equal(await log(t), []);
});

test('delivery ids: 64 characters pass, 65 → 401', async () => {
  const t = await make();
  assert.is((await post(t.url, t.secret, { ref: 'a' }, { delivery: 'd'.repeat(64) })).status, 202);
  assert.is((await post(t.url, t.secret, { ref: 'a' }, { delivery: 'e'.repeat(65) })).status, 401);
});

test('409 replayed: the same delivery id again, even with another body and timestamp', async () => {
  const t = await make();
  assert.is((await post(t.url, t.secret, { ref: 'a' }, { delivery: 'once' })).status, 202);
  const again = await post(t.url, t.secret, { ref: 'b' }, { delivery: 'once', timestamp: nowSeconds() - 10 });
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'replayed');
  assert.is((await post(t.url, t.secret, { ref: 'b' }, { delivery: 'twice' })).status, 202, 'another id is fine');
  assert.is((await log(t)).length, 2);
});

test('422 invalid_payload: refused by the placeholder rules, recorded as refused with every reason, its id used up, nothing fired', async () => {
  const t = await make({ args: ['{{payload.ref}}', '{{payload.who}}'], allowedPaths: ['ref', 'who'] });
  const res = await post(t.url, t.secret, { ref: 'a;b' }, { delivery: 'bad-1' });
  assert.is(res.status, 422);
  assert.is(res.body.error.code, 'invalid_payload');
  assert.equal(res.body.reasons.map((r: { field: string; code: string }) => `${r.field}:${r.code}`), ['args.0:pattern', 'args.1:missing']);
  const [row] = await log(t);
  assert.equal([row.deliveryId, row.status, row.reason, row.runId, row.args], ['bad-1', 'refused', 'invalid_payload', null, null]);
  assert.is(row.reasons.length, 2);
  const again = await post(t.url, t.secret, { ref: 'ok', who: 'ann' }, { delivery: 'bad-1' });
  assert.is(again.status, 409, 'a refused payload uses up its delivery id');
});

for (const [what, body, code] of [
  ['a JSON array', '[1,2]', 'not_object'],
  ['a JSON string', '"main"', 'not_object'],
  ['a JSON number', '42', 'not_object'],
  ['JSON null', 'null', 'not_object'],
  ['an empty body', '', 'invalid_json'],
  ['invalid JSON', '{"ref":', 'invalid_json'],
  ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x72, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 'invalid_utf8'],
] as [string, string | Buffer, string][]) {
  test(`a body that is ${what} → 422 invalid_payload (${code}), recorded as refused`, async () => {
    const t = await make();
    const res = await post(t.url, t.secret, body);
    assert.is(res.status, 422);
    assert.equal(res.body.reasons.map((r: { code: string }) => r.code), [code]);
    assert.equal((await log(t)).map((d) => d.status), ['refused']);
  });
}

test('a JSON object nested 10,000 deep is accepted like any object; the server stays up', async () => {
  const t = await make({ args: ['{{payload.ref}}'] });
  const deep = `{"ref":"main","deep":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
  const res = await post(t.url, t.secret, deep);
  assert.is(res.status, 202);
  const arrays = await post(t.url, t.secret, `{"ref":"x","deep":${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
  assert.is(arrays.status, 202);
  assert.is((await fetch(`${s.server.url}/health`)).status, 200);
});

test('429 at the 31st accepted delivery in an hour: nothing recorded, the id not used up; refused payloads take no token', async () => {
  const t = await make();
  for (let i = 0; i < 30; i++) assert.is((await post(t.url, t.secret, { ref: 'a' }, { delivery: `r-${i}` })).status, 202, `#${i + 1}`);
  const limited = await post(t.url, t.secret, { ref: 'a' }, { delivery: 'r-30' });
  assert.is(limited.status, 429);
  assert.is(limited.body.error.code, 'rate_limited');
  const rows = await log(t);
  assert.is(rows.length, 30);
  assert.not.ok(rows.some((d) => d.deliveryId === 'r-30'), 'nothing recorded for the 429');
  // The same id is still free: a refused payload with it is answered 422 (not 409, not 429).
  assert.is((await post(t.url, t.secret, { ref: '$' }, { delivery: 'r-30' })).status, 422);
});

test('100 concurrent POSTs with one delivery id → exactly one 202, the rest 409, one row', async () => {
  const t = await make();
  const body = JSON.stringify({ ref: 'main' });
  const headers = { 'content-type': 'application/json', ...signTrigger(t.secret, body, { delivery: 'same-id' }) };
  const statuses = await Promise.all(Array.from({ length: 100 }, () => fetch(t.url, { method: 'POST', headers, body }).then(async (r) => (await r.arrayBuffer(), r.status))));
  assert.is(statuses.filter((x) => x === 202).length, 1);
  assert.is(statuses.filter((x) => x === 409).length, 99);
  assert.is((await log(t)).length, 1);
});

test('80 concurrent POSTs (60 ids, 20 of them sent twice) recorded in batches → exactly 30 accepted, each id once; the 429 ids stay usable', async () => {
  const t = await make();
  const ids = Array.from({ length: 60 }, (_, i) => `c-${i}`);
  const send = (id: string) => {
    const body = JSON.stringify({ ref: 'main' });
    const headers = { 'content-type': 'application/json', ...signTrigger(t.secret, body, { delivery: id }) };
    return fetch(t.url, { method: 'POST', headers, body }).then(async (r) => (await r.arrayBuffer(), { id, status: r.status }));
  };
  const answers = await Promise.all([...ids, ...ids.slice(0, 20)].map(send));
  const by = (status: number) => answers.filter((a) => a.status === status).map((a) => a.id);
  assert.is(by(202).length, 30, JSON.stringify(answers.map((a) => a.status)));
  assert.is(new Set(by(202)).size, 30, 'no id accepted twice');
  assert.is(by(202).length + by(409).length + by(429).length, 80, 'only 202, 409 and 429');
  for (const id of by(409)) assert.ok(by(202).includes(id), `${id}: 409 only for an id accepted by the other POST`);
  const rows = await log(t);
  assert.equal(rows.map((d) => d.deliveryId).sort(), by(202).sort(), 'one row per 202, none for a 409 or 429');
  // An id that got only 429s was never claimed: a refused payload with it is a 422, not a 409.
  const limited = by(429).find((id) => !by(202).includes(id));
  assert.ok(limited, 'some id was refused with 429 only');
  assert.is((await post(t.url, t.secret, { ref: '$' }, { delivery: limited })).status, 422);
  // The bucket is empty now: one more new id is a 429.
  assert.is((await post(t.url, t.secret, { ref: 'a' }, { delivery: 'c-after' })).status, 429);
});

test('GET on a trigger URL → 405, the same for any id', async () => {
  const t = await make();
  const known = await fetch(t.url);
  const unknown = await fetch(`${s.server.url}/hooks/${'B'.repeat(24)}`);
  assert.equal([known.status, unknown.status], [405, 405]);
});

test.run();
