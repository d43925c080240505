// The clock, injected where timing matters (STYLE: "Inject the clock"), so tests are exact without sleeping.
// Unit tests pass their own; black-box tests of the server can shift the server's clock with
// TEST_CLOCK_OFFSET_SECONDS, which is honoured only when NODE_ENV=test (README, Configuration).
export interface Clock {
  /** Milliseconds since the epoch, like Date.now(). */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** The clock and its timers, injected where a test drives the timers by hand (jobs/scheduler.ts, lib/lease-loop.ts). */
export interface Timers extends Clock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Real timers; none of them keeps the process alive. */
export const systemTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The server's clock: the system clock, shifted by TEST_CLOCK_OFFSET_SECONDS in a test run only. */
export function serverClock(offsetSeconds: number, nodeEnv = process.env.NODE_ENV): Clock {
  if (!offsetSeconds || nodeEnv !== 'test') return systemClock;
  return { now: () => Date.now() + offsetSeconds * 1000 };
}
