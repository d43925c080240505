// functions/runners/rebalance.ts: how many runner sockets a server process asks to reconnect elsewhere.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runnersToMove } from '../../functions/runners/rebalance.ts';
import { seeded } from '../helpers/random.ts';

test('a single process never moves a runner', () => {
  assert.is(runnersToMove(20, 20, 1), 0);
  assert.is(runnersToMove(0, 0, 1), 0);
});

test('20 runners on 3 processes: those above the share of 7 move once a process holds more than 8', () => {
  assert.is(runnersToMove(17, 20, 3), 10);
  assert.is(runnersToMove(10, 20, 3), 3);
  assert.is(runnersToMove(9, 20, 3), 2);
  assert.is(runnersToMove(8, 20, 3), 0, 'one above the share stays: a move may land back');
  assert.is(runnersToMove(7, 20, 3), 0);
  assert.is(runnersToMove(0, 20, 3), 0);
});

test('few runners: one more than its share each is left alone', () => {
  assert.is(runnersToMove(2, 2, 3), 0);
  assert.is(runnersToMove(2, 3, 2), 0);
  assert.is(runnersToMove(3, 3, 3), 2);
  assert.is(runnersToMove(4, 4, 2), 2);
  assert.is(runnersToMove(0, 0, 3), 0);
});

test('100 runners on 2 of 3 processes after the third restarted: 16 move from each', () => {
  assert.is(runnersToMove(50, 100, 3), 16);
});

/** Rounds of every process moving up to `batch` runners, each placed on the least-loaded process (leastconn). */
function settle(loads: number[], batch: number): { loads: number[]; rounds: number; moved: number } {
  const live = loads.reduce((a, b) => a + b, 0);
  let moved = 0;
  for (let round = 1; round <= 50; round++) {
    const moving = loads.map((held) => Math.min(batch, runnersToMove(held, live, loads.length)));
    if (moving.every((m) => m === 0)) return { loads, rounds: round - 1, moved };
    loads = loads.map((held, i) => held - moving[i]);
    for (let n = moving.reduce((a, b) => a + b, 0); n > 0; n--, moved++) loads[loads.indexOf(Math.min(...loads))]++;
  }
  throw new Error(`no balance after 50 rounds: ${loads.join(', ')}`);
}

test('after a process joins, the moves leave every process within one of its share, moving no more than needed', () => {
  assert.equal(settle([10, 10, 0], 4), { loads: [7, 7, 6], rounds: 1, moved: 6 });
  assert.equal(settle([17, 3, 0], 4).loads.sort(), [6, 7, 7]);
  const rand = seeded(33);
  for (let i = 0; i < 500; i++) {
    const n = 2 + Math.floor(rand() * 4);
    const loads = Array.from({ length: n }, () => Math.floor(rand() * 40));
    loads[Math.floor(rand() * n)] = 0; // the process that joined
    const live = loads.reduce((a, b) => a + b, 0);
    const share = Math.ceil(live / n);
    const out = settle([...loads], 4);
    for (const held of out.loads) assert.ok(held <= share + 1, `${loads.join(',')} → ${out.loads.join(',')}`);
    const above = loads.reduce((sum, held) => sum + Math.max(0, held - share), 0);
    assert.ok(out.moved <= above, `${loads.join(',')}: moved ${out.moved}, ${above} were above the share`);
  }
});

test.run();
