// The receiver-side verifier of docs/webhooks.md: the page shows docs/examples/verify-webhook.ts as it
// is, this file imports that very module, checks it with fixed vectors, and runs the page's minimal
// receiver against real deliveries from the worker.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { signature } from '../../functions/webhooks/signature.ts';
import { createTestDelivery } from '../../functions/webhooks/webhooks.ts';
import { ROOT } from '../helpers/db.ts';
import { addWebhook, deliveries, migratedDb, setAllowlist, worker } from './_harness.ts';

test('docs/webhooks.md shows docs/examples/verify-webhook.ts exactly', () => {
  const example = readFileSync(join(ROOT, 'docs/examples/verify-webhook.ts'), 'utf8');
  const code = example.slice(example.indexOf("import { createHmac"));
  const page = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8');
  const shown = /```ts\n(import \{ createHmac[\s\S]*?)```/.exec(page)?.[1];
  assert.is(shown, code);
});

test('the docs verifier: accepts within 300 s, refuses stale, tampered, malformed and missing; raw bytes only', () => {
  const secret = 'c2VjcmV0LXNpZ25pbmcta2V5';
  const body = '{"id":"evt_1","type":"webhook.test"}';
  const header = signature(secret, 1700000000, body);
  assert.equal(verifyWebhook(body, header, secret, { now: 1700000000 }), { ok: true, timestamp: 1700000000 });
  assert.ok(verifyWebhook(Buffer.from(body), header, secret, { now: 1700000300 }).ok, 'Buffer body, 300 s late');
  assert.ok(verifyWebhook(body, header, secret, { now: 1699999700 }).ok, '300 s early');
  assert.equal(verifyWebhook(body, header, secret, { now: 1700000301 }), { ok: false, reason: 'stale' });
  assert.equal(verifyWebhook(body + ' ', header, secret, { now: 1700000000 }), { ok: false, reason: 'mismatch' });
  assert.equal(verifyWebhook(JSON.stringify(JSON.parse(body), null, 1), header, secret, { now: 1700000000 }), { ok: false, reason: 'mismatch' }, 're-serialized JSON fails');
  assert.equal(verifyWebhook(body, header.replace('t=1700000000', 't=1700000001'), secret, { now: 1700000000 }), { ok: false, reason: 'mismatch' });
  assert.equal(verifyWebhook(body, 't=1.5,v1=' + 'a'.repeat(64), secret, { now: 1 }), { ok: false, reason: 'malformed' });
  assert.equal(verifyWebhook(body, 't=1700000000,v1=abc', secret, { now: 1700000000 }), { ok: false, reason: 'malformed' });
  assert.equal(verifyWebhook(body, undefined, secret), { ok: false, reason: 'missing' });
  const rotated = `${header},v1=${'0'.repeat(64)}`;
  assert.ok(verifyWebhook(body, rotated, secret, { now: 1700000000 }).ok, 'any matching v1 of several');
});


test('the page’s minimal receiver, fed by the worker: verified deliveries 2xx and handled once, wrong secret 401', async () => {
  const { db, cleanup } = await migratedDb();
  const handled: string[] = [];
  let secret = '';
  const seen = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const verdict = verifyWebhook(raw, req.headers['x-svc-signature'] as string | undefined, secret);
      if (!verdict.ok) return res.writeHead(401).end();
      const delivery = String(req.headers['x-svc-delivery']);
      if (!seen.has(delivery)) {
        seen.add(delivery);
        handled.push(JSON.parse(raw.toString('utf8')).type);
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await setAllowlist(db, ['127.0.0.1']);
    const hook = await addWebhook(db, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, events: ['pr.merged'] });
    await createTestDelivery(db, hook.id, new Date());
    const w = worker(db);
    await w.tick();
    assert.equal((await deliveries(db, hook.id)).map((d) => [d.status, d.response_code]), [['pending', 401]], 'the receiver refuses what it cannot verify');
    secret = hook.secret;
    await db.query(sql`update outbound_deliveries set next_attempt_at = now() where webhook_id = ${hook.id}`);
    await w.tick();
    assert.equal((await deliveries(db, hook.id)).map((d) => [d.status, d.response_code]), [['delivered', 204]]);
    assert.equal(handled, ['webhook.test']);
  } finally {
    server.close();
    await cleanup();
  }
});

test.run();
