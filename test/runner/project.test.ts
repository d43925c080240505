// project.inspect and project.refresh (spec: Server commands to a runner; DESIGN §3) through the real
// runner bundle, commanded by the fake server, on real git repositories: a bare remote whose HEAD is
// `main` while the checkout is on a feature branch, credentials in remote URLs, a slot worktree
// `.wt-<repo>-slot1` beside the root, a worktree elsewhere, a dirty file.
//
// Which paths project.inspect may read (runner/commands/project.ts): it is admin-only on the server
// and reads a repository BEFORE it is connected, so its path cannot be required to be a registered
// root yet. It therefore reads the top directory of any git work tree (git metadata only, never file
// contents), and refuses everything else: `path_not_allowed` outside the registered roots and their
// `.wt-<repo>-*` siblings — the same answer whether such a path exists or not — and
// `not_a_repository` inside them. Paths are judged after resolving symlinks; `..`, relative paths and
// NUL are refused by the shared argument schema (`invalid_args`) before the runner looks at them.
// project.refresh takes a project id; the root comes from the watch list the server sent.
// needs: git
import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFakeServer } from './_fake-server.ts';
import type { FakeConn, FakeServer } from './_fake-server.ts';
import { killDaemons, pairedConfig, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Daemon, Sandbox } from './_harness.ts';

let fake: FakeServer;
let sb: Sandbox;
let conn: FakeConn;
let daemon: Daemon;
let work: string;
let root: string;
let slot1: string;
let stranger: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', '-c', 'init.defaultBranch=main', ...args], { cwd, encoding: 'utf8' }).trim();

test.before(async () => {
  fake = await startFakeServer();
  sb = sandbox();
  work = join(sb.dir, 'work');
  root = join(work, 'widgets');
  slot1 = join(work, '.wt-widgets-slot1');
  const remote = join(sb.dir, 'remote.git');
  mkdirSync(root, { recursive: true });
  git(sb.dir, 'init', '-q', '--bare', remote);
  git(root, 'init', '-q');
  writeFileSync(join(root, 'README.md'), '# widgets\n');
  git(root, 'add', '.');
  git(root, 'commit', '-qm', 'initial import');
  git(root, 'remote', 'add', 'origin', remote);
  git(root, 'push', '-q', '-u', 'origin', 'main');
  git(root, 'remote', 'set-head', 'origin', 'main');
  git(root, 'remote', 'add', 'mirror', 'https://x-access-token:ghs_MIRROR_SECRET@github.example/acme/widgets.git');
  git(root, 'remote', 'add', 'backup', 'ssh://git:SSH_SECRET@backup.example:2222/acme/widgets.git');
  git(root, 'remote', 'add', 'upstream', 'git@github.example:acme/widgets.git');
  git(root, 'checkout', '-qb', 'feature/x');
  writeFileSync(join(root, 'src.txt'), 'one\n');
  git(root, 'add', '.');
  git(root, 'commit', '-qm', 'add src');
  git(root, 'worktree', 'add', '-q', '-b', 'svc/slot1/issue-7', slot1, 'main');
  git(root, 'worktree', 'add', '-q', '-b', 'elsewhere', join(sb.dir, 'elsewhere'), 'main');

  // Around the root: another repository with its own sibling, plain directories, links pointing out.
  stranger = join(work, 'other');
  mkdirSync(stranger);
  git(stranger, 'init', '-q');
  git(stranger, 'commit', '-q', '--allow-empty', '-m', 'other');
  git(stranger, 'worktree', 'add', '-q', '-b', 'x', join(work, '.wt-other-x'));
  mkdirSync(join(work, '.wt-other-plain'));
  mkdirSync(join(work, '.wt-widgets-plain'));
  mkdirSync(join(sb.dir, 'outside'));
  symlinkSync(join(sb.dir, 'outside'), join(root, 'link-out'));
  symlinkSync(join(work, '.wt-other-plain'), join(root, 'link-sibling'));
  writeFileSync(join(root, '.git', 'info', 'exclude'), 'link-*\n');

  fake.options.projects = [{ id: 'widgets', root }];
  sb.writeConfig(pairedConfig(fake.url, { otlp: { enabled: false } }));
  daemon = startDaemon(sb);
  conn = await fake.waitConns(1);
  await conn.next('hello');
});
test.after(async () => {
  await killDaemons();
  await fake.stop();
  sb.cleanup();
});

