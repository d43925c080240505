// Builds the three artifacts: dist/server.mjs (API + jobs + static serving; node_modules beside it),
// dist/svc-runner.mjs (ONE self-contained file: buildRunner), dist/web/ (the admin pages).
// The admin pages are split and content-hashed: dist/web/assets/<name>-<hash>.js|css — the app's entry
// (preact, the frame, sign-in, the bell), one chunk per page loaded with import() when its route is
// opened (web-static/app.ts), shared chunks, and the terminal (xterm.js and its CSS) loaded only when a
// terminal is attached. A hashed file never changes, so it is served with a one-year immutable cache
// (functions/static.ts); dist/web/index.html — written here from web-static/index.html with the hashed
// names of this build — is served with no-cache, so a deploy takes effect at the next page load.
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { lazySchemas } from './scripts/lazy-schemas.mjs';
import { packFile, shiftMap } from './scripts/runner-pack.mjs';

const ROOT = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

/**
 * The commit this build is made from, as X-Svc-Version and /health name it (protocol/version.ts BUILD):
 * so the two builds of a rolling upgrade can be told apart even with one package version. In order:
 * SVC_BUILD_COMMIT when set (the image's build arg: its build context has no .git) — a commit hash, of
 * which the first 12 hex digits are kept, or `unknown`; else `git rev-parse HEAD` in the project
 * directory; else `unknown` (a copy of the tree without git). A malformed SVC_BUILD_COMMIT stops the build.
 */
