// The one-file runner's compile cache (runner/boot.ts, scripts/runner-pack.mjs; docs/runner.md, "Compile
// cache"): the runner's code sits in a comment of the file, the loader compiles it with node:vm and keeps what V8
// compiled for each command in $XDG_CACHE_HOME/svc/compile-cache/, 0600 in a 0700 directory. A cache V8 rejects
// is replaced; one that anyone else could have written is never offered to V8; a run that failed, the daemon and
// SVC_RUNNER_COMPILE_CACHE=0 keep none; a cache that cannot be written costs nothing but the next compile.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cachePlan } from '../../runner/boot.ts';
import { escapeCommentEnd, packFile } from '../../scripts/runner-pack.mjs';
import { startFakeServer } from './_fake-server.ts';
import { BUNDLE, ROOT, killDaemons, pairedConfig, runCli, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let sb: Sandbox;
test.before.each(() => {
  sb = sandbox();
});
test.after.each(async () => {
  await killDaemons();
  sb.cleanup();
});

const cacheDirOf = (s: Sandbox) => join(s.home, '.cache', 'svc', 'compile-cache');
const files = (s: Sandbox) => (existsSync(cacheDirOf(s)) ? readdirSync(cacheDirOf(s)).sort() : []);
const mode = (p: string) => statSync(p).mode & 0o777;
const EMPTY_USAGE = '{\n  "days": []\n}\n';

async function usage(s: Sandbox, env: Record<string, string> = {}) {
  const r = await runCli(s, ['usage', 'daily', '--json'], env);
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout, EMPTY_USAGE);
  assert.is(r.stderr, '');
  return r;
}

/** The generation in a cache file's header (runner/boot.ts): it goes up only when V8 took the cache. */
const generation = (file: string) => {
  const b = readFileSync(file);
  assert.is(b.subarray(0, 4).toString('latin1'), 'svcC');
  return b[4];
};

test('a command keeps what V8 compiled for it, 0600 in a 0700 directory; the next two runs add theirs, later runs only read it', async () => {
  await usage(sb);
  const [name, ...more] = files(sb);
  assert.equal(more, [], files(sb).join(' '));
  assert.match(name, /^usage\.[0-9a-f]{16}\.[0-9a-z]+\.[0-9a-z]+\.v\d+\.\d+\.\d+\.[a-z0-9]+\.bin$/);
  const file = join(cacheDirOf(sb), name);
  assert.is(mode(cacheDirOf(sb)), 0o700);
  assert.is(mode(file), 0o600);
  assert.ok(statSync(file).size > 50_000, `${statSync(file).size} bytes: the functions the run compiled, not only the top level`);
  assert.is(generation(file), 0);
  // Taken by V8 and written again with what the run compiled besides.
  await usage(sb);
  assert.is(generation(file), 1);
  await usage(sb);
  assert.is(generation(file), 2);
  const before = statSync(file);
  await usage(sb);
  await usage(sb);
  // Only read now (a cache V8 rejected would have been written again, renamed over: a new inode).
  const after = statSync(file);
  assert.is(after.ino, before.ino);
  assert.is(after.mtimeMs, before.mtimeMs);
  assert.equal(files(sb), [name]);
  // Each command has its own.
  const v = await runCli(sb, ['--version']);
  assert.is(v.status, 0);
  assert.equal(files(sb).map((f) => f.split('.')[0]), ['other', 'usage']);
});

test('a cache V8 rejects (damaged, cut short) is replaced, and the command runs as if there were none', async () => {
  await usage(sb);
  const [name] = files(sb);
  const file = join(cacheDirOf(sb), name);
  const good = readFileSync(file);
  await usage(sb);
  assert.is(generation(file), 1);
  // No header; the header and half of V8's data; the header and bytes that are not V8's.
  const header = good.subarray(0, 8);
  for (const bad of [Buffer.from('not a code cache at all'), good.subarray(0, good.length >> 1), Buffer.concat([header, Buffer.alloc(good.length - 8, 0xa5)])]) {
    writeFileSync(file, bad, { mode: 0o600 });
    await usage(sb);
    const now = readFileSync(file);
    assert.is.not(Buffer.compare(now, bad), 0, 'replaced');
    assert.ok(now.length > 50_000);
    assert.is(generation(file), 0, 'written anew, not taken');
    assert.equal(files(sb), [name], 'no temporary file left');
  }
});

