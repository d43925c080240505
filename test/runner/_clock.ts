// A clock for the runner's Connection whose timers run only when a test advances it
// (test/runner/backoff.test.ts, connection.test.ts).
import * as assert from 'uvu/assert';
import type { Clock } from '../../runner/connection.ts';

/** A clock whose timers run only when the test advances it; `random` is what the test says. */
export function fakeClock(random: () => number) {
  let now = 0;
  const timers: { at: number; fn: () => void; ms: number }[] = [];
  const clock: Clock = {
    now: () => now,
    random,
    setTimeout: (fn, ms) => {
      const t = { at: now + ms, fn, ms };
      timers.push(t);
      return t;
    },
    clearTimeout: (h) => {
      const i = timers.indexOf(h as never);
      if (i >= 0) timers.splice(i, 1);
    },
  };
  /** Run the earliest timer; returns its delay. */
  const next = (): number => {
    timers.sort((a, b) => a.at - b.at);
    const t = timers.shift();
    assert.ok(t, 'a timer is pending');
    now = t!.at;
    t!.fn();
    return t!.ms;
  };
  return { clock, next, pending: () => timers.length, time: () => now };
}
