// The test driver (scripts/test.mjs, scripts/test-tools.mjs) on a machine that lacks a program the tests
// run: as root with apt-get it installs the program's Debian package first; where it may not install, it
// skips only the files that need the program, says which and why, and counts their tests as skipped.
// The machine's real apt-get is never called: PATH holds only a folder of this test's own (the driver and
// its test processes run as process.execPath, no PATH lookup), with a stand-in apt-get where one is needed.
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, tempDir } from '../helpers/db.ts';
import { needsOf } from '../../scripts/test-tools.mjs';

const FIXTURES = join(ROOT, 'test/ops/fixtures/driver');

function drive(bin: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['scripts/test.mjs', '--db', 'pglite', '--no-build', FIXTURES], {
    cwd: ROOT,
    env: { ...process.env, PATH: bin, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

test('a missing program it may not install: only its files are skipped, with the reason, and counted', () => {
  const bin = tempDir('driver-bin-');
  const r = drive(bin, { SVC_TEST_NO_INSTALL: '1' });
  assert.is(r.status, 0, r.out);
  assert.match(r.out, /skip \[pglite\] test\/ops\/fixtures\/driver\/needs-ruby\.test\.ts {2}2 skipped: needs ruby \(not installed, and the driver does not install it: SVC_TEST_NO_INSTALL=1 \(apt-get install ruby\)\)/);
  assert.match(r.out, /ok {3}\[pglite\] test\/ops\/fixtures\/driver\/plain\.test\.ts {2}1 passed/);
  assert.match(r.out, /^1 passed, 0 failed, 2 skipped$/m);
});

test('as root with apt-get: the Debian package is installed first, then the file runs', () => {
  if (process.getuid?.() !== 0) return; // the install path is root's; CI runs as root
  const bin = tempDir('driver-bin-');
  const calls = join(bin, 'calls.txt');
  // The stand-in "installs" ruby by writing an executable beside itself.
  writeFileSync(join(bin, 'apt-get'), `#!/bin/sh\necho "$*" >> ${calls}\ncase "$*" in *install*) printf '#!/bin/sh\\nexit 0\\n' > ${bin}/ruby; /bin/chmod +x ${bin}/ruby;; esac\n`);
  chmodSync(join(bin, 'apt-get'), 0o755);
  const r = drive(bin);
  assert.is(r.status, 0, r.out);
  assert.match(readFileSync(calls, 'utf8'), /install -y -qq --no-install-recommends ruby/);
  assert.match(r.out, /installing what the tests need \(ruby\): apt-get install ruby/);
  assert.match(r.out, /^3 passed, 0 failed, 0 skipped$/m);
});

test('needs are read from the file and the local modules it imports; an unknown name is an error', () => {
  assert.ok(needsOf(join(ROOT, 'test/web/start.test.ts')).has('chromium'), 'through test/helpers/browser.ts');
  const dir = tempDir('driver-needs-');
  writeFileSync(join(dir, 'a.test.ts'), "// needs: rubyy\nimport './b.ts';\n");
  assert.throws(() => needsOf(join(dir, 'a.test.ts')), /unknown tool "rubyy"/);
});

test.run();
