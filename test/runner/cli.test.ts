// The runner bundle is one file that runs with plain node and nothing beside it.
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../helpers/db.ts';

// Run from a directory with no node_modules anywhere above it.
const alone = join('/tmp', `svc-runner-${process.pid}`);
const bundle = join(alone, 'svc-runner.mjs');
test.before(() => {
  spawnSync('mkdir', ['-p', alone]);
  copyFileSync(join(ROOT, 'dist', 'svc-runner.mjs'), bundle);
});
test.after(() => void spawnSync('rm', ['-rf', alone]));

const run = (...args: string[]) => spawnSync(process.execPath, [bundle, ...args], { cwd: alone, encoding: 'utf8' });

test('version, --version and -v print "<version> <os>-<arch>" and exit 0', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  for (const flag of ['version', '--version', '-v']) {
    const r = run(flag);
    assert.is(r.status, 0, flag);
    assert.match(r.stdout, new RegExp(`^${pkg.version.replace(/\./g, '\\.')} linux-(amd64|arm64)\\n$`));
  }
});

test('help, --help and -h print usage naming every spec command, exit 0', () => {
  for (const flag of ['help', '--help', '-h']) {
    const r = run(flag);
    assert.is(r.status, 0);
    for (const cmd of ['pair --server', 'run', 'status', 'profiles', 'install-service', 'version', 'help']) assert.ok(r.stdout.includes(cmd), cmd);
    for (const cmd of ['uninstall-service [--platform linux|darwin]', 'doctor']) assert.match(r.stdout, new RegExp(`^  ${cmd.replace(/[[\]|]/g, '\\$&')}`, 'm'), cmd);
  }
});

test('an unknown command or no command is a usage error: exit 2 with usage', () => {
  const r = run('frobnicate');
  assert.is(r.status, 2);
  assert.match(r.stderr, /unknown command 'frobnicate'/);
  assert.match(r.stderr, /Usage: svc-runner/);
  assert.is(run().status, 2);
});

test('the bundle is one self-contained file of modest size', () => {
  // ~990 KB with zod tree-shaken (see esbuild.config.mjs): ~400 KB of runner, ws and zod, ~230 KB of
  // @bufbuild/protobuf for the OTLP receiver, the transcript ingest; ~80 KB of that is the wrappers that
  // let cli.ts evaluate a command's modules only when it runs (esbuild wraps a dynamically imported module
  // in a function). A whole-zod import adds ~500 KB.
  assert.ok(statSync(bundle).size < 1100 * 1024, `${statSync(bundle).size} bytes`);
});

test.run();