test('a cache that someone else could have written is not offered to V8; a directory others can write is not written to', async () => {
  await usage(sb);
  const [name] = files(sb);
  const file = join(cacheDirOf(sb), name);
  await usage(sb);
  assert.is(generation(file), 1);
  // Group-writable file: not read (V8 would have taken it: generation 2); the run writes its own over it,
  // renamed, 0600 again.
  chmodSync(file, 0o620);
  const ino = statSync(file).ino;
  await usage(sb);
  assert.is(mode(file), 0o600);
  assert.is.not(statSync(file).ino, ino);
  assert.is(generation(file), 0);
  // World-writable directory: nothing in it is read, nothing is written. Garbage there would be rejected and
  // replaced if it were offered to V8 (the test above); it stays as it is.
  chmodSync(cacheDirOf(sb), 0o777);
  writeFileSync(file, 'planted by someone else', { mode: 0o600 });
  await usage(sb);
  assert.is(readFileSync(file, 'utf8'), 'planted by someone else');
  assert.equal(files(sb), [name]);
});

test('no cache: a run that failed, SVC_RUNNER_COMPILE_CACHE=0, a cache directory that cannot be made', async () => {
  const r = await runCli(sb, ['frobnicate']);
  assert.is(r.status, 2);
  assert.equal(files(sb), []);
  await usage(sb, { SVC_RUNNER_COMPILE_CACHE: '0' });
  assert.equal(files(sb), []);
  // $XDG_CACHE_HOME/svc is a file: the cache cannot be made, the command is not affected.
  const cacheHome = join(sb.dir, 'cache');
  mkdirSync(cacheHome);
  writeFileSync(join(cacheHome, 'svc'), 'a file, not a directory');
  await usage(sb, { XDG_CACHE_HOME: cacheHome });
  await usage(sb, { XDG_CACHE_HOME: cacheHome });
  assert.is(readFileSync(join(cacheHome, 'svc'), 'utf8'), 'a file, not a directory');
  // XDG_CACHE_HOME is honoured when it is an absolute path.
  const other = join(sb.dir, 'other-cache');
  await usage(sb, { XDG_CACHE_HOME: other });
  assert.equal(readdirSync(join(other, 'svc', 'compile-cache')).map((f) => f.split('.')[0]), ['usage']);
});

test('the daemon keeps no cache (it runs for days and nobody waits on its start)', async () => {
  const fake = await startFakeServer();
  try {
    sb.writeConfig(pairedConfig(fake.url, { profiles: [] }));
    const d = startDaemon(sb);
    await d.waitFor(/connected to /);
    const { code } = await d.kill('SIGTERM');
    assert.is(code, 0, d.output());
    assert.equal(files(sb), []);
  } finally {
    await fake.stop();
  }
});

test('processes writing the same cache at once leave one whole file, which the next run uses', async () => {
  const runs = await Promise.all(Array.from({ length: 4 }, () => usage(sb)));
  assert.is(runs.length, 4);
  const [name, ...more] = files(sb);
  assert.equal(more, [], files(sb).join(' '));
  // A run that started after another one's write took that cache and wrote the next generation.
  const g = generation(join(cacheDirOf(sb), name));
  assert.ok(g <= 2, String(g));
  await usage(sb);
  // Taken by V8 (a rejected cache is written anew, as generation 0).
  assert.is(generation(join(cacheDirOf(sb), name)), Math.min(g + 1, 2));
});

test('a runner file that changed (a new download, an edit by hand) gets a new cache, and the old one is removed', async () => {
  const own = join(sb.dir, 'svc-runner.mjs');
  copyFileSync(BUNDLE, own);
  const run = () => spawnSync(process.execPath, [own, 'usage', 'daily', '--json'], { env: sb.env, encoding: 'utf8' });
  assert.is(run().status, 0);
  const [first] = files(sb);
  const later = new Date(Date.now() + 60_000);
  utimesSync(own, later, later);
  const r = run();
  assert.is(r.status, 0, r.stderr);
  const [second, ...more] = files(sb);
  assert.equal(more, []);
  assert.is.not(second, first);
});

test('a long command writes its cache while it runs (exec-run waits on its agent)', async () => {
  const script = join(sb.dir, 'long.mjs');
  writeFileSync(
    script,
    `import { boot } from ${JSON.stringify(join(ROOT, 'runner', 'boot.ts'))};
boot({ source: '(function(require,module,exports,url){ setTimeout(() => {}, 60000); })', file: ${JSON.stringify(script)}, url: import.meta.url, line: 0, column: 0, hash: 'test', argv: ['exec-run', 'x'], env: process.env });\n`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...sb.env, PATH: process.env.PATH! }, stdio: 'ignore' });
  try {
    await waitUntil(() => files(sb).some((f) => f.startsWith('exec-run.') && f.endsWith('.bin')), 20_000, 'the cache of a command still running');
    assert.is(child.exitCode, null, 'still running');
  } finally {
    child.kill('SIGKILL');
  }
});

