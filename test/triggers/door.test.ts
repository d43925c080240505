// The server's front door for POST /hooks/<publicId> (functions/app.ts createHookDoor): the server answers
// it from Node's request without the router. These tests hold it to the route's behaviour: the same
// answers and headers as the router's path (a target with a dot segment still goes through the router),
// which targets it takes, and a client that goes away mid-body.
import { createSecretKey } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signTrigger } from '../../docs/examples/sign-trigger.ts';
import { readNodeBody } from '../../functions/lib/http.ts';
import { createHookDoor } from '../../functions/app.ts';
import type { AppContext } from '../../functions/lib/context.ts';
import { TriggerCache } from '../../functions/triggers/cache.ts';
import { hookPublicId } from '../../functions/triggers/hook.ts';
import type { TriggerRow } from '../../functions/triggers/triggers.ts';
import { createTrigger, deliveries, setup, skillTrigger, waitFor } from './_harness.ts';
import type { Setup } from './_harness.ts';

test('hookPublicId: the targets the route reads as /hooks/:publicId, and no other', () => {
  const id = 'ft9uANNeNo9Fdv3_lRreJt82';
  for (const target of [`/hooks/${id}`, `/hooks/${id}/`, `/hooks/${id}//`, `/hooks/${id}?a=1`, `/hooks/${id}/?a=1/b`]) {
    assert.is(hookPublicId(target), id, target);
  }
  // Not an id, but still the route's: answered 404 by the hook itself, like any unknown id.
  assert.is(hookPublicId('/hooks/%41%42'), '%41%42');
  assert.is(hookPublicId('/hooks/...'), '...');
  for (const target of [
    '/hooks/',
    '/hooks',
    `/hooks/${id}/x`, // a sub-path
    '/hooks/.', // dot segments: URL parsing removes them, so the router decides
    '/hooks/..',
    '/hooks/%2e%2E',
    `/hooks/./${id}`,
    `/hooks/a\\b`, // a backslash is a slash to URL parsing
    `/api/hooks/${id}`,
    `http://127.0.0.1/hooks/${id}`, // absolute form
    `/hooks/${id}#x`,
  ]) {
    assert.is(hookPublicId(target), null, target);
  }
});

