#!/usr/bin/env node
// Test driver: makes sure the programs the tests run are there (scripts/test-tools.mjs: installs them with
// apt-get as root on Debian, else skips only the files that need a missing one), builds, typechecks (a
// whole run), then runs every test/**/*.test.ts file in its own Node process (with tsx) against each
// selected database, two files at a time, each bounded by a timeout, and ends with the line
// `N passed, N failed, N skipped` (tests that run on one driver only are skipped on the other, and so are
// those of a file whose program is missing; a file that runs and skips nothing counts as a failure).
//   node scripts/test.mjs                 PGlite, then PostgreSQL when TEST_DATABASE_URL's server answers
//   node scripts/test.mjs --db postgres   one database only
//   node scripts/test.mjs test/health     only files under a path (no typecheck)
//   --no-build                            use dist/ as it is
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import net from 'node:net';
import { join, relative } from 'node:path';
import mri from 'mri';
import { countTests, ensureTools, needsOf } from './test-tools.mjs';

const args = mri(process.argv.slice(2), { string: ['db'], boolean: ['build'], default: { jobs: 2, timeout: 300, build: true } });
const root = new URL('..', import.meta.url).pathname;
const adminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'helpers' || name === 'fixtures' ? [] : files(p);
    return p.endsWith('.test.ts') ? [p] : [];
  });
}

function reachable(url) {
  const u = new URL(url);
  return new Promise((ok) => {
    const s = net.connect({ host: u.hostname, port: Number(u.port || 5432) });
    s.setTimeout(2000, () => (s.destroy(), ok(false)));
    s.once('connect', () => (s.end(), ok(true)));
    s.once('error', () => ok(false));
  });
}

function runFile(file, db) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      env: { ...process.env, SVC_TEST_DB: db, TEST_DATABASE_URL: adminUrl, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // own process group, so a timeout kills servers it started too
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => {
      out += `\n[test driver] ${file} exceeded ${args.timeout} s; killed\n`;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, args.timeout * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const num = (label) => Number(new RegExp(`${label}:\\s+(\\d+)`).exec(out)?.[1] ?? 0);
      const total = num('Total'); // uvu's Total leaves skipped tests out
      const skipped = num('Skipped');
      let passed = num('Passed');
      let failed = total - passed;
      if (code !== 0 && failed === 0) failed = 1; // crashed, timed out, or failed outside a test
      if (code !== 0 && passed === total) passed = Math.max(0, passed - 1);
      if (code === 0 && total === 0 && skipped === 0) {
        failed = 1;
        out += '\n[test driver] the file ran no test and skipped none\n';
      }
      resolve({ file, db, passed, failed, skipped, ms: Date.now() - started, out });
    });
  });
}

async function main() {
  const selected = args._.length ? args._.flatMap((p) => (statSync(p).isDirectory() ? files(p) : [p])) : files(join(root, 'test'));
  let dbs = args.db ? String(args.db).split(',') : ['pglite', 'postgres'];
  if (!args.db && !(await reachable(adminUrl))) {
    console.log(`PostgreSQL at ${new URL(adminUrl).host} does not answer: running on PGlite only`);
    dbs = ['pglite'];
  }
  const seen = new Map();
  const needs = new Map(selected.map((file) => [file, needsOf(file, seen)]));
  const missing = ensureTools(new Set([...needs.values()].flatMap((n) => [...n])));
  const results = [];
  const runnable = selected.filter((file) => {
    const lacking = [...needs.get(file)].filter((t) => missing.has(t));
    if (!lacking.length) return true;
    const count = countTests(file);
    for (const db of dbs) results.push({ file, db, passed: 0, failed: 0, skipped: count, ms: 0, out: '' });
    console.log(`skip [${dbs.join(',')}] ${relative(root, file)}  ${count} skipped: needs ${lacking.map((t) => `${t} (${missing.get(t)})`).join(', ')}`);
    return false;
  });
  if (args.build) {
    console.log('building…');
    const build = spawnSync(process.execPath, ['esbuild.config.mjs'], { cwd: root, stdio: 'inherit' });
    if (build.status !== 0) {
      console.log('0 passed, 1 failed, 0 skipped');
      process.exit(1);
    }
  }
  if (!args._.length) {
    console.log('typechecking…');
    const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: root, stdio: 'inherit' });
    results.push({ file: 'typecheck', db: '-', passed: tsc.status === 0 ? 1 : 0, failed: tsc.status === 0 ? 0 : 1, skipped: 0, ms: 0, out: '' });
    console.log(`${tsc.status === 0 ? 'ok  ' : 'FAIL'} typecheck (tsc -p .)`);
  }
  const queue = dbs.flatMap((db) => runnable.map((file) => ({ file, db })));
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) {
      const r = await runFile(job.file, job.db);
      results.push(r);
      const mark = r.failed ? 'FAIL' : 'ok  ';
      console.log(`${mark} [${r.db}] ${relative(root, r.file)}  ${r.passed} passed, ${r.failed} failed${r.skipped ? `, ${r.skipped} skipped` : ''}  (${(r.ms / 1000).toFixed(1)} s)`);
      if (r.failed) console.log(r.out.replace(/^/gm, '    | '));
    }
  };
  await Promise.all(Array.from({ length: Number(args.jobs) }, worker));
  const passed = results.reduce((n, r) => n + r.passed, 0);
  const failed = results.reduce((n, r) => n + r.failed, 0);
  const skipped = results.reduce((n, r) => n + r.skipped, 0);
  console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exit(failed ? 1 : 0);
}

await main();
