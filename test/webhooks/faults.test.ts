// Receivers that misbehave, each a real server on loopback: hangs, resets, refuses, redirects, 500/429,
// a 50 MB answer, answers dripped byte by byte; the address guard refusing; the pinned connect (one
// lookup per attempt, Host and TLS SNI still the name). The attempt timeout is shortened for the test.
// needs: openssl
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import type { Resolver } from '../../functions/webhooks/guard.ts';
import { createTestDelivery } from '../../functions/webhooks/webhooks.ts';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { tempDir } from '../helpers/db.ts';
import { addWebhook, attempts, deliveries, migratedDb, receiver, setAllowlist, worker } from './_harness.ts';
import type { Receiver } from './_harness.ts';

const TIMEOUT = 600;
let db: Db;
let cleanup: () => Promise<void>;
let rx: Receiver;
test.before(async () => {
  ({ db, cleanup } = await migratedDb());
  rx = await receiver();
  await setAllowlist(db, ['127.0.0.1/32']);
});
test.after(async () => {
  await rx?.close();
  await cleanup?.();
});
test.before.each(() => {
  rx.requests.length = 0;
});

/** One webhook.test delivery to `url`, attempted once; the delivery row and its attempt. */
async function attemptOnce(url: string, opts: Parameters<typeof worker>[1] = {}) {
  const hook = await addWebhook(db, { url, events: ['pr.opened'] });
  await createTestDelivery(db, hook.id, new Date());
  const started = Date.now();
  await worker(db, { timeoutMs: TIMEOUT, ...opts }).tick();
  const [d] = await deliveries(db, hook.id);
  const [a] = await attempts(db, d.id);
  return { hook, d, a, ms: Date.now() - started };
}

test('a receiver that never answers: the attempt times out (timeout), pending, retried later', async () => {
  rx.handle(() => {}); // read the request, say nothing
  const { d, a, ms } = await attemptOnce(`${rx.url}/hang`);
  assert.equal([d.status, d.attempts, d.last_error, d.response_code], ['pending', 1, 'timeout', null]);
  assert.is(a.error, 'timeout');
  assert.ok(ms >= TIMEOUT && ms < TIMEOUT + 5000, `${ms} ms`); // the margin: a loaded machine
  assert.ok(d.next_attempt_at);
});

test('a receiver that resets the connection: connection_reset; a closed port: connection_refused', async () => {
  rx.handle((req) => req.socket.destroy());
  const reset = await attemptOnce(`${rx.url}/reset`);
  assert.equal([reset.d.status, reset.a.error], ['pending', 'connection_reset']);
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const refused = await attemptOnce(`http://127.0.0.1:${port}/`);
  assert.equal([refused.d.status, refused.a.error], ['pending', 'connection_refused']);
});

test('3xx is a failure and the redirect is not followed', async () => {
  for (const code of [301, 302, 307, 308]) {
    rx.requests.length = 0;
    rx.handle((req, res) => {
      if (req.url === '/moved') return res.writeHead(code, { location: `${rx.url}/target` }).end('moved');
      res.end('should never be reached');
    });
    const { d, a } = await attemptOnce(`${rx.url}/moved`);
    assert.equal([d.status, d.response_code, d.last_error, d.response_body], ['pending', code, 'redirect', 'moved'], String(code));
    assert.match(a.detail!, /not followed/);
    assert.equal(rx.requests.map((r) => r.url), ['/moved'], `${code}: only the first request`);
  }
});

test('500 and 429 are failures; their code and body are kept; 2xx of any kind is success', async () => {
  rx.handle((_req, res) => res.writeHead(500).end('internal'));
  const e500 = await attemptOnce(`${rx.url}/500`);
  assert.equal([e500.d.status, e500.d.response_code, e500.d.response_body, e500.d.last_error], ['pending', 500, 'internal', 'http_status']);
  rx.handle((_req, res) => res.writeHead(429, { 'retry-after': '1' }).end('slow down'));
  const e429 = await attemptOnce(`${rx.url}/429`);
  assert.equal([e429.d.status, e429.d.response_code, e429.d.response_body], ['pending', 429, 'slow down']);
  for (const code of [200, 201, 202, 204, 299]) {
    rx.handle((_req, res) => res.writeHead(code).end());
    const ok = await attemptOnce(`${rx.url}/ok${code}`);
    assert.equal([ok.d.status, ok.d.response_code, ok.a.outcome], ['delivered', code, 'success'], String(code));
  }
});

