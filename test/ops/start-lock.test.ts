// `npm start` with the embedded database held by another process (issue #34): it stops at once with one
// clear line, before the rebuild (package.json prestart runs scripts/check-lock.mjs first); a lock left
// by a process that is gone does not stop it.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../helpers/db.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-start-lock-'));
const env = (extra: Record<string, string>) => {
  const e: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...extra };
  return e; // no DATABASE_URL: the embedded database
};
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('npm start while another process holds ./data/pglite → exit non-zero in one clear line, nothing rebuilt', async () => {
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  try {
    writeFileSync(join(dir, 'svc.lock'), String(holder.pid));
    const t = Date.now();
    const r = spawnSync('npm', ['start'], { cwd: ROOT, env: env({ PGLITE_DATA_DIR: dir }), encoding: 'utf8', timeout: 60_000 });
    assert.is.not(r.status, 0);
    assert.match(r.stderr, `svc: the embedded database in ${dir} is in use by process ${holder.pid} (a running svc server?): stop it first, then run npm start again.`);
    assert.not.match(r.stdout + r.stderr, /built dist\//, 'the rebuild did not run');
    assert.ok(Date.now() - t < 30_000, 'fast');
  } finally {
    holder.kill('SIGKILL');
  }
});

test('a lock whose process is gone, or PostgreSQL (DATABASE_URL): the check passes', () => {
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  writeFileSync(join(dir, 'svc.lock'), gone);
  const check = (extra: Record<string, string>) => spawnSync(process.execPath, ['scripts/check-lock.mjs'], { cwd: ROOT, env: env(extra), encoding: 'utf8' });
  const stale = check({ PGLITE_DATA_DIR: dir });
  assert.is(stale.status, 0, stale.stderr);
  writeFileSync(join(dir, 'svc.lock'), String(process.pid)); // alive, but the server would use PostgreSQL
  assert.is(check({ PGLITE_DATA_DIR: dir, DATABASE_URL: 'postgres://db.invalid/svc' }).status, 0);
  assert.is(check({ PGLITE_DATA_DIR: dir }).status, 1, 'the same lock with the embedded database stops it');
});

test.run();
