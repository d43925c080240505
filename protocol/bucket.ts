// An in-memory token bucket: `take()` is true while the caller stays within `ratePerSecond` on average,
// with bursts up to `burst`. The hub bounds a runner's frames with it (a flood is dropped), the runner
// paces its own events frames with one (runner/daemon.ts), so that it never meets the hub's bound.
export interface TokenBucket {
  take: () => boolean;
  /** Milliseconds until `take()` would be true (0: now). */
  waitMs: () => number;
}

export function tokenBucket(ratePerSecond: number, burst: number, now: () => number = Date.now): TokenBucket {
  let tokens = burst;
  let refilled = now();
  const refill = () => {
    const t = now();
    tokens = Math.min(burst, tokens + ((t - refilled) / 1000) * ratePerSecond);
    refilled = t;
  };
  return {
    take: () => {
      refill();
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
    waitMs: () => {
      refill();
      return tokens >= 1 ? 0 : ((1 - tokens) / ratePerSecond) * 1000;
    },
  };
}
