// The node_modules the built server loads at run time, and nothing else (the Dockerfile's build stage runs
// this after `npm run build`; the runtime stage copies the result). esbuild bundles the pure-JS dependencies
// into dist/server*.mjs; what it leaves outside (esbuild.config.mjs `external`: the database drivers, ws's
// optional native add-ons) is what the bundle still imports or requires by name. Those packages are found
// by reading the bundle itself, so a new external is picked up without editing this list, and copied with
// their own production dependencies (package-lock.json) into <out>/node_modules. A name the bundle tries
// but that is not installed (an optional add-on such as utf-8-validate) is skipped: the code loads it in a
// try/catch. Everything else in node_modules (zod, preact, xterm, jose… bundled or for the pages) stays out.
//   usage: node scripts/runtime-deps.mjs <out-dir>     (from the checkout, after the build)
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node scripts/runtime-deps.mjs <out-dir>');
  process.exit(2);
}

/** Bare package names the server's files load: import "x", import("x"), require("x"), require.resolve("x"). */
function loadedNames() {
  const names = new Set();
  for (const f of readdirSync('dist').filter((f) => /^server(-.+)?\.mjs$/.test(f))) {
    const code = readFileSync(join('dist', f), 'utf8');
    for (const m of code.matchAll(/(?:\bfrom|\bimport\(|require\(|\bresolve\()\s*["']([^"'./][^"']*)["']/g)) {
      const spec = m[1];
      if (isBuiltin(spec)) continue;
      names.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
  }
  return names;
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')).packages;

/** The lockfile entry that `name` resolves to from the package at `from` (Node's lookup: the nearest node_modules up). */
function resolveFrom(from, name) {
  for (let dir = from; ; ) {
    const key = dir === '.' ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
    if (lock[key]) return key;
    if (dir === '.') return null;
    const up = dir.lastIndexOf('/node_modules/');
    dir = up < 0 ? '.' : dir.slice(0, up);
  }
}

const keep = new Set();
const queue = [...loadedNames()].map((n) => ['.', n]);
while (queue.length) {
  const [from, name] = queue.shift();
  const key = resolveFrom(from, name);
  if (!key || !existsSync(key) || keep.has(key)) continue; // not installed here: an optional add-on
  keep.add(key);
  const entry = lock[key];
  for (const dep of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) queue.push([key, dep]);
}

rmSync(out, { recursive: true, force: true });
let bytes = 0;
const size = (p) => (statSync(p).isDirectory() ? readdirSync(p).reduce((s, f) => s + size(join(p, f)), 0) : statSync(p).size);
// Nested entries (node_modules/a/node_modules/b) come with their parent's directory.
for (const key of [...keep].sort()) {
  if ([...keep].some((k) => k !== key && key.startsWith(`${k}/`))) continue;
  cpSync(key, join(out, key), { recursive: true, verbatimSymlinks: true });
  bytes += size(key);
}
console.log(`runtime node_modules: ${[...keep].map((k) => k.replace(/^node_modules\//, '')).sort().join(', ')} (${(bytes / 1e6).toFixed(1)} MB)`);
