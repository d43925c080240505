// A reached cost cap on the runner (docs/cost.md "Caps"; runner/commands/slot.ts), with the real runner
// bundle, real tmux and git and the fake agent: slot.stop with a hold kills the worker, keeps the
// worktree (and a file written in it) and holds the issue — slot-start refuses it (issue_held) — and
// slot.resume lifts the hold and starts the worker again in the same worktree, on the same branch.
// needs: tmux
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentRuns, fleet } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { runCli, waitUntil } from './_harness.ts';

let f: Fleet;
test.before.each(async () => {
  f = await fleet('resume');
});
test.after.each(async () => {
  await f.cleanup();
});

test('slot.stop with a hold keeps the worktree and holds the issue; slot-start refuses it; slot.resume continues in the same worktree', async () => {
  // Two profiles: the worker runs on the second, and comes back on it.
  const conn = await f.start({ profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: f.agentDir }, args: [] }, { id: 'cx', runtime: 'codex', env: { FAKE_AGENT_DIR: f.agentDir }, args: [] }] });
  const cli = await runCli(f.sb, ['slot-start', 'a', '--issue', '9', '--profile', 'cx', '--project-root', f.root], f.env);
  assert.is(cli.status, 0, cli.stderr);
  const wt = join(dirname(f.root), '.wt-repo-a');
  await waitUntil(() => agentRuns(f.agentDir).length === 1, 5000, 'the worker to start');
  writeFileSync(join(wt, 'work-in-progress.txt'), 'half done\n');

  const stop = await conn.command('slot.stop', { projectId: 'p1', slot: 'a', hold: { issue: 9, reason: 'cap' } });
  assert.equal(stop.data, { stopped: true, session: 'svc-p1-slot-a', slot: 'a', held: 9 });
  assert.equal(f.sessions(), []);
  const hold = JSON.parse(readFileSync(join(f.root, '.svc', 'held', '9.json'), 'utf8'));
  assert.equal([hold.reason, hold.profile], ['cap', 'cx'], 'the hold keeps the profile the worker had');
  assert.equal(f.git(f.root, 'status', '--porcelain'), '', 'the hold is in .svc/, ignored by git');

  // The orchestrator's next round cannot hand the held issue out again (to this slot or another).
  for (const slot of ['a', 'b']) {
    const again = await runCli(f.sb, ['slot-start', slot, '--issue', '9', '--project-root', f.root], f.env);
    assert.is(again.status, 1);
    assert.match(again.stderr, /issue #9 is held/);
  }
  assert.equal(f.sessions(), []);

  const resumed = await conn.command('slot.resume', { projectId: 'p1', slot: 'a', issue: 9 });
  assert.is(resumed.ok, true, JSON.stringify(resumed));
  assert.equal(resumed.data, { resumed: true, session: 'svc-p1-slot-a', slot: 'a', issue: 9, worktree: wt });
  assert.equal(f.sessions(), ['svc-p1-slot-a']);
  assert.not.ok(existsSync(join(f.root, '.svc', 'held', '9.json')));
  await waitUntil(() => agentRuns(f.agentDir).length === 2, 5000, 'the worker to start again');
  const run = agentRuns(f.agentDir)[1];
  assert.is(run.cwd, wt);
  assert.equal([run.env.SVC_SLOT, run.env.SVC_ISSUE], ['a', '9']);
  assert.is(run.env.FAKE_RUNTIME, 'codex', 'the same profile as before the stop');
  assert.match(run.argv.join(' '), /go on with issue #9 in this worktree where you left off/);
  assert.is(readFileSync(join(wt, 'work-in-progress.txt'), 'utf8'), 'half done\n', 'the same worktree, its files kept');
  assert.is(f.git(wt, 'symbolic-ref', '--short', 'HEAD').trim(), 'svc/a/issue-9');
  await waitUntil(() => f.events('slot.dispatched').some((e) => e.payload.data?.resumed === true), 5000, 'slot.dispatched (resumed) from events.jsonl');

  const busy = await conn.command('slot.resume', { projectId: 'p1', slot: 'a', issue: 9 });
  assert.equal([busy.ok, busy.error.code], [false, 'already_running']);
  const none = await conn.command('slot.resume', { projectId: 'p1', slot: 'zz', issue: 9 });
  assert.equal([none.ok, none.error.code], [false, 'unknown_slot']);
});

test.run();
