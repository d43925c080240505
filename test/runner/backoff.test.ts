// The runner's reconnect backoff (spec: Runner connection; Limits: 1 s to 60 s, exponential), through
// the Connection itself with an injected clock and socket factory: every socket closes at once with
// 1006, so each reconnect waits one backoff step. The cap holds however long the outage, and over many
// draws each delay stays within ±20 % of its step (clipped to 1 s … 60 s) and uses the whole band.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, Connection, backoffDelay } from '../../runner/connection.ts';
import type { SocketLike } from '../../runner/connection.ts';
import { fakeClock } from './_clock.ts';

/** A socket that closes with `code` as soon as the connection has listened for it. */
function closingSocket(code: number): SocketLike {
  const handlers: Record<string, (...a: any[]) => void> = {};
  const s = {
    readyState: 3,
    on(event: string, fn: (...a: any[]) => void) {
      handlers[event] = fn;
      if (event === 'close') queueMicrotask(() => fn(code, Buffer.from('')));
      return s;
    },
    send() {},
    close() {},
    terminate() {},
  };
  return s as SocketLike;
}

/** Drive `rounds` failed connects; the delays the connection waited and reported. */
async function outage(rounds: number, random: () => number): Promise<{ waited: number[]; reported: number[]; dials: number }> {
  const { clock, next } = fakeClock(random);
  const reported: number[] = [];
  let dials = 0;
  const conn = new Connection({
    server: 'http://127.0.0.1:9',
    token: 'svc_rt_test',
    clock,
    dial: () => (dials++, closingSocket(1006)),
    onReady: () => {},
    onFrame: () => {},
    onInvalid: () => {},
    onFatal: () => assert.unreachable('1006 is not final'),
    onDown: (_code, _reason, retryInMs) => reported.push(retryInMs),
  });
  conn.start();
  const waited: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await new Promise((r) => queueMicrotask(() => r(null)));
    waited.push(next());
  }
  conn.stop();
  return { waited, reported, dials };
}

