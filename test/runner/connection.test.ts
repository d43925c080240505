// The runner's frame budget on its socket (runner/connection.ts): the hub drops a runner's frames beyond
// 100 a second (bursts of 200) and answers `rate_limited`, so the Connection sends at most 80 a second on
// average, in bursts of 100, and holds the rest back in order instead of sending them to be dropped.
// Driven with the injected clock and socket of backoff.test.ts: time moves only when a timer runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tokenBucket } from '../../protocol/bucket.ts';
import { RUNNER_FRAMES_PER_SECOND } from '../../protocol/frames.ts';
import { Connection, FRAMES_BURST, FRAMES_PER_SECOND, SEND_QUEUE_MAX_BYTES } from '../../runner/connection.ts';
import type { SocketLike } from '../../runner/connection.ts';
import { fakeClock } from './_clock.ts';

/** An open socket that records what is sent, with the clock's time, until `close(code)` is called. */
function openSocket(time: () => number) {
  const handlers: Record<string, (...a: any[]) => void> = {};
  const sent: { at: number; frame: any }[] = [];
  const s = {
    readyState: 1,
    on(event: string, fn: (...a: any[]) => void) {
      handlers[event] = fn;
      return s;
    },
    send(text: string) {
      sent.push({ at: time(), frame: JSON.parse(text) });
    },
    close() {},
    terminate() {},
  };
  const close = (code: number) => {
    s.readyState = 3;
    handlers.close?.(code, Buffer.from(''));
  };
  return { socket: s as SocketLike, sent, close };
}

function connect() {
  const { clock, next, time } = fakeClock(() => 0.5);
  const sockets: ReturnType<typeof openSocket>[] = [];
  const conn = new Connection({
    server: 'http://127.0.0.1:9',
    token: 'svc_rt_test',
    clock,
    dial: () => {
      const s = openSocket(time);
      sockets.push(s);
      return s.socket;
    },
    onReady: () => {},
    onFrame: () => {},
    onInvalid: () => {},
    onFatal: () => {},
    onDown: () => {},
  });
  conn.start();
  return { conn, sockets, next, time };
}

const result = (n: number) => ({ type: 'result', requestId: `r${n}`, ok: true, data: { n } }) as const;

test('300 frames at once: 100 go at once, the rest at no more than 80 a second, in order, and the hub\'s own bucket never refuses one', async () => {
  const c = connect();
  const s = c.sockets[0]!;
  for (let i = 0; i < 300; i++) assert.ok(c.conn.send(result(i) as any), `frame ${i} accepted`);
  assert.is(s.sent.length, FRAMES_BURST, 'the burst goes at once');
  while (s.sent.length < 300) c.next();
  assert.equal(s.sent.map((x) => x.frame.requestId), Array.from({ length: 300 }, (_, i) => `r${i}`), 'in order, each once');
  const last = s.sent.at(-1)!.at;
  const expected = ((300 - FRAMES_BURST) / FRAMES_PER_SECOND) * 1000;
  assert.ok(last >= expected - 20 && last <= expected + 50, `the last frame at ${last} ms (expected about ${expected})`);
  // The hub's view: its bucket (100 a second, bursts of 200) takes every frame at its arrival time.
  let t = 0;
  const hub = tokenBucket(RUNNER_FRAMES_PER_SECOND, RUNNER_FRAMES_PER_SECOND * 2, () => t);
  for (const x of s.sent) {
    t = x.at;
    assert.ok(hub.take(), `the hub would drop the frame sent at ${x.at} ms`);
  }
  c.conn.stop();
});

test('frames waiting when the socket closes are not sent on the next socket; a new socket starts with a full budget', async () => {
  const c = connect();
  const first = c.sockets[0]!;
  for (let i = 0; i < 150; i++) c.conn.send(result(i) as any);
  assert.is(first.sent.length, FRAMES_BURST);
  first.close(1006);
  while (c.sockets.length < 2) c.next(); // the reconnect after its backoff
  const second = c.sockets[1]!;
  for (let i = 0; i < FRAMES_BURST; i++) c.conn.send(result(1000 + i) as any);
  assert.is(second.sent.length, FRAMES_BURST, 'a full burst on the new socket');
  assert.ok(second.sent.every((x) => x.frame.requestId.startsWith('r1')), 'nothing of the old queue');
  assert.is(first.sent.length, FRAMES_BURST, 'nothing more on the closed socket');
  c.conn.stop();
});

test('at most SEND_QUEUE_MAX_BYTES wait: a frame beyond them is refused (send returns false), as on a closed socket', async () => {
  const c = connect();
  const s = c.sockets[0]!;
  for (let i = 0; i < FRAMES_BURST; i++) c.conn.send(result(i) as any);
  const big = { type: 'term.output', channel: 'c'.repeat(16), data: 'x'.repeat(60 * 1024) } as const;
  const fits = Math.floor(SEND_QUEUE_MAX_BYTES / JSON.stringify(big).length);
  for (let i = 0; i < fits; i++) assert.ok(c.conn.send(big as any), `waiting frame ${i}`);
  assert.not.ok(c.conn.send(big as any), 'the queue is full');
  assert.is(s.sent.length, FRAMES_BURST);
  c.next(); // the budget refills: waiting frames go, and there is room again
  assert.ok(s.sent.length > FRAMES_BURST);
  assert.ok(c.conn.send(big as any));
  c.conn.stop();
});

test.run();