test('cachePlan: one file per command, none for the daemon or when turned off; names from the command line are not paths', () => {
  const env = { HOME: '/home/u' };
  const plan = cachePlan(['usage', 'daily'], env, BUNDLE, 'abc')!;
  assert.is(plan.dir, '/home/u/.cache/svc/compile-cache');
  assert.ok(plan.file.startsWith('/home/u/.cache/svc/compile-cache/usage.abc.'));
  assert.is(cachePlan(['run'], env, BUNDLE, 'abc'), null);
  assert.is(cachePlan(['usage'], { ...env, SVC_RUNNER_COMPILE_CACHE: '0' }, BUNDLE, 'abc'), null);
  assert.is(cachePlan(['usage'], env, join(sb.dir, 'no-such-file.mjs'), 'abc'), null);
  for (const arg of ['../../etc/x', '--version', 'A', '', 'x'.repeat(60)]) assert.ok(cachePlan([arg], env, BUNDLE, 'abc')!.file.startsWith('/home/u/.cache/svc/compile-cache/other.'), arg);
  assert.ok(cachePlan([], { ...env, XDG_CACHE_HOME: '/c' }, BUNDLE, 'abc')!.file.startsWith('/c/svc/compile-cache/other.'));
  assert.ok(cachePlan([], { ...env, XDG_CACHE_HOME: 'relative' }, BUNDLE, 'abc')!.file.startsWith('/home/u/.cache/'), 'a relative XDG path is ignored');
});

test('the bundle: its code ends the comment only where the loader expects, and its stack traces name the file\'s own lines', async () => {
  const text = readFileSync(BUNDLE, 'latin1');
  assert.is(text.indexOf('*/'), text.indexOf('})*/}\n') + 2, 'the first end of a comment is the body\'s');
  // A small body packed as the build packs the runner: the frame of the throw points at the error in the file.
  const file = join(sb.dir, 'thrower.mjs');
  const body = [
    '"use strict";',
    'const x = /a*/.test("*/");',
    'function deep() {',
    '  if (x) throw new Error("boom");',
    '}',
    // import() inside the body resolves as in an ES module (the OpenCode reader imports node:sqlite so).
    'import("node:path").then((p) => { console.log(p.basename(__svcUrl), typeof require, module.exports === exports); deep(); });',
  ].join('\n');
  writeFileSync(file, await packFile(body, { root: ROOT, title: 'a test' }));
  const r = spawnSync(process.execPath, [file], { env: sb.env, encoding: 'utf8' });
  assert.is(r.stdout, 'thrower.mjs function true\n');
  assert.is(r.status, 1);
  const frame = /at deep \((.+):(\d+):(\d+)\)/.exec(r.stderr);
  assert.ok(frame, r.stderr);
  assert.is(frame![1], file);
  const line = readFileSync(file, 'utf8').split('\n')[Number(frame![2]) - 1];
  // V8 places a thrown new Error at its `new`.
  assert.ok(line.slice(Number(frame![3]) - 1).startsWith('new Error("boom")'), `${frame![0]} → ${line}`);
  assert.ok(line.includes('if (x) throw'), line);
});

test('escapeCommentEnd: strings and regular expressions keep their meaning; anything else is refused with its place', () => {
  const cases: [string, string][] = [
    ['a=/x*/g', 'a=/x*(?:)/g'],
    ['b="*/"', 'b="*\\/"'],
    ["b='a*/b*/'", "b='a*\\/b*\\/'"],
    ['c=/[*/]/', 'c=/[*\\/]/'],
    ['d=/\\*/', 'd=/\\*(?:)/'],
    ['e=/[*/]x*/u', 'e=/[*\\/]x*(?:)/u'],
    ['f=1*2/3', 'f=1*2/3'],
  ];
  for (const [code, want] of cases) {
    const got = escapeCommentEnd(code);
    assert.is(got, want);
    assert.not.ok(got.includes('*/'));
    // The same value: the same string, or a regular expression matching the same things.
    const [before, after] = [new Function(`let a,b,c,d,e,f;return ${code}`)(), new Function(`let a,b,c,d,e,f;return ${got}`)()];
    if (before instanceof RegExp) for (const s of ['', 'x', 'xx', '*', '/', '*/', 'a*/', 'axx/']) assert.equal(after.exec(s), before.exec(s), `${code} on ${s}`);
    else assert.is(after, before);
  }
  assert.throws(() => escapeCommentEnd('x=`*/`'), /"\*\/" in a template token at line 1, column 4/);
  assert.throws(() => escapeCommentEnd('y=2;\nx=2*/a/.exec(s)'), /outside a string or regular expression .* at line 2, column 4/);
  assert.throws(() => escapeCommentEnd('/*! licence */x=1'), /outside a string or regular expression/);
});

test.run();