test('the schedule doubles from 1 s and is capped at 60 s, however long the outage (injected clock)', async () => {
  const { waited, reported, dials } = await outage(40, () => 0.5);
  assert.equal(waited, reported, 'the delay reported is the delay waited');
  assert.equal(waited.slice(0, 8), [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
  assert.ok(waited.every((ms) => ms <= BACKOFF_MAX_MS && ms >= BACKOFF_MIN_MS));
  assert.equal(waited.slice(6), Array(34).fill(60000), 'it stays at the cap');
  assert.is(dials, 41, 'one dial per wait, plus the first');
});

test('with the largest jitter the cap still holds: never more than 60 s', async () => {
  const { waited } = await outage(30, () => 0.999999);
  assert.equal(waited.slice(0, 6), [1200, 2400, 4800, 9600, 19200, 38400]);
  assert.equal(waited.slice(6), Array(24).fill(60000));
  const low = await outage(30, () => 0);
  assert.equal(low.waited.slice(0, 6), [1000, 1600, 3200, 6400, 12800, 25600], 'the smallest jitter, never under 1 s');
  assert.equal(low.waited.slice(6), Array(24).fill(48000), '60 s − 20 % at the cap');
});

/** A socket that is welcomed (the connection becomes ready) and then closes with `code`. */
function welcomedSocket(code: number): SocketLike {
  const handlers: Record<string, (...a: any[]) => void> = {};
  const s = {
    readyState: 1,
    on(event: string, fn: (...a: any[]) => void) {
      handlers[event] = fn;
      if (event === 'close')
        queueMicrotask(() => {
          handlers.open();
          const welcome = { type: 'welcome', runnerId: 'r1', serverTime: new Date(0).toISOString(), projects: [] };
          handlers.message(Buffer.from(JSON.stringify(welcome)), false);
          fn(code, Buffer.from(''));
        });
      return s;
    },
    send() {},
    close() {},
    terminate() {},
  };
  return s as SocketLike;
}

test('a graceful server restart (1012 on a ready connection) resets the backoff to its first step; a lost socket (1006, kill -9) keeps growing it', async () => {
  const { clock, next } = fakeClock(() => 0.5);
  const reported: { code: number; ms: number }[] = [];
  let ready = 0;
  // Five failed dials (1006), a welcomed connection the server closes with 1012, two failures, then
  // a welcomed connection lost without a close frame (1006: a killed server), then one more failure.
  const script = [1006, 1006, 1006, 1006, 1006, 'w1012', 1006, 1006, 'w1006', 1006];
  let dials = 0;
  const conn = new Connection({
    server: 'http://127.0.0.1:9',
    token: 'svc_rt_test',
    clock,
    dial: () => {
      const step = script[dials++] ?? 1006;
      return typeof step === 'string' ? welcomedSocket(Number(step.slice(1))) : closingSocket(step);
    },
    onReady: () => ready++,
    onFrame: () => {},
    onInvalid: () => {},
    onFatal: () => assert.unreachable('1006 and 1012 are not final'),
    onDown: (code, _reason, retryInMs) => reported.push({ code, ms: retryInMs }),
  });
  conn.start();
  for (let i = 0; i < script.length; i++) {
    await new Promise((r) => setImmediate(r));
    next();
  }
  await new Promise((r) => setImmediate(r));
  conn.stop();
  assert.is(ready, 2);
  assert.equal(
    reported.map((r) => `${r.code}:${r.ms}`),
    ['1006:1000', '1006:2000', '1006:4000', '1006:8000', '1006:16000', '1012:1000', '1006:2000', '1006:4000', '1006:8000', '1006:16000', '1006:32000'],
  );
});

test('1012 resets to the first step with its jitter (±20 %), never more than 1.2 s', async () => {
  for (const random of [0, 0.25, 0.999999]) {
    const { clock, next } = fakeClock(() => random);
    const reported: number[] = [];
    let dials = 0;
    const conn = new Connection({
      server: 'http://127.0.0.1:9',
      token: 'svc_rt_test',
      clock,
      dial: () => (dials++ < 6 ? closingSocket(1006) : welcomedSocket(1012)),
      onReady: () => {},
      onFrame: () => {},
      onInvalid: () => {},
      onFatal: () => assert.unreachable('not final'),
      onDown: (_code, _reason, ms) => reported.push(ms),
    });
    conn.start();
    for (let i = 0; i < 7; i++) {
      await new Promise((r) => setImmediate(r));
      next();
    }
    await new Promise((r) => setImmediate(r));
    conn.stop();
    assert.ok(reported[5] > 20_000, `grown before the restart: ${reported[5]}`);
    assert.is(reported[6], backoffDelay(0, random));
    assert.ok(reported[6] >= 1000 && reported[6] <= 1200);
  }
});

test('jitter: over many draws each delay is within ±20 % of its step (clipped to 1 s … 60 s) and spans the band', () => {
  for (let attempt = 0; attempt < 12; attempt++) {
    const step = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** attempt);
    const lo = Math.max(BACKOFF_MIN_MS, Math.round(step * 0.8));
    const hi = Math.min(BACKOFF_MAX_MS, Math.round(step * 1.2));
    let min = Infinity;
    let max = -Infinity;
    let sum = 0;
    const n = 5000;
    for (let i = 0; i < n; i++) {
      const d = backoffDelay(attempt, Math.random());
      assert.ok(d >= lo && d <= hi, `attempt ${attempt}: ${d} within [${lo}, ${hi}]`);
      min = Math.min(min, d);
      max = Math.max(max, d);
      sum += d;
    }
    // The band is used: the draws come within 2 % of the step to both of its ends.
    assert.ok(min - lo <= step * 0.02, `attempt ${attempt}: smallest ${min} near ${lo}`);
    assert.ok(hi - max <= step * 0.02, `attempt ${attempt}: largest ${max} near ${hi}`);
    if (step * 1.2 <= BACKOFF_MAX_MS && step * 0.8 >= BACKOFF_MIN_MS) {
      assert.ok(Math.abs(sum / n - step) < step * 0.02, `attempt ${attempt}: the mean ${sum / n} is about the step ${step}`);
    }
  }
});

test.run();
