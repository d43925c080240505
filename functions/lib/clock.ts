// The clock, injected where timing matters (STYLE: "Inject the clock"), so tests are exact without sleeping.
// Unit tests pass their own; black-box tests of the server can shift the server's clock with
// TEST_CLOCK_OFFSET_SECONDS, which is honoured only when NODE_ENV=test (README, Configuration).
export interface Clock {
  /** Milliseconds since the epoch, like Date.now(). */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** The server's clock: the system clock, shifted by TEST_CLOCK_OFFSET_SECONDS in a test run only. */
export function serverClock(offsetSeconds: number, nodeEnv = process.env.NODE_ENV): Clock {
  if (!offsetSeconds || nodeEnv !== 'test') return systemClock;
  return { now: () => Date.now() + offsetSeconds * 1000 };
}
