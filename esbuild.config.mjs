// Builds the three artifacts: dist/server.mjs (API + jobs + static serving; node_modules beside it),
// dist/svc-runner.mjs (ONE self-contained file), dist/web/ (the admin pages).
import { copyFileSync, cpSync, mkdirSync, readFileSync } from 'node:fs';
import * as esbuild from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const define = { __SVC_VERSION__: JSON.stringify(pkg.version) };
// ESM bundles that still contain CommonJS dependencies need a require() of their own.
const banner = { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" };

/**
 * The usage scan's worker thread (runner/usage/worker.ts), bundled on its own and embedded in the runner as a
 * string that `new Worker(code, { eval: true })` runs: the runner stays one file, and the worker does not
 * compile the whole runner (~40 KB instead of ~840 KB).
 */
const usageWorker = esbuild.buildSync({
  entryPoints: ['runner/usage/worker.ts'],
  absWorkingDir: new URL('.', import.meta.url).pathname,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true, // identifiers kept: a worker's CPU profile names its functions
  write: false,
  logLevel: 'warning',
}).outputFiles[0].text;

/** The admin pages' bundles. */
const browser = { bundle: true, platform: 'browser', format: 'esm', target: 'es2022', minify: true, sourcemap: true };

export const builds = [
  {
    entryPoints: ['functions/server.ts'],
    outfile: 'dist/server.mjs',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external', // PGlite loads its WASM next to its own module; the image ships node_modules
    sourcemap: true,
    define,
    banner,
  },
  {
    entryPoints: ['runner/cli.ts'],
    outfile: 'dist/svc-runner.mjs',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    define: { ...define, __SVC_USAGE_WORKER__: JSON.stringify(usageWorker) },
    banner: { js: '#!/usr/bin/env node\n' + banner.js },
    external: ['@parcel/watcher'], // optional native module, loaded only when present
    // Runner code imports zod as `import * as z from 'zod'`: the named `{ z }` export keeps all of zod
    // (locales included) and makes this file ~960 KB instead of ~400 KB.
  },
  // The terminal (xterm.js) is its own file, loaded only when an admin opens one.
  { ...browser, entryPoints: ['web-static/terminal-view.ts'], outfile: 'dist/web/terminal.js' },
  { ...browser, entryPoints: ['web-static/app.ts'], outfile: 'dist/web/app.js', define },
];

/** Every file of web-static/ that esbuild does not compile (HTML, CSS, icons) goes to dist/web as is. */
export function copyStatic() {
  mkdirSync('dist/web', { recursive: true });
  cpSync('web-static', 'dist/web', { recursive: true, filter: (src) => !/\.tsx?$/.test(src) });
  copyFileSync('node_modules/@xterm/xterm/css/xterm.css', 'dist/web/xterm.css');
}

/** The runner is installed by downloading one file from the server: GET /svc-runner.mjs. */
export function publishRunner() {
  copyFileSync('dist/svc-runner.mjs', 'dist/web/svc-runner.mjs');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await Promise.all(builds.map((b) => esbuild.build({ logLevel: 'warning', ...b })));
  copyStatic();
  publishRunner();
  console.log('built dist/server.mjs, dist/svc-runner.mjs, dist/web/');
}