export function buildCommit(env = process.env) {
  const given = env.SVC_BUILD_COMMIT?.trim();
  if (given) {
    if (given === 'unknown') return given;
    if (!/^[0-9a-fA-F]{12,64}$/.test(given)) throw new Error(`SVC_BUILD_COMMIT must be a commit hash (12 to 64 hex digits) or "unknown", not ${JSON.stringify(given.slice(0, 80))}`);
    return given.slice(0, 12).toLowerCase();
  }
  const git = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: dirname(fileURLToPath(import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const head = git.status === 0 ? git.stdout.trim() : '';
  return /^[0-9a-f]{40,64}$/.test(head) ? head.slice(0, 12) : 'unknown';
}

const define = { __SVC_VERSION__: JSON.stringify(pkg.version), __SVC_BUILD__: JSON.stringify(buildCommit()) };
// ESM bundles that still contain CommonJS dependencies need a require() of their own.
const banner = { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" };

/** A part of the runner built on its own as CommonJS, to be embedded in the one file as a string. */
const embedded = (entry, minify) =>
  esbuild.buildSync({ entryPoints: [entry], absWorkingDir: new URL('.', import.meta.url).pathname, bundle: true, platform: 'node', format: 'cjs', target: 'node20', charset: 'ascii', write: false, logLevel: 'warning', ...minify })
    .outputFiles[0].contents;

/**
 * The usage scan's worker thread (runner/usage/worker.ts), embedded as a string that `new Worker(code, { eval:
 * true })` runs: the runner stays one file, and the worker does not compile the whole runner (~40 KB instead of
 * ~840 KB). Identifiers kept: a worker's CPU profile names its functions.
 */
const usageWorker = Buffer.from(embedded('runner/usage/worker.ts', { minifyWhitespace: true, minifySyntax: true })).toString('utf8');

/**
 * The protobuf library and the generated OTLP descriptors (runner/otlp/proto.ts), embedded gzipped and in
 * base64: runner/otlp/proto-load.ts evaluates them at the OTLP receiver's first request (its
 * `typeof __SVC_OTLP_PROTO__` test lets esbuild drop the module itself from the bundle). At ~190 KB they were
 * a fifth of the one file, which every command compiled (`svc-runner usage` and `emit` never use them) and
 * every daemon kept as source; embedded they are ~50 KB of one string (docs/performance.md, "The idle
 * daemon's memory").
 */
const otlpProto = gzipSync(embedded('runner/otlp/proto.ts', { minify: true }), { level: 9 }).toString('base64');

/**
 * The runner's Node built-ins as CommonJS modules that load them at first use: esbuild hoists an ESM import
 * of an external to the top of the one-file bundle, so every built-in any command uses (http, zlib,
 * child_process, worker_threads, crypto, …) was loaded before `svc-runner usage` or `emit` looked at its
 * arguments, and an idle daemon held tls, https and zlib (ws requires them for wss:// and compression) that a
 * plain ws:// connection never touches (docs/performance.md, "A runner command's start-up" and "The idle
 * daemon's memory"). Each `node:` import — and ws's bare `require('https' | 'tls' | 'zlib' | 'crypto')` —
 * becomes an empty object whose prototype is a proxy: the first property read requires the built-in and puts
 * it in the proxy's place as the reader's prototype, so later reads are plain prototype lookups. Nothing is
 * copied: esbuild's `__toESM` copies a CommonJS module's own properties into a new namespace at each of the
 * ~150 imports, and copying all of `fs`'s or `crypto`'s made that loop hot enough for V8 to optimise it at
 * start-up, which paged in ~4 MiB of the optimising compiler in every idle daemon. What this cannot wrap: a
 * built-in used as a value itself (`require('events')` as a class to extend), so those stay plain requires.
 */
const LAZY_BUILTIN = /^node:|^(https|tls|zlib|crypto)$/;
const lazyModule = (path) => `let real;
const load = () => real || (real = require(${JSON.stringify(path)}));
const lazy = new Proxy({}, {
  get(_, key, receiver) {
    if (key === '__esModule' || key === 'then') return undefined; // asked by esbuild's interop and by await: no built-in has them
    const m = load();
    if (Object.getPrototypeOf(receiver) === lazy) Object.setPrototypeOf(receiver, m);
    return m[key];
  },
  has: (_, key) => key in load(),
});
module.exports = Object.create(lazy);`;
export const lazyBuiltins = {
  name: 'lazy-builtins',
  setup(build) {
    build.onResolve({ filter: LAZY_BUILTIN }, (args) => (args.namespace === 'lazy-builtin' ? { path: args.path, external: true } : { path: args.path.startsWith('node:') ? args.path : `node:${args.path}`, namespace: 'lazy-builtin' }));
    build.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => ({ contents: lazyModule(args.path), loader: 'js' }));
  },
};

export const WEB_DIR = 'dist/web';
export const ASSETS_DIR = `${WEB_DIR}/assets`;
/** Where index.html takes the hashed entry's tags (web-static/index.html). */
const ASSETS_MARK = '<!-- svc:assets -->';

/** The admin pages: one split ESM build; the metafile says which hashed file is what (writeIndex). */
export const web = {
  entryPoints: ['web-static/app.ts'],
  outdir: ASSETS_DIR,
  bundle: true,
  splitting: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  define,
};

export const builds = [
  {
    // Split: dist/server.mjs is start-up (configuration, the database, migrations); what serving needs
    // (functions/serving.ts) and the admin CLI are chunks beside it (dist/server-*.mjs), imported when
    // used — the server compiles the serving chunk while a new database's migrations run (docs/performance.md,
    // Cold start). The chunks sit in dist/ itself, so paths made from import.meta.url are the same in all.
    entryPoints: { server: 'functions/server.ts' },
    outdir: 'dist',
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: 'server-[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // The pure-JS dependencies are bundled: one file to read and compile starts about twice as fast as
    // resolving and loading hundreds of modules (docs/performance.md, Cold start). Kept outside: the
    // database drivers (loaded only when in use; PGlite loads its WASM next to its own module), and the
    // optional native add-ons that ws and @whatwg-node look for at run time. The image ships node_modules.
    external: ['@electric-sql/pglite', 'postgres', '@neondatabase/serverless', 'bufferutil', 'utf-8-validate', 'node-libcurl', '@parcel/watcher'],
    sourcemap: true,
    define,
    banner,
  },
  web,
];

/**
 * The runner's own code, runner/cli.ts and what it imports, as the body of the one file (scripts/runner-pack.mjs):
 * CommonJS-style, run by the loader inside a function that is given require, module, exports and the file's URL.
 */
export const runnerBody = {
  entryPoints: ['runner/cli.ts'],
  outfile: 'dist/svc-runner.mjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  write: false, // packed with the loader by writeRunner
  define: { ...define, 'import.meta.url': '__svcUrl', __SVC_USAGE_WORKER__: JSON.stringify(usageWorker), __SVC_OTLP_PROTO__: JSON.stringify(otlpProto) },
  // Optional native modules, loaded only when present beside the runner (an npm install): @parcel/watcher
  // for the file watcher, and ws's bufferutil (frame masking in C; ws falls back to its own JavaScript).
  // A runner copied alone as one file finds neither and works without them.
  external: ['@parcel/watcher', 'bufferutil', 'utf-8-validate'],
  // Module-level zod schemas are built when first used (scripts/lazy-schemas.mjs).
  plugins: [lazyBuiltins, lazySchemas()],
  // No comments and pure ASCII: V8 keeps a script's source in memory, as one byte per character only
  // when every character fits in Latin-1 — a single `→` in a comment made the 1 MB file a 2 MB string in
  // every daemon's heap. Identifiers are kept (stack traces and CPU profiles name the functions).
  minifyWhitespace: true,
  charset: 'ascii',
  // Runner code imports zod as `import * as z from 'zod'`: the named `{ z }` export keeps all of zod
  // (locales included) and makes this file ~960 KB instead of ~400 KB.
};

/**
 * dist/svc-runner.mjs (or `outfile`): the body built, packed into the comment of the loader's module
 * (runner/boot.ts), which compiles it with a V8 code cache. `sourcemap`: `<outfile>.map` of the body's lines,
 * for CPU profiles (bench/usage.mjs).
 */
export async function buildRunner({ outfile = runnerBody.outfile, sourcemap = false } = {}) {
  const built = await esbuild.build({ logLevel: 'warning', ...runnerBody, absWorkingDir: ROOT, outfile: resolve(ROOT, outfile), sourcemap: sourcemap ? 'external' : false });
  await writeRunner(built.outputFiles, outfile);
}

/** Packs the body's build (its output files: the code, and the map when built with one) into `outfile`. */
export async function writeRunner(outputFiles, outfile = runnerBody.outfile) {
  const code = outputFiles.find((f) => f.path.endsWith('.mjs')).text;
  const title = `svc-runner ${pkg.version} (build ${JSON.parse(define.__SVC_BUILD__)}). Its code is the comment of svcRunnerBody below; the loader after it compiles that with a V8 code cache (docs/runner.md, "Compile cache").`;
  writeFileSync(resolve(ROOT, outfile), await packFile(code, { root: ROOT, title }));
  const map = outputFiles.find((f) => f.path.endsWith('.map'));
  if (map) writeFileSync(resolve(ROOT, `${outfile}.map`), JSON.stringify(shiftMap(map.text)));
}

/** The app's entry output in a metafile of the `web` build, and every chunk it imports statically (to preload). */
export function entryOf(metafile) {
  const outputs = metafile.outputs;
  const entry = Object.keys(outputs).find((f) => outputs[f].entryPoint === web.entryPoints[0] && f.endsWith('.js'));
  if (!entry) throw new Error('the web build has no output for web-static/app.ts');
  return { js: entry, css: outputs[entry].cssBundle ?? null, preload: staticImports(metafile, entry).filter((f) => f !== entry) };
}

/** `file` and the chunks it imports statically, transitively: what the browser loads before it runs. */
export function staticImports(metafile, file) {
  const seen = new Set([file]);
  for (const f of seen) for (const i of metafile.outputs[f]?.imports ?? []) if (i.kind === 'import-statement' && !i.external) seen.add(i.path);
  return [...seen];
}

/** dist/web/index.html: web-static/index.html with the hashed entry's style sheet, preloads and script. */
export function writeIndex(metafile) {
  const { js, css, preload } = entryOf(metafile);
  const url = (f) => `/${relative(WEB_DIR, f)}`;
  const tags = [
    ...(css ? [`<link rel="stylesheet" href="${url(css)}">`] : []),
    ...preload.map((f) => `<link rel="modulepreload" href="${url(f)}">`),
    `<script type="module" src="${url(js)}"></script>`,
  ].join('\n  ');
  const template = readFileSync('web-static/index.html', 'utf8');
  if (!template.includes(ASSETS_MARK)) throw new Error(`web-static/index.html lacks ${ASSETS_MARK}`);
  mkdirSync(WEB_DIR, { recursive: true });
  writeFileSync(`${WEB_DIR}/index.html`, template.replace(ASSETS_MARK, tags));
}

/** The files of web-static/ that esbuild does not bundle (icons) go to dist/web as they are; index.html is writeIndex's. */
export function copyStatic() {
  mkdirSync(WEB_DIR, { recursive: true });
  for (const f of readdirSync('web-static', { withFileTypes: true })) {
    if (f.isFile() && !/\.(tsx?|css)$/.test(f.name) && f.name !== 'index.html') copyFileSync(`web-static/${f.name}`, `${WEB_DIR}/${f.name}`);
  }
}

/**
 * The runner is installed by downloading one file from the server: GET /svc-runner.mjs. It must be ASCII
 * throughout: V8 keeps a script's source in the heap, two bytes per character when one character is not
 * Latin-1 (`charset: 'ascii'` escapes strings and identifiers, not regular expression literals: one `/●/`
 * made the 830 KB file a 1.6 MB string in every daemon). Write such characters as `\u` escapes.
 */
export function publishRunner() {
  const text = readFileSync('dist/svc-runner.mjs', 'latin1');
  const at = text.search(/[^\x00-\x7f]/);
  if (at >= 0) throw new Error(`dist/svc-runner.mjs has a character outside ASCII at byte ${at}: ...${text.slice(Math.max(0, at - 60), at + 20)}... (write it as a \\u escape in the source)`);
  copyFileSync('dist/svc-runner.mjs', 'dist/web/svc-runner.mjs');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  rmSync(WEB_DIR, { recursive: true, force: true }); // hashed files of older builds must not pile up
  for (const f of existsSync('dist') ? readdirSync('dist') : []) if (/^server-.+\.mjs(\.map)?$/.test(f)) rmSync(`dist/${f}`); // the server's chunks too
  const [results] = await Promise.all([Promise.all(builds.map((b) => esbuild.build({ logLevel: 'warning', ...b }))), buildRunner()]);
  writeIndex(results[builds.indexOf(web)].metafile);
  copyStatic();
  publishRunner();
  // A new embedded database starts from this (lib/db/pglite.ts); kept when it is up to date.
  const template = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/pglite-template.ts', 'dist'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (template.status !== 0) throw new Error(`scripts/pglite-template.ts failed (exit ${template.status})`);
  console.log('built dist/server.mjs, dist/svc-runner.mjs, dist/web/, dist/pglite-template/');
}
