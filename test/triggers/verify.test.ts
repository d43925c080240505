// Inbound trigger signature (spec: Authentication → Inbound trigger signature): fixed vectors computed
// outside this code (openssl), the 300 s window at its edges, header shapes, legacy names, rotation
// candidates; and the docs' signer (docs/examples/sign-trigger.ts) agrees with the server's verifier.
// needs: openssl
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signTrigger } from '../../docs/examples/sign-trigger.ts';
import { LEGACY_TRIGGER_HEADERS, signedHeaders, triggerSignature, verifyTrigger } from '../../functions/triggers/verify.ts';
import { LEGACY_PREFIX } from '../../functions/webhooks/signature.ts';
import { ROOT } from '../helpers/db.ts';

const SECRET = 'c2VjcmV0LXRyaWdnZXIta2V5';
const BODY = Buffer.from('{"ref":"main"}');
const T = 1_700_000_000;
const NOW = T * 1000;
// printf '%s' '1700000000.d-1.{"ref":"main"}' | openssl dgst -sha256 -hmac 'c2VjcmV0LXRyaWdnZXIta2V5'
const VECTOR = 'sha256=091c0f440ab78e38386574d7736823e64d9746634e6f1ff2f3189f2b2f9ad79e';
// printf '%s' '1700000000.d-1.' | openssl dgst -sha256 -hmac 'c2VjcmV0LXRyaWdnZXIta2V5'  (empty body)
const EMPTY_VECTOR = 'sha256=ef9a81b5b2030fd3c7aeecef7ca2e454e71281df1a63a37acd80e798297d4d33';

const h = (over: Partial<{ timestamp: string | null; delivery: string | null; signature: string | null }> = {}) => ({ timestamp: String(T), delivery: 'd-1', signature: VECTOR, ...over });
const verify = (headers = h(), body: Uint8Array = BODY, secrets = [SECRET, 'dummy'], now = NOW) => verifyTrigger(headers, body, secrets, now);

test('fixed vectors: the signature is HMAC-SHA256 keyed with the secret text over `<timestamp>.<delivery>.<raw body>`', () => {
  assert.is(triggerSignature(SECRET, T, 'd-1', BODY), VECTOR);
  assert.is(triggerSignature(SECRET, String(T), 'd-1', ''), EMPTY_VECTOR);
  assert.equal(verify(), { ok: true, delivery: 'd-1', timestamp: T, secretIndex: 0 });
  assert.equal(verify(h({ signature: EMPTY_VECTOR }), new Uint8Array(0)), { ok: true, delivery: 'd-1', timestamp: T, secretIndex: 0 });
});

test('the docs signer produces exactly these headers', () => {
  assert.equal(signTrigger(SECRET, BODY, { delivery: 'd-1', timestamp: T }), { 'X-Svc-Timestamp': String(T), 'X-Svc-Delivery': 'd-1', 'X-Svc-Signature': VECTOR });
  const fresh = signTrigger(SECRET, 'x');
  assert.match(fresh['X-Svc-Delivery'], /^[0-9a-f-]{36}$/);
  assert.ok(Math.abs(Number(fresh['X-Svc-Timestamp']) - Date.now() / 1000) < 5);
});

test('docs/triggers.md shows docs/examples/sign-trigger.ts exactly', () => {
  const example = readFileSync(join(ROOT, 'docs/examples/sign-trigger.ts'), 'utf8');
  const code = example.slice(example.indexOf('import { createHmac'));
  const page = readFileSync(join(ROOT, 'docs/triggers.md'), 'utf8');
  const shown = /```ts\n(import \{ createHmac[\s\S]*?)```/.exec(page)?.[1];
  assert.is(shown, code);
});

test('timestamp window: −300 s and +300 s pass, −301 s and +301 s are stale', () => {
  for (const skew of [-300, -1, 0, 1, 300]) assert.ok(verify(h(), BODY, [SECRET, 'x'], NOW + skew * 1000).ok, `${skew}`);
  for (const skew of [-301, 301, 86400]) assert.equal(verify(h(), BODY, [SECRET, 'x'], NOW + skew * 1000), { ok: false, reason: 'stale' }, `${skew}`);
  // The server's clock in milliseconds is floored to seconds: 300.999 s late is still 300.
  assert.ok(verify(h(), BODY, [SECRET, 'x'], NOW + 300_999).ok);
});

