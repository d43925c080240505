// Spare worktrees for pull request runs (docs/skill-runs.md, "Spare worktrees"; runner/runs/spares.ts):
// the real runner bundle, real tmux and real git. A finished run's worktree is reset and kept; the next
// run starts in it on its own branch from the current base, with nothing of the earlier run left.
// needs: tmux
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitUntil } from './_harness.ts';
import { PROFILES, skillFleet } from './_skills.ts';
import type { SkillFleet } from './_skills.ts';

let f: SkillFleet;
test.before.each(async () => {
  f = await skillFleet('spares');
  writeFileSync(join(f.root, '.gitignore'), 'build/\n');
  f.git(f.root, 'add', '-A');
  f.git(f.root, 'commit', '-q', '-m', 'ignore build output');
});
test.after.each(async () => {
  await f.cleanup();
});

const RUN_ENV = { SVC_RUNS_POLL_MS: '100', SVC_LOG: 'debug' };
const profiles = () => PROFILES(f.agentDir).map((p) => ({ ...p, env: { ...p.env, FAKE_LEAVE_IGNORED: '1' } }));
const spares = () => readdirSync(dirname(f.root)).filter((n) => n.startsWith('.wt-repo-spare.'));
const worktrees = () => f.git(f.root, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree ')).map((l) => l.slice(9));
const startOf = (runId: string) => f.agentStarts().find((a) => a.env.SVC_RUN_ID === runId);

async function prRun(skill = 'edit') {
  const r = (await f.conn!.command('skill.run', { projectId: 'p1', skill, output: 'pull_request' }, 30_000)).data;
  const final = (await f.waitState(r.runId, 'succeeded', 30_000)).payload;
  return { runId: r.runId as string, pr: final.result.pullRequest };
}

test("a finished run's worktree is kept as a spare; a later run starts in it on its own branch from the new base, with nothing of the earlier run (ignored files included)", async () => {
  await f.start({ profiles: profiles(), skills: { spareWorktrees: 1 } }, RUN_ENV);
  // skills.spareWorktrees is 1: the first run checks out anew and the pool is filled with one spare; the
  // run's own worktree is removed (the pool is full). The second run borrows the spare and leaves an
  // ignored build output in it; its worktree comes back reset, and the third run starts in it.
  const first = await prRun();
  const run1 = join(dirname(f.root), `.wt-repo-run-${first.runId}`);
  await waitUntil(() => spares().length === 1 && !existsSync(run1), 15_000, () => `one spare; saw ${JSON.stringify(spares())}`);
  const second = await prRun();
  assert.is(startOf(second.runId).cwd, join(dirname(f.root), `.wt-repo-run-${second.runId}`));
  assert.not.ok(startOf(second.runId).entries.includes('build'));
  await waitUntil(() => spares().length === 1 && !existsSync(join(dirname(f.root), `.wt-repo-run-${second.runId}`)), 15_000, () => `the second run's worktree kept; saw ${JSON.stringify(spares())}`);
  for (const s of spares()) {
    assert.is(f.git(join(dirname(f.root), s), 'status', '--porcelain', '--ignored'), '', `${s} is clean: no untracked or ignored file`);
    assert.not.ok(existsSync(join(dirname(f.root), s, 'build')), 'the ignored output is gone');
  }
  for (const r of [first, second]) assert.is(f.git(f.root, 'branch', '--list', `svc/run-${r.runId}`).trim(), `svc/run-${r.runId}`, 'the branches stay');

  // The base moves on before the third run.
  writeFileSync(join(f.root, 'NEXT.md'), 'a later commit\n');
  f.git(f.root, 'add', '-A');
  f.git(f.root, 'commit', '-q', '-m', 'later');
  const base = f.git(f.root, 'rev-parse', 'HEAD').trim();

  const third = await prRun();
  const agent = startOf(third.runId);
  assert.is(agent.cwd, join(dirname(f.root), `.wt-repo-run-${third.runId}`));
  assert.ok(agent.entries.includes('NEXT.md'), 'the worktree is at the new base');
  assert.not.ok(agent.entries.includes('build'), `no ignored file of an earlier run: ${JSON.stringify(agent.entries)}`);
  assert.not.ok(agent.entries.includes('src'), "no file of an earlier run's branch");
  assert.equal([third.pr.base, third.pr.branch, third.pr.commits, third.pr.files], [base, `svc/run-${third.runId}`, 1, 2]);
  const patch = f.readRunFile(third.runId, 'patch.diff') as string;
  assert.is(patch, f.git(f.root, 'diff', '--binary', '--no-color', base, third.pr.head), 'the patch holds this run only');
  assert.not.match(patch, /build\/out/);
  assert.is(f.git(f.root, 'rev-parse', `svc/run-${third.runId}^`).trim(), base, "the run's commit sits on the new base");
  assert.is(f.git(f.root, 'status', '--porcelain'), '', 'the main checkout is untouched');
  assert.not.match(f.daemon!.output(), /a spare worktree step failed/, 'no spare step failed');
});

test('a burst as large as the pool: every run borrows a spare made ahead, none checks out, and all come back', async () => {
  await f.start({ profiles: profiles(), skills: { spareWorktrees: 3, maxConcurrentRuns: 3 } }, RUN_ENV);
  await prRun();
  await waitUntil(() => spares().length === 3, 30_000, () => `the pool filled to 3; saw ${JSON.stringify(spares())}`);
  // A spare is moved into a run's place and back (renames): the same directories, so the same inodes.
  const inodes = () => spares().map((s) => statSync(join(dirname(f.root), s)).ino).sort();
  const before = inodes();
  const runs = await Promise.all([0, 1, 2].map(async () => (await f.conn!.command('skill.run', { projectId: 'p1', skill: 'edit', output: 'pull_request' }, 30_000)).data.runId as string));
  const base = f.git(f.root, 'rev-parse', 'HEAD').trim();
  for (const id of runs) {
    const pr = (await f.waitState(id, 'succeeded', 30_000)).payload.result.pullRequest;
    // The spares were at the base: the branch was made without a checkout, and the run's commit sits on it.
    assert.equal([pr.commits, pr.base, pr.branch], [1, base, `svc/run-${id}`]);
    assert.is(f.git(f.root, 'rev-parse', `svc/run-${id}^`).trim(), base);
  }
  await waitUntil(() => spares().length === 3 && runs.every((id) => !existsSync(join(dirname(f.root), `.wt-repo-run-${id}`))), 15_000, () => `all three back; saw ${JSON.stringify(spares())}`);
  assert.equal(inodes(), before, 'the three runs ran in the three spares, and no checkout was made for them');
  for (const id of runs) assert.not.ok(startOf(id).entries.includes('build'), 'each spare was clean');
});

test('skills.spareWorktrees 0: no spare, every run checks out anew and its worktree is removed', async () => {
  await f.start({ profiles: profiles(), skills: { spareWorktrees: 0 } }, RUN_ENV);
  const a = await prRun();
  const b = await prRun();
  assert.equal(spares(), []);
  assert.equal(worktrees(), [f.git(f.root, 'rev-parse', '--show-toplevel').trim()]);
  assert.not.ok(startOf(b.runId).entries.includes('build'));
  assert.equal([a.pr.commits, b.pr.commits], [1, 1]);
});

test("a spare left by an earlier daemon is removed at its project's next run; a run that changed nothing still leaves no branch", async () => {
  await f.start({ profiles: profiles() }, RUN_ENV);
  await prRun();
  await waitUntil(() => spares().length === 2, 15_000, 'two spares');
  for (const s of spares()) writeFileSync(join(dirname(f.root), s, 'stale.txt'), 'written after the daemon kept it\n');
  // A slot named spare-1 has the worktree .wt-repo-spare-1: it is not a spare, and stays.
  const slotWt = join(dirname(f.root), '.wt-repo-spare-1');
  f.git(f.root, 'worktree', 'add', '-q', '-b', 'svc/spare-1/issue-1', '--', slotWt);
  writeFileSync(join(slotWt, 'work.txt'), 'a worker is busy here\n');
  await f.daemon!.kill();
  await f.start({ profiles: profiles() }, RUN_ENV);
  const same = await prRun('echo');
  assert.not.ok(startOf(same.runId).entries.includes('stale.txt'), "the run did not get the earlier daemon's spare");
  assert.is(same.pr.commits, 0);
  assert.is(f.git(f.root, 'branch', '--list', `svc/run-${same.runId}`), '');
  await waitUntil(() => spares().length === 2, 15_000, () => `two spares again; saw ${JSON.stringify(spares())}`);
  for (const s of spares()) assert.not.ok(existsSync(join(dirname(f.root), s, 'stale.txt')), `${s}: the earlier daemon's spares are gone`);
  assert.ok(existsSync(join(slotWt, 'work.txt')), "the slot's worktree and its work stay");
  assert.ok(worktrees().every((w) => existsSync(w)), 'no worktree registered without its directory');
  assert.ok(worktrees().includes(slotWt));
});

test.run();