async function ok(name: string, args: unknown) {
  const r = await conn.command(name, args);
  assert.is(r.ok, true, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.error)}\n${daemon.output().slice(-2000)}`);
  return r.data;
}
async function refused(name: string, args: unknown): Promise<{ code: string; message: string }> {
  const r = await conn.command(name, args);
  assert.is(r.ok, false, `${name} ${JSON.stringify(args)} should be refused, got ${JSON.stringify(r.data)?.slice(0, 300)}`);
  return r.error;
}

test('project.refresh: remote and default branch from origin, HEAD, branch, last commit, clean state, own worktrees only', async () => {
  const d = await ok('project.refresh', { projectId: 'widgets' });
  assert.is(d.projectId, 'widgets');
  assert.is(d.root, realpathSync(root));
  assert.equal(d.remote, { name: 'origin', url: join(sb.dir, 'remote.git') });
  assert.is(d.defaultBranch, 'main', "origin's HEAD, not the checked-out branch");
  assert.is(d.branch, 'feature/x');
  assert.is(d.head, git(root, 'rev-parse', 'HEAD'));
  assert.equal([d.lastCommit.sha, d.lastCommit.subject], [d.head, 'add src']);
  assert.ok(!Number.isNaN(Date.parse(d.lastCommit.time)));
  assert.equal([d.dirty, d.changes], [false, 0]);
  assert.equal(
    d.worktrees.map((w: any) => [w.path, w.main, w.slot, w.branch, w.head]),
    [
      [realpathSync(root), true, null, 'feature/x', d.head],
      [realpathSync(slot1), false, 'slot1', 'svc/slot1/issue-7', git(root, 'rev-parse', 'main')],
    ],
  );
  assert.is(d.otherWorktrees, 1, 'the worktree outside the .wt-widgets-* siblings is counted, not shown');
});

test('credentials never leave the runner: http(s) user and password, ssh password; the ssh and scp-like user stays', async () => {
  const d = await ok('project.refresh', { projectId: 'widgets' });
  const urls = Object.fromEntries(d.remotes.map((r: any) => [r.name, r.url]));
  assert.equal(urls, {
    backup: 'ssh://git@backup.example:2222/acme/widgets.git',
    mirror: 'https://github.example/acme/widgets.git',
    origin: join(sb.dir, 'remote.git'),
    upstream: 'git@github.example:acme/widgets.git',
  });
  assert.not.match(JSON.stringify(d), /SECRET/);
});

test('project.refresh re-reads: a modified and an untracked file make it dirty; committing cleans it', async () => {
  writeFileSync(join(root, 'src.txt'), 'two\n');
  writeFileSync(join(root, 'new.txt'), 'new\n');
  const dirty = await ok('project.refresh', { projectId: 'widgets' });
  assert.equal([dirty.dirty, dirty.changes], [true, 2]);
  git(root, 'add', 'src.txt', 'new.txt');
  git(root, 'commit', '-qm', 'more');
  const clean = await ok('project.refresh', { projectId: 'widgets' });
  assert.equal([clean.dirty, clean.changes, clean.lastCommit.subject], [false, 0, 'more']);
  assert.is.not(clean.head, dirty.head);
});

test('project.refresh: an unknown project → unknown_project; a project added by a projects frame is refreshed, until removed again', async () => {
  const unknown = await refused('project.refresh', { projectId: 'other' });
  assert.is(unknown.code, 'unknown_project');
  assert.match(unknown.message, /not on this runner's watch list/);
  conn.send({ type: 'projects', projects: [{ id: 'widgets', root }, { id: 'other', root: stranger }] });
  await waitUntil(async () => (await conn.command('project.refresh', { projectId: 'other' })).ok, 5000, 'the new watch list');
  const d = await ok('project.refresh', { projectId: 'other' });
  assert.equal([d.root, d.remote, d.branch], [realpathSync(stranger), null, 'main']);
  assert.equal(d.worktrees.map((w: any) => w.slot), [null, 'x'], ".wt-other-x is other's own sibling");
  conn.send({ type: 'projects', projects: [{ id: 'widgets', root }] });
  await waitUntil(async () => !(await conn.command('project.refresh', { projectId: 'other' })).ok, 5000, 'the project to leave the watch list');
});

test('project.inspect reads a repository top: the root, its .wt-widgets-* worktree, a repository not yet connected', async () => {
  const top = await ok('project.inspect', { path: `${root}/` });
  assert.equal([top.root, top.branch, top.defaultBranch], [realpathSync(root), 'feature/x', 'main']);
  assert.is(top.projectId, undefined);
  const wt = await ok('project.inspect', { path: slot1 });
  assert.equal([wt.root, wt.branch], [realpathSync(slot1), 'svc/slot1/issue-7']);
  const fresh = join(sb.dir, 'to-connect');
  mkdirSync(fresh);
  git(fresh, 'init', '-q');
  const d = await ok('project.inspect', { path: fresh });
  assert.equal([d.root, d.head, d.lastCommit, d.branch, d.dirty], [realpathSync(fresh), null, null, 'main', false], 'a repository without commits');
});

test('project.inspect confinement: outside the roots → path_not_allowed, whether the path exists or not', async () => {
  const outside = await refused('project.inspect', { path: join(sb.dir, 'outside') });
  assert.is(outside.code, 'path_not_allowed');
  assert.match(outside.message, /outside the registered project roots and their \.wt-<repo>-\* worktrees, and not the top directory of a git repository/);
  const missing = await refused('project.inspect', { path: join(sb.dir, 'no-such-dir') });
  assert.equal(missing, outside, 'the same answer for a path that does not exist');
  assert.is((await refused('project.inspect', { path: '/etc' })).code, 'path_not_allowed');
  assert.is((await refused('project.inspect', { path: join(work, '.wt-other-plain') })).code, 'path_not_allowed', "another repository's .wt-other-* name is not a sibling of widgets");
  assert.is((await refused('project.inspect', { path: join(root, 'link-out') })).code, 'path_not_allowed', 'a symlink inside the root is judged by where it points');
  assert.is((await refused('project.inspect', { path: join(root, 'link-sibling') })).code, 'path_not_allowed');
});

test('project.inspect inside the roots: a sub-directory, a plain .wt-widgets-* sibling, a file → not_a_repository', async () => {
  mkdirSync(join(root, 'sub'), { recursive: true });
  for (const path of [join(root, 'sub'), join(work, '.wt-widgets-plain'), join(root, 'README.md'), join(root, 'missing'), join(root, '.git')]) {
    const e = await refused('project.inspect', { path });
    assert.is(e.code, 'not_a_repository', path);
    assert.match(e.message, /not the top directory of a git repository/);
  }
});

test('project.inspect: `..`, relative paths and NUL → invalid_args naming the field, before any file is looked at', async () => {
  for (const path of [`${root}/../widgets`, `${slot1}/../../outside`, 'work/widgets', '', `${root}\0`, '~/widgets']) {
    const e = await refused('project.inspect', { path });
    assert.is(e.code, 'invalid_args', JSON.stringify(path));
    assert.match(e.message, /^project\.inspect: path: /);
  }
  assert.is((await refused('project.inspect', {})).code, 'invalid_args');
  assert.is((await refused('project.inspect', { path: root, extra: 1 })).code, 'invalid_args');
});

test.run();