test('readNodeBody arms its deadline timer only for a body still incomplete after the reads of its turn', async () => {
  const DEADLINE = 12_345; // a delay nothing else here uses: its setTimeout calls are counted
  const realSetTimeout = globalThis.setTimeout;
  let armed = 0;
  globalThis.setTimeout = ((fn: () => void, ms?: number, ...rest: unknown[]) => {
    if (ms === DEADLINE) armed++;
    return realSetTimeout(fn, ms, ...rest);
  }) as typeof setTimeout;
  const server = http.createServer((req, res) => {
    readNodeBody(req, 1024, DEADLINE).then(
      (body) => res.writeHead(200, { 'content-length': body.byteLength }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('latin1').on('data', (d: string) => (received += d));
  const answers = () => received.split('HTTP/1.1 200').length - 1;
  const head = (n: number) => `POST /x HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${n}\r\n\r\n`;
  try {
    await new Promise<void>((r) => socket.once('connect', () => r()));
    // 20 requests, each head and body in one write: no timer.
    for (let i = 1; i <= 20; i++) {
      socket.write(head(9) + '{"n":' + String(i).padStart(3, '0') + '}');
      await waitFor(`answer ${i}`, async () => answers() === i);
    }
    assert.is(armed, 0, 'a body that came with its head needs no deadline timer');
    // A body that comes later: its deadline is armed, and the body still arrives in time.
    socket.write(head(9));
    await waitFor('the deadline armed', async () => armed === 1);
    socket.write('{"n":999}');
    await waitFor('answer 21', async () => answers() === 21);
    assert.ok(received.endsWith('{"n":999}'));
    assert.is(armed, 1);
  } finally {
    globalThis.setTimeout = realSetTimeout;
    socket.destroy();
    await new Promise((r) => server.close(r));
  }
});

let s: Setup;
test.before(async () => {
  s = await setup();
});
test.after(async () => s?.server.cleanup());

interface Exchange {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A POST whose request target is sent exactly as given (fetch would resolve dot segments first). */
function postRaw(path: string, headers: Record<string, string>, body: string): Promise<Exchange> {
  const u = new URL(s.server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the door writes its answers at the end of the event-loop turn, all the answers of a turn together', async () => {
  // The door in this process, with one trigger in its cache (no database: a refusal never reaches it).
  const publicId = 'D'.repeat(24);
  const triggers = new TriggerCache();
  triggers.set(publicId, { row: { id: 't1', public_id: publicId, enabled: true } as TriggerRow, version: '1', secrets: { current: createSecretKey(Buffer.from('the-secret')), previous: null, previousUntilMs: 0 } }, triggers.mark());
  const ctx = { config: { TRIGGER_BODY_TIMEOUT_SECONDS: 5 }, triggers, clock: { now: () => Date.now() }, keys: {}, log: { error: () => {} } } as unknown as AppContext;
  const door = createHookDoor(ctx);
  // Which writes happen inside a setImmediate callback, and in which flush.
  let flush = 0;
  let inImmediate = false;
  const realSetImmediate = globalThis.setImmediate;
  globalThis.setImmediate = ((fn: (...a: unknown[]) => void, ...args: unknown[]) =>
    realSetImmediate(() => {
      flush++;
      inImmediate = true;
      try {
        fn(...args);
      } finally {
        inImmediate = false;
      }
    })) as typeof setImmediate;
  const writes: { inImmediate: boolean; flush: number }[] = [];
  const server = http.createServer((req, res) => {
    const writeHead = res.writeHead.bind(res);
    res.writeHead = ((...a: Parameters<typeof res.writeHead>) => (writes.push({ inImmediate, flush }), writeHead(...a))) as typeof res.writeHead;
    assert.ok(door(req, res), 'the door takes POST /hooks/<id>');
  });
  try {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    const body = JSON.stringify({ ref: 'main' });
    const request = (i: number) => {
      const h = { 'content-type': 'application/json', ...signTrigger('not-the-secret', body, { delivery: `d-${i}` }) };
      return `POST /hooks/${publicId} HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length}\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`;
    };
    // 8 requests pipelined in one write: Node parses them in one turn, so their answers are one flush's.
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1').on('data', (d: string) => (received += d));
    socket.write(Array.from({ length: 8 }, (_, i) => request(i)).join(''));
    await waitFor('8 answers', async () => received.split('HTTP/1.1 401').length - 1 === 8);
    socket.destroy();
    assert.is(writes.length, 8);
    assert.ok(writes.every((w) => w.inImmediate), 'every answer is written by the end-of-turn flush, none from its own callback');
    assert.is(new Set(writes.map((w) => w.flush)).size, 1, 'the 8 answers of one turn go out in one flush');
  } finally {
    globalThis.setImmediate = realSetImmediate;
    server.close();
  }
});

test('the door and the router answer alike: 202, 401 and 404, with the same headers (X-Request-Id echoed, nosniff, X-Svc-Version)', async () => {
  const t = await createTrigger(s.server, s.projectId, skillTrigger());
  const body = JSON.stringify({ ref: 'main' });
  const version = (await fetch(`${s.server.url}/health`)).headers.get('x-svc-version');
  assert.ok(version, 'the build answers with its version');
  const targets = { door: `/hooks/${t.publicId}`, router: `/hooks/./${t.publicId}` };
  for (const [via, path] of Object.entries(targets)) {
    // keep-alive asked for explicitly (postRaw has no agent): whether the answer closes is then the server's choice.
    const signed = { 'content-type': 'application/json', connection: 'keep-alive', 'x-request-id': `req-${via}`, ...signTrigger(t.secret, body, { delivery: `d-${via}` }) };
    const ok = await postRaw(path, signed, body);
    assert.is(ok.status, 202, via);
    assert.equal(JSON.parse(ok.body), { deliveryId: `d-${via}`, status: 'accepted' }, via);
    assert.is(ok.headers['content-type'], 'application/json', via);
    const bad = await postRaw(path, { ...signed, ...signTrigger('not-the-secret', body, { delivery: `bad-${via}` }) }, body);
    assert.is(bad.status, 401, via);
    assert.is(bad.body, '', via);
    assert.is(bad.headers['content-length'], '0', `${via}: an empty answer is sized, not chunked`);
    assert.is(bad.headers['transfer-encoding'], undefined, via);
    assert.is(bad.headers.connection, 'keep-alive', `${via}: the body was read, the connection stays`);
    const replayed = await postRaw(path, signed, body);
    assert.is(replayed.status, 409, via);
    assert.is(JSON.parse(replayed.body).error.code, 'replayed', via);
    for (const answer of [ok, bad, replayed]) {
      assert.is(answer.headers['x-request-id'], `req-${via}`, via);
      assert.is(answer.headers['x-content-type-options'], 'nosniff', via);
      assert.is(answer.headers['x-svc-version'], version, via);
    }
  }
  const unknown = { door: `/hooks/${'C'.repeat(24)}`, router: `/hooks/./${'C'.repeat(24)}` };
  for (const [via, path] of Object.entries(unknown)) {
    const res = await postRaw(path, { 'content-type': 'application/json', connection: 'keep-alive', ...signTrigger(t.secret, body) }, body);
    assert.is(res.status, 404, via);
    assert.is(res.body, '', via);
    assert.is(res.headers['content-length'], '0', via);
    assert.is(res.headers.connection, 'close', `${via}: the body was left unread, so the connection closes`);
    assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/, `${via}: a new request id when none was sent`);
  }
  assert.equal((await deliveries(s.server, s.projectId, t.id)).map((d) => d.deliveryId).sort(), ['d-door', 'd-router']);
});

test('a client that goes away in the middle of the body: nothing recorded, no error logged, the server serves on', async () => {
  const t = await createTrigger(s.server, s.projectId, skillTrigger());
  const body = JSON.stringify({ ref: 'main', pad: 'x'.repeat(1000) });
  const signed = signTrigger(t.secret, body, { delivery: 'cut-1' });
  const before = s.server.output().length;
  const u = new URL(s.server.url);
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname, () => {
      const head = [`POST /hooks/${t.publicId} HTTP/1.1`, `host: ${u.host}`, 'content-type: application/json', `content-length: ${body.length}`, ...Object.entries(signed).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${head.join('\r\n')}\r\n\r\n${body.slice(0, 500)}`, () => setImmediate(() => socket.destroy()));
    });
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
  // The same delivery, whole, afterwards: accepted (the cut one used nothing up).
  const again = await postRaw(`/hooks/${t.publicId}`, { 'content-type': 'application/json', ...signed }, body);
  assert.is(again.status, 202);
  await waitFor('the accepted delivery', async () => (await deliveries(s.server, s.projectId, t.id)).length === 1);
  assert.not.match(s.server.output().slice(before), / ERROR /, 'nothing logged as an error');
});

test.run();
