// project.inspect and project.refresh through the real runner bundle on real git repositories:
// remote (credentials removed), default branch, HEAD, dirty state, worktrees; and path confinement —
// `..`, relative paths, paths outside the roots, symlinks pointing out, foreign `.wt-*` siblings.
import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFakeServer } from './_fake-server.ts';
import type { FakeConn, FakeServer } from './_fake-server.ts';
import { killDaemons, pairedConfig, sandbox, startDaemon } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let fake: FakeServer;
let sb: Sandbox;
let conn: FakeConn;
let root: string;
let work: string;

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, encoding: 'utf8' }).trim();

test.before(async () => {
  fake = await startFakeServer();
  sb = sandbox();
  work = join(sb.dir, 'work');
  root = join(work, 'widgets');
  mkdirSync(root, { recursive: true });
  git(root, 'init', '-q', '-b', 'trunk');
  writeFileSync(join(root, 'a.txt'), 'a\n');
  git(root, 'add', '.');
  git(root, 'commit', '-qm', 'first commit');
  git(root, 'remote', 'add', 'origin', 'https://x-access-token:ghs_SECRET@github.example/acme/widgets.git');
  git(root, 'worktree', 'add', '-q', '-b', 'svc/a/issue-1', join(work, '.wt-widgets-a'));
  git(root, 'worktree', 'add', '-q', '-b', 'elsewhere', join(sb.dir, 'elsewhere-tree'));
  writeFileSync(join(root, 'dirty.txt'), 'not committed\n');
  mkdirSync(join(work, '.wt-other-x'), { recursive: true });
  mkdirSync(join(work, '.wt-widgets-b'), { recursive: true });
  mkdirSync(join(sb.dir, 'outside'), { recursive: true });
  symlinkSync(join(sb.dir, 'outside'), join(root, 'link-out'));
  fake.options.projects = [{ id: 'p1', root }];
  sb.writeConfig(pairedConfig(fake.url));
  startDaemon(sb);
  conn = await fake.waitConns(1);
  await conn.next('hello');
});
test.after(async () => {
  await killDaemons();
  await fake.stop();
  sb.cleanup();
});

test('project.refresh: remote without credentials, default branch, HEAD, dirty state, own worktrees only', async () => {
  const r = await conn.command('project.refresh', { projectId: 'p1' });
  assert.is(r.ok, true, JSON.stringify(r));
  const d = r.data;
  assert.is(d.projectId, 'p1');
  assert.is(d.root, realpathSync(root));
  assert.equal(d.remote, { name: 'origin', url: 'https://github.example/acme/widgets.git' });
  assert.not.match(JSON.stringify(d), /ghs_SECRET/);
  assert.is(d.defaultBranch, 'trunk');
  assert.is(d.branch, 'trunk');
  assert.is(d.head, git(root, 'rev-parse', 'HEAD'));
  assert.is(d.lastCommit.subject, 'first commit');
  assert.equal([d.dirty, d.changes], [true, 2], 'dirty.txt and the link-out symlink are untracked');
  assert.equal(
    d.worktrees.map((w: any) => [w.main, w.slot, w.branch]),
    [
      [true, null, 'trunk'],
      [false, 'a', 'svc/a/issue-1'],
    ],
  );
  assert.is(d.otherWorktrees, 1, 'a worktree outside the siblings is counted, not shown');
});

test('project.inspect: a repository top directory is read; everything else is refused with a clear code', async () => {
  const ok = await conn.command('project.inspect', { path: root });
  assert.is(ok.ok, true, JSON.stringify(ok));
  assert.is(ok.data.head, git(root, 'rev-parse', 'HEAD'));
  const wt = await conn.command('project.inspect', { path: join(work, '.wt-widgets-a') });
  assert.is(wt.ok, true, 'a .wt-<repo>-* sibling worktree is a repository top too');

  const code = async (path: string) => {
    const r = await conn.command('project.inspect', { path });
    assert.is(r.ok, false, `${path} should be refused`);
    return r.error.code;
  };
  assert.is(await code(`${root}/../widgets`), 'invalid_args', '.. is refused by the schema');
  assert.is(await code('work/widgets'), 'invalid_args', 'a relative path is refused');
  assert.is(await code(join(root, 'link-out')), 'path_not_allowed', 'a symlink out of the root is judged by its target');
  assert.is(await code(join(sb.dir, 'outside')), 'path_not_allowed');
  assert.is(await code(join(work, '.wt-other-x')), 'path_not_allowed', "another repository's sibling name");
  assert.is(await code(join(work, '.wt-widgets-b')), 'not_a_repository', 'an own sibling that is no worktree');
  assert.is(await code(join(root, 'no-such-dir')), 'not_a_repository');
  const missing = await conn.command('project.refresh', { projectId: 'nope' });
  assert.equal([missing.ok, missing.error.code], [false, 'unknown_project']);
});

test.run();
