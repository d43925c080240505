// The pull request state's transitions (functions/codehost/pulls.ts transition(), a pure function): what
// an observation emits given the stored row, as the runner's changes.ts defines pr.* events — checks
// reaching a result, the same result on a new head, restarted, a stale check of an older commit, a
// pull request first seen other than opening, the runner numbering a later opening.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runnerObservation, transition } from '../../functions/codehost/pulls.ts';
import type { ChecksSeen, Observation } from '../../functions/codehost/pulls.ts';

type Row = NonNullable<ReturnType<typeof transition>>['next'];
const ts = new Date('2026-01-01T00:00:00Z');
const app = (o: Partial<Observation>): Observation => ({ source: 'app', number: 7, ts, ...o });
const runner = (o: Partial<Observation>): Observation => ({ source: 'runner', number: 7, ts, ...o });

/** Apply observations in order from nothing: the emitted `type[:state]` and the last row. */
function run(...obs: Observation[]): { emitted: string[]; row: Row | null } {
  let row: Row | null = null;
  const emitted: string[] = [];
  for (const o of obs) {
    const t = transition(row, o);
    if (!t) continue;
    row = t.next;
    emitted.push(...t.emits.map((e) => (e.type === 'pr.checks_changed' ? `${e.type}:${e.data.state}` : e.type)));
  }
  return { emitted, row };
}

const opened = app({ state: 'open', opening: true, sha: 'a'.repeat(40), updatedAt: '2026-01-01T10:00:00Z' });
const checks = (state: ChecksSeen, sha = 'a'.repeat(40), at = '2026-01-01T10:05:00Z') =>
  app({ checks: { state, summary: `${state}`, sha, at } });

test('checks: pending from nothing is no event; passed once; the same again nothing; failed; back to pending is restarted', () => {
  const { emitted, row } = run(opened, checks('pending'), checks('passed'), checks('passed'), checks('failed'), checks('pending'), runner({ checks: { state: 'restarted', summary: null } }));
  assert.equal(emitted, ['pr.opened', 'pr.checks_changed:passed', 'pr.checks_changed:failed', 'pr.checks_changed:restarted']);
  assert.equal([row!.checks, row!.check_seq], ['pending', 3]);
});

test('the same result on a new head commit is a new event; a check of an older commit after the head moved is not', () => {
  const b = 'b'.repeat(40);
  const pushed = app({ state: 'open', sha: b, updatedAt: '2026-01-01T11:00:00Z' });
  const { emitted } = run(opened, checks('passed'), pushed, checks('failed', 'a'.repeat(40), '2026-01-01T10:30:00Z'), checks('passed', b, '2026-01-01T11:10:00Z'));
  assert.equal(emitted, ['pr.opened', 'pr.checks_changed:passed', 'pr.checks_changed:passed']);
});

test('the runner agreeing after a delivery (no head in its events) → nothing; checks of a closed pull request → nothing', () => {
  const { emitted } = run(opened, checks('passed'), runner({ checks: { state: 'passed', summary: null }, runnerOpens: 1 }), app({ state: 'closed', updatedAt: '2026-01-01T12:00:00Z' }), checks('failed'));
  assert.equal(emitted, ['pr.opened', 'pr.checks_changed:passed', 'pr.closed']);
});

test('first seen through a delivery other than opened → recorded without pr.opened; the runner numbering a later opening reopens', () => {
  const { emitted, row } = run(app({ state: 'open', opening: false, updatedAt: '2026-01-01T10:00:00Z' }), runner({ state: 'open', runnerOpens: 1 }), runner({ state: 'open', runnerOpens: 2 }));
  assert.equal(emitted, ['pr.opened']);
  assert.is(row!.opens, 2);
  // A close numbering the older opening is stale; the current one's is not.
  const after = transition(row, runner({ state: 'closed', runnerOpens: 1 }));
  assert.is(after, null);
  assert.equal(transition(row, runner({ state: 'merged', runnerOpens: 2 }))!.emits.map((e) => e.type), ['pr.merged']);
});

test('runner only: the same result on a new head is a new event because its pr.checks_changed names the head; the same event again is nothing', () => {
  // As the poll's events arrive (runner/codehost/changes.ts ids and data), read by runnerObservation.
  let seq = 0;
  const polled = (state: ChecksSeen, sha: string) =>
    runnerObservation({ id: `gh.p1.7.1.checks.${++seq}`, kind: 'pr.checks_changed', ts: ts.toISOString(), payload: { project: 'p1', data: { pr: { number: 7, url: 'https://github.com/acme/app/pull/7' }, state, summary: state, sha } } }, 'p1')!;
  const a = 'a'.repeat(40);
  const b = 'b'.repeat(40);
  const { emitted } = run(runner({ state: 'open', runnerOpens: 1 }), polled('passed', a), polled('passed', a), polled('passed', b));
  assert.equal(emitted, ['pr.opened', 'pr.checks_changed:passed', 'pr.checks_changed:passed']);
});

test.run();
