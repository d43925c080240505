// Oversized bodies against the real server over a raw TCP socket, so we can count what the server
// accepted: after a 413 it answers `Connection: close`, stops reading and closes the connection, long
// before a 200 MB body is through (what the client gets written is bounded by kernel buffers).
import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
test.before(async () => {
  server = await startServer({ admin: true, env: { MAX_BODY_BYTES: '4096' } });
});
test.after(async () => server?.cleanup());

const TOTAL = 200 * 1024 * 1024;
/** What loopback socket buffers can swallow while nobody reads; far below TOTAL. */
const BUFFERED = 32 * 1024 * 1024;

interface Outcome {
  head: string;
  status: number;
  written: number;
  closedByServer: boolean;
}

/** Write `head` then up to TOTAL body bytes as fast as the socket takes them, until the server closes. */
function flood(head: string, chunked = false): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1');
    let written = 0;
    let answer = '';
    let finished = false;
    const piece = Buffer.alloc(64 * 1024, 'a');
    const frame = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
    const timer = setTimeout(() => done(false), 30_000);
    const done = (closedByServer: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
      resolve({ head: answer.split('\r\n\r\n')[0], status, written, closedByServer });
    };
    const pump = () => {
      while (!finished && !socket.destroyed && written < TOTAL) {
        written += piece.length;
        if (!socket.write(frame)) return void socket.once('drain', pump);
      }
    };
    socket.on('connect', () => {
      socket.write(head);
      pump();
    });
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', () => {}); // a reset after the answer is how the server may end it
    socket.on('close', () => done(true));
    socket.once('error', (err) => (answer ? undefined : reject(err)));
  });
}

const request = (method: string, path: string, extra: string) =>
  `${method} ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${server.admin.token}\r\n${extra}\r\n`;

function assertRefused(o: Outcome, status = 413) {
  assert.is(o.status, status, o.head);
  assert.match(o.head, /\r\nconnection: close/i, 'answers Connection: close');
  assert.ok(o.closedByServer, 'the server closed the connection');
  assert.ok(o.written < BUFFERED, `the server stopped reading: ${o.written} bytes went out of ${TOTAL}`);
}

test('declared Content-Length of 200 MB → 413, connection closed, body not read', async () => {
  assertRefused(await flood(request('PUT', '/api/prices/m', `Content-Type: application/json\r\nContent-Length: ${TOTAL}\r\n`)));
});

test('declared 200 MB without credentials → 413 too (refused before any sign-in check)', async () => {
  const o = await flood(`PUT /api/prices/m HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${TOTAL}\r\n\r\n`);
  assertRefused(o);
});

test('chunked body crossing the limit → 413, connection closed, the rest not read', async () => {
  const o = await flood(request('PUT', '/api/prices/m', 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n'), true);
  assertRefused(o);
});

test('GET (a route without a body) with a declared 200 MB body → 413 and closed', async () => {
  assertRefused(await flood(request('GET', '/api/me', `Content-Length: ${TOTAL}\r\n`)));
});

test('DELETE with a chunked body over 4 KiB → 413 and closed', async () => {
  assertRefused(await flood(request('DELETE', '/api/tokens/x', 'Transfer-Encoding: chunked\r\n'), true));
});

test('unknown route with a 200 MB body → 404, and the body is not read either', async () => {
  assertRefused(await flood(request('POST', '/api/nothing-here', `Content-Length: ${TOTAL}\r\n`)), 404);
});

test('a small body on a GET is ignored and the connection stays open for the next request', async () => {
  const socket = net.connect(server.port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d.toString('latin1')));
  const twoAnswers = new Promise<void>((ok, fail) => {
    const t = setTimeout(() => fail(new Error(`only: ${answer.slice(0, 300)}`)), 15_000);
    socket.on('data', () => (answer.match(/HTTP\/1\.1 200/g) ?? []).length === 2 && (clearTimeout(t), ok()));
  });
  socket.write(`${request('GET', '/api/me', 'Content-Length: 100\r\n')}${'x'.repeat(100)}`);
  socket.write(request('GET', '/api/me', ''));
  await twoAnswers;
  assert.not.match(answer, /connection: close/i);
  socket.destroy();
});

test('after all that the server is healthy', async () => {
  const res = await fetch(`${server.url}/health`);
  assert.is(res.status, 200);
  assert.is((await res.json()).status, 'ok');
});

test.run();
