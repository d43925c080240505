// The build id baked into the bundles (esbuild.config.mjs buildCommit → X-Svc-Version and /health's
// `build`): SVC_BUILD_COMMIT when set (the image's build arg), else the project's git HEAD, else
// `unknown`. Each case runs the real build script's resolution in a child process with its own
// environment; a copy of the project without git gets `unknown`.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../helpers/db.ts';

/** What `esbuild.config.mjs` (in `dir`) resolves as the build's commit under `env`. */
function resolveIn(dir: string, env: Record<string, string | undefined>): { status: number | null; out: string; err: string } {
  const childEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(join(dir, 'esbuild.config.mjs'))}); console.log(m.buildCommit());`], {
    cwd: dir,
    env: childEnv,
    encoding: 'utf8',
  });
  return { status: r.status, out: r.stdout.trim(), err: r.stderr };
}

const head = () => spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();

test('SVC_BUILD_COMMIT (the image build arg) wins: its first 12 hex digits, lower case', () => {
  const r = resolveIn(ROOT, { SVC_BUILD_COMMIT: 'ABCDEF0123456789ABCDEF0123456789ABCDEF01' });
  assert.is(r.status, 0, r.err);
  assert.is(r.out, 'abcdef012345');
  assert.is(resolveIn(ROOT, { SVC_BUILD_COMMIT: 'unknown' }).out, 'unknown');
});

test('a malformed SVC_BUILD_COMMIT stops the build, naming the variable', () => {
  for (const bad of ['main', 'abc123', 'g'.repeat(40), "$(reboot)"]) {
    const r = resolveIn(ROOT, { SVC_BUILD_COMMIT: bad });
    assert.is.not(r.status, 0, bad);
    assert.match(r.err, /SVC_BUILD_COMMIT must be a commit hash/, bad);
  }
});

test('without SVC_BUILD_COMMIT: the project\'s git HEAD (12 hex digits); an empty value counts as unset', () => {
  const commit = head();
  assert.match(commit, /^[0-9a-f]{40}$/, 'this test runs in a git checkout');
  assert.is(resolveIn(ROOT, { SVC_BUILD_COMMIT: undefined }).out, commit.slice(0, 12));
  assert.is(resolveIn(ROOT, { SVC_BUILD_COMMIT: '' }).out, commit.slice(0, 12));
});

test('no git: GIT_DIR pointing nowhere, or a copy of the project outside any repository → unknown', () => {
  assert.is(resolveIn(ROOT, { SVC_BUILD_COMMIT: undefined, GIT_DIR: join(tmpdir(), 'no-such-git-dir') }).out, 'unknown');
  const copy = mkdtempSync(join(tmpdir(), 'svc-nogit-'));
  try {
    for (const f of ['esbuild.config.mjs', 'package.json']) copyFileSync(join(ROOT, f), join(copy, f));
    // The config builds the runner's usage worker when it loads: it needs the sources and esbuild, and the
    // runner build's plugin (scripts/lazy-schemas.mjs).
    for (const d of ['node_modules', 'runner', 'protocol', 'scripts']) symlinkSync(join(ROOT, d), join(copy, d));
    // GIT_CEILING_DIRECTORIES: git must not find a repository above the temporary directory either.
    const r = resolveIn(copy, { SVC_BUILD_COMMIT: undefined, GIT_DIR: undefined, GIT_CEILING_DIRECTORIES: tmpdir() });
    assert.is(r.status, 0, r.err);
    assert.is(r.out, 'unknown');
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});

test.run();