test('timestamps that are not 1–12 digits are malformed: fractions, signs, exponents, spaces, huge', () => {
  for (const ts of ['1700000000.5', '-1700000000', '+1700000000', '1.7e9', ' 1700000000', '1700000000 ', '0x6553f100', '1700000000, 1700000000', '9'.repeat(13), '', 'now']) {
    const r = verify(h({ timestamp: ts, signature: triggerSignature(SECRET, ts, 'd-1', BODY) }));
    assert.is(r.ok, false, ts);
    if (!r.ok) assert.is(r.reason, ts === '' ? 'missing' : 'malformed', ts);
  }
  const huge = '999999999999';
  assert.equal(verify(h({ timestamp: huge, signature: triggerSignature(SECRET, huge, 'd-1', BODY) })), { ok: false, reason: 'stale' });
});

test('each header missing or empty → missing; garbage → malformed', () => {
  for (const k of ['timestamp', 'delivery', 'signature'] as const) {
    assert.equal(verify(h({ [k]: null })), { ok: false, reason: 'missing' }, `${k} absent`);
    assert.equal(verify(h({ [k]: '' })), { ok: false, reason: 'missing' }, `${k} empty`);
  }
  for (const sig of ['sha256=', 'sha256=xyz', `sha1=${'0'.repeat(64)}`, VECTOR.slice(7), `${VECTOR},${VECTOR}`, `${VECTOR} `, `SHA256=${VECTOR.slice(7)}`, `sha256=${'0'.repeat(63)}`]) {
    assert.equal(verify(h({ signature: sig })), { ok: false, reason: 'malformed' }, sig);
  }
});

test('delivery ids: 1–64 visible ASCII characters; 65, spaces (two joined headers), control and non-ASCII refused', () => {
  const d64 = 'x'.repeat(64);
  assert.ok(verify(h({ delivery: d64, signature: triggerSignature(SECRET, T, d64, BODY) })).ok);
  for (const d of ['x'.repeat(65), 'd-1, d-1', 'a b', 'a\tb', 'é', 'a\u0000']) {
    assert.equal(verify(h({ delivery: d, signature: triggerSignature(SECRET, T, d, BODY) })), { ok: false, reason: 'malformed' }, JSON.stringify(d));
  }
});

test('mismatch: another body, byte, delivery, timestamp or secret', () => {
  assert.equal(verify(h(), Buffer.from('{"ref":"main"} ')), { ok: false, reason: 'mismatch' });
  assert.equal(verify(h({ delivery: 'd-2' })), { ok: false, reason: 'mismatch' });
  assert.equal(verify(h({ timestamp: String(T + 1) })), { ok: false, reason: 'mismatch' });
  assert.equal(verify(h(), BODY, ['another-secret', 'dummy']), { ok: false, reason: 'mismatch' });
  assert.ok(verify(h({ signature: VECTOR.toUpperCase().replace('SHA256', 'sha256') })).ok, 'hex in upper case is the same digest');
});

test('rotation: either candidate verifies and the index says which', () => {
  assert.equal(verify(h(), BODY, ['new-secret', SECRET]), { ok: true, delivery: 'd-1', timestamp: T, secretIndex: 1 });
  assert.equal(verify(h(), BODY, [SECRET, SECRET]), { ok: true, delivery: 'd-1', timestamp: T, secretIndex: 0 });
});

test('headers: the svc names, or the legacy names with the prefix the webhooks use', () => {
  assert.is(LEGACY_TRIGGER_HEADERS.signature, `${LEGACY_PREFIX}Signature`);
  const svc = new Headers({ 'x-svc-timestamp': '1', 'x-svc-delivery': 'a', 'x-svc-signature': 's' });
  assert.equal(signedHeaders(svc), { timestamp: '1', delivery: 'a', signature: 's' });
  const legacy = new Headers({ [`${LEGACY_PREFIX}Timestamp`]: '2', [`${LEGACY_PREFIX}Delivery`]: 'b', [`${LEGACY_PREFIX}Signature`]: 't' });
  assert.equal(signedHeaders(legacy), { timestamp: '2', delivery: 'b', signature: 't' });
  const both = new Headers({ 'x-svc-delivery': 'a', [`${LEGACY_PREFIX}Delivery`]: 'b' });
  assert.is(signedHeaders(both).delivery, 'a', 'the svc name wins');
  const dup = new Headers([['x-svc-delivery', 'a'], ['x-svc-delivery', 'a']]);
  assert.is(signedHeaders(dup).delivery, 'a, a', 'a duplicated header arrives joined, and is then malformed');
});

test.run();