test('a 50 MB answer: at most 2 KB is read and kept, then the connection is closed', async () => {
  let queued = 0;
  let closedAt = 0;
  rx.handle((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(50 * 1024 * 1024) });
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    res.on('close', () => (closedAt = queued));
    const pump = () => {
      while (queued < 50 * 1024 * 1024 && !res.destroyed) {
        queued += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  const { d, a, ms } = await attemptOnce(`${rx.url}/big`);
  assert.equal([d.status, d.response_code], ['delivered', 200]);
  assert.is(d.response_body!.length, 2048);
  assert.is(a.response_body!.length, 2048);
  assert.ok(ms < 3000, `${ms} ms`);
  for (let i = 0; i < 50 && !closedAt; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(closedAt > 0 && closedAt < 50 * 1024 * 1024, `the receiver was cut off after ${closedAt} bytes`);
});

test('slow byte by byte: headers dripped past the deadline time out; a 2xx whose body drips keeps what came', async () => {
  const drip = net.createServer((socket) => {
    // The attempt gives up at its deadline and resets the connection: a write after that fails with
    // ECONNRESET, which is the point, not an error of the test's.
    socket.on('error', () => {});
    socket.once('data', () => {
      const answer = Buffer.from('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nhello');
      let i = 0;
      const timer = setInterval(() => (i < answer.length && !socket.destroyed ? socket.write(answer.subarray(i, ++i)) : clearInterval(timer)), 50);
      socket.on('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((r) => drip.listen(0, '127.0.0.1', r));
  const slowHead = await attemptOnce(`http://127.0.0.1:${(drip.address() as AddressInfo).port}/`);
  assert.equal([slowHead.d.status, slowHead.a.error], ['pending', 'timeout']);
  assert.ok(slowHead.ms < TIMEOUT + 2000, 'one deadline for the whole attempt, not per byte');
  drip.close();

  rx.handle((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    let n = 0;
    const timer = setInterval(() => (n++ < 3000 && !res.destroyed ? res.write('y') : (clearInterval(timer), res.end())), 10);
    res.on('close', () => clearInterval(timer));
  });
  const slowBody = await attemptOnce(`${rx.url}/drip`);
  assert.equal([slowBody.d.status, slowBody.d.response_code], ['delivered', 200]);
  assert.ok(slowBody.d.response_body!.length > 0 && slowBody.d.response_body!.length < 2048, `kept ${slowBody.d.response_body!.length} bytes`);
  assert.ok(slowBody.ms < TIMEOUT + 2000);
});

test('blocked_address is recorded on the attempt and nothing is sent; https-only without the allowlist', async () => {
  await setAllowlist(db, []);
  try {
    const loop = await attemptOnce(`${rx.url}/blocked`);
    assert.equal([loop.d.status, loop.d.last_error, loop.a.error, loop.a.outcome], ['pending', 'blocked_address', 'blocked_address', 'failure']);
    assert.match(loop.a.detail!, /127\.0\.0\.1 \(loopback\)/);
    const decimal = await attemptOnce(`http://2130706433:${rx.port}/decimal`);
    assert.is(decimal.a.error, 'blocked_address');
    const mapped = await attemptOnce(`http://[::ffff:127.0.0.1]:${rx.port}/mapped`);
    assert.is(mapped.a.error, 'blocked_address');
    const named = await attemptOnce(`https://receiver.test:${rx.port}/`, { resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    assert.is(named.a.error, 'blocked_address');
    assert.is(rx.requests.length, 0, 'the receiver heard nothing');
  } finally {
    await setAllowlist(db, ['127.0.0.1/32']);
  }
});

test('pinned connect: one lookup per attempt, the connection goes to the checked address, Host stays the name', async () => {
  await setAllowlist(db, ['hooks.receiver.test']);
  try {
    const answers = ['127.0.0.1', '10.255.255.1'];
    const lookups: string[] = [];
    const rebinding: Resolver = async (host) => {
      lookups.push(host);
      return [{ address: answers[Math.min(lookups.length - 1, 1)], family: 4 }];
    };
    const { d, a } = await attemptOnce(`http://hooks.receiver.test:${rx.port}/pinned`, { resolve: rebinding });
    assert.equal(lookups, ['hooks.receiver.test'], 'exactly one lookup: net.connect never asks DNS again');
    assert.equal([d.status, a.address], ['delivered', '127.0.0.1']);
    assert.is(rx.requests[0].headers.host, `hooks.receiver.test:${rx.port}`);
  } finally {
    await setAllowlist(db, ['127.0.0.1/32']);
  }
});

test('https: TLS to the pinned address with SNI and certificate check against the name', async () => {
  const dir = tempDir('tls-');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=receiver.test', '-addext', 'subjectAltName=DNS:receiver.test', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'cert.pem'));
  const seen: { servername: string | false | null; host: string | undefined; body: string; signature: string }[] = [];
  const server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ servername: (req.socket as import('node:tls').TLSSocket).servername, host: req.headers.host, body, signature: String(req.headers['x-svc-signature']) });
      res.end('tls ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    const resolve: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    await setAllowlist(db, ['receiver.test']);
    const { d, hook } = await attemptOnce(`https://receiver.test:${port}/secure`, { resolve, tls: { ca: cert } });
    assert.equal([d.status, d.response_body], ['delivered', 'tls ok']);
    assert.equal([seen[0].servername, seen[0].host], ['receiver.test', `receiver.test:${port}`]);
    assert.ok(verifyWebhook(seen[0].body, seen[0].signature, hook.secret).ok);
    // A certificate for another name is refused even though the address is right.
    await setAllowlist(db, ['other.test']);
    const wrong = await attemptOnce(`https://other.test:${port}/secure`, { resolve, tls: { ca: cert } });
    assert.equal([wrong.d.status, wrong.a.error], ['pending', 'tls_error']);
  } finally {
    server.close();
    await setAllowlist(db, ['127.0.0.1/32']);
  }
});

test('no attempt row is left without an outcome', async () => {
  const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from outbound_attempts where outcome is null`);
  assert.is(n, 0);
});

test.run();
