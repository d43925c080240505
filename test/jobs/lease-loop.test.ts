// The lease loop (functions/lib/lease-loop.ts) alone, with hand-driven timers and a fake LISTEN: what
// wakes it, one pass at a time, "more work waiting", errors logged (once per database outage), and a
// stop that waits for the pass under way and leaves no timer.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Timers } from '../../functions/lib/clock.ts';
import { UNREACHABLE_CODE } from '../../functions/lib/db/unavailable.ts';
import { LeaseLoop } from '../../functions/lib/lease-loop.ts';
import type { LeaseLoopOptions } from '../../functions/lib/lease-loop.ts';
import { createLogger } from '../../functions/lib/log.ts';

function handTimers(): Timers & { pending: Map<number, () => void>; fire(): void } {
  let seq = 0;
  const pending = new Map<number, () => void>();
  return {
    pending,
    now: () => 0,
    setTimeout: (fn) => (pending.set(++seq, fn), seq),
    clearTimeout: (h) => void pending.delete(h as number),
    fire() {
      const [[id, fn]] = pending;
      pending.delete(id);
      fn();
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 10));

function loop(pass: LeaseLoopOptions['pass'], opts: Partial<LeaseLoopOptions> = {}) {
  const lines: string[] = [];
  const timers = handTimers();
  const l = new LeaseLoop({ log: createLogger('debug', {}, (line) => lines.push(line)), failed: 'test loop failed', everyMs: 1000, timers, pass, ...opts });
  return { l, lines, timers };
}

test('start runs a pass and arms the timer; each timer wake-up runs one; stop leaves no timer', async () => {
  let passes = 0;
  const { l, timers } = loop(async () => void passes++);
  await l.start();
  await settle();
  assert.is(passes, 1);
  assert.is(timers.pending.size, 1);
  timers.fire();
  await settle();
  assert.is(passes, 2);
  assert.is(timers.pending.size, 1, 're-armed');
  await l.stop();
  assert.is(timers.pending.size, 0);
  l.kick();
  await settle();
  assert.is(passes, 2, 'no pass after stop');
});

test('kicks count only once started, unless kickBeforeStart; passAtStart: false waits for the timer', async () => {
  let passes = 0;
  const a = loop(async () => void passes++, { passAtStart: false });
  a.l.kick();
  await settle();
  assert.is(passes, 0);
  await a.l.start();
  await settle();
  assert.is(passes, 0, 'no pass at start');
  a.l.kick();
  await settle();
  assert.is(passes, 1);
  await a.l.stop();
  const b = loop(async () => void passes++, { kickBeforeStart: true });
  b.l.kick();
  await settle();
  assert.is(passes, 2);
  await b.l.stop();
});

test('one pass at a time: kicks during a pass run one more after it; "more waiting" runs again at once', async () => {
  let release: () => void = () => {};
  let passes = 0;
  let running = 0;
  let most = 0;
  let more = 2;
  const { l } = loop(async () => {
    passes++;
    most = Math.max(most, ++running);
    if (passes === 1) await new Promise<void>((r) => (release = r));
    running--;
    return passes > 1 && more-- > 0;
  });
  await l.start();
  l.kick();
  l.kick();
  l.kick();
  release();
  await l.run();
  assert.is(most, 1);
  assert.is(passes, 4, 'the first, one for the kicks, two more while work was waiting');
  await l.stop();
});

test('stop() resolves once the pass under way ended', async () => {
  let release: () => void = () => {};
  const { l } = loop(() => new Promise<void>((r) => (release = r)));
  await l.start();
  let stopped = false;
  const stopping = l.stop().then(() => (stopped = true));
  await settle();
  assert.is(stopped, false);
  release();
  await stopping;
  assert.ok(l.stopped);
});

test('a failed pass is logged each time; while the database cannot be reached, once until a pass succeeds', async () => {
  let fail: unknown = new Error('disk on fire');
  const { l, lines, timers } = loop(async () => {
    if (fail) throw fail;
  });
  await l.start();
  await settle();
  timers.fire();
  await settle();
  assert.is(lines.filter((x) => x.includes('ERROR test loop failed error="disk on fire"')).length, 2);
  fail = Object.assign(new Error('gone'), { code: UNREACHABLE_CODE });
  for (let i = 0; i < 3; i++) (timers.fire(), await settle());
  assert.is(lines.filter((x) => x.includes('gone')).length, 1);
  fail = null;
  timers.fire();
  await settle();
  fail = Object.assign(new Error('gone'), { code: UNREACHABLE_CODE });
  timers.fire();
  await settle();
  assert.is(lines.filter((x) => x.includes('gone')).length, 2, 'the next outage is logged again');
  await l.stop();
});

test('NOTIFY and a LISTEN made again wake it, after their hooks; stop drops the LISTEN', async () => {
  const seen: string[] = [];
  let notice: (p: string) => void = () => {};
  let relisten: () => void = () => {};
  let unlistened = false;
  const db = {
    listen: async (channel: string, onPayload: (p: string) => void, onListen?: () => void) => {
      seen.push(`listen ${channel}`);
      notice = onPayload;
      relisten = onListen!;
      return async () => void (unlistened = true);
    },
  };
  const { l } = loop(async () => void seen.push('pass'), { listen: { db, channel: 'ch', onNotice: (p) => seen.push(`notice ${p}`), onRelisten: () => seen.push('relisten') } });
  await l.start();
  await settle();
  notice('due');
  await settle();
  relisten();
  await settle();
  assert.equal(seen, ['listen ch', 'pass', 'notice due', 'pass', 'relisten', 'pass']);
  await l.stop();
  assert.ok(unlistened);
});

test.run();
