// An in-memory token bucket for bounding message floods on one socket: `take()` is true while the
// sender stays within `ratePerSecond` on average, with bursts up to `burst`.
export function tokenBucket(ratePerSecond: number, burst: number, now: () => number = Date.now): { take: () => boolean } {
  let tokens = burst;
  let refilled = now();
  return {
    take: () => {
      const t = now();
      tokens = Math.min(burst, tokens + ((t - refilled) / 1000) * ratePerSecond);
      refilled = t;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
  };
}
