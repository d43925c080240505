// The pages' reconnect delays (web-static/live.ts): 1 s doubling to 30 s, each ±20 % at random.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { backoffDelay } from '../../web-static/live.ts';

test('1 s, 2 s, 4 s … capped at 30 s; the jitter stays within ±20 %', () => {
  const mid = (n: number) => backoffDelay(n, () => 0.5);
  assert.equal([0, 1, 2, 3, 4, 5, 6, 20].map(mid), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  assert.is(backoffDelay(0, () => 0), 800);
  assert.is(backoffDelay(0, () => 0.999999), 1200);
  assert.is(backoffDelay(9, () => 0.999999), 36000);
  for (let n = 0; n < 12; n++) {
    const d = backoffDelay(n);
    const base = Math.min(30_000, 1000 * 2 ** n);
    assert.ok(d >= base * 0.8 && d <= base * 1.2, `attempt ${n}: ${d} ms`);
  }
});

test.run();
