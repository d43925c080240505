// The admin pages' weight (docs/performance.md, "Admin pages: bytes per page"): builds the browser
// bundles exactly as esbuild.config.mjs does, with a metafile, then prints what each page downloads —
// gzipped (level 9, what a compressing proxy sends) and raw — and each page module's share of app.js.
// Every page loads app.js and app.css; the Terminal page also loads terminal.js and xterm.css when a
// terminal is attached. Deterministic: no server, no timing.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { execFileSync } from 'node:child_process';
import * as esbuild from 'esbuild';
import { builds, copyStatic } from '../esbuild.config.mjs';

const web = builds.filter((b) => b.platform === 'browser');
const metas = await Promise.all(web.map((b) => esbuild.build({ logLevel: 'warning', ...b, metafile: true })));
copyStatic();
const size = (file) => {
  const raw = readFileSync(file);
  return { raw: raw.length, gzip: gzipSync(raw, { level: 9 }).length };
};
const files = {
  'app.js': size('dist/web/app.js'),
  'app.css': size('dist/web/app.css'),
  'terminal.js': size('dist/web/terminal.js'),
  'xterm.css': size('dist/web/xterm.css'),
};
const kb = (n) => (n / 1024).toFixed(1);
const base = files['app.js'].gzip + files['app.css'].gzip;
console.log('| File | Gzipped KB | Raw KB |\n|---|---:|---:|');
for (const [name, s] of Object.entries(files)) console.log(`| ${name} | ${kb(s.gzip)} | ${kb(s.raw)} |`);
console.log(`\nEvery page: app.js + app.css = ${kb(base)} KB gzipped; Terminal with a terminal open: + ${kb(files['terminal.js'].gzip + files['xterm.css'].gzip)} KB.\n`);
// Each page module's minified bytes inside app.js (esbuild's bytesInOutput), largest first.
const app = metas[web.findIndex((b) => b.outfile === 'dist/web/app.js')].metafile.outputs['dist/web/app.js'].inputs;
const rows = Object.entries(app)
  .filter(([p]) => p.startsWith('web-static/'))
  .map(([p, v]) => [p.replace('web-static/', ''), v.bytesInOutput])
  .sort((a, b) => b[1] - a[1]);
console.log('| Module of app.js | Minified KB |\n|---|---:|');
for (const [p, n] of rows) console.log(`| ${p} | ${kb(n)} |`);
const libs = Object.entries(app).filter(([p]) => p.includes('node_modules/')).reduce((n, [, v]) => n + v.bytesInOutput, 0);
const shared = Object.entries(app).filter(([p]) => !p.includes('node_modules/') && !p.startsWith('web-static/')).reduce((n, [, v]) => n + v.bytesInOutput, 0);
console.log(`| (libraries: preact, htm) | ${kb(libs)} |`);
console.log(`| (code shared with the server: notification texts) | ${kb(shared)} |`);
let commit = '';
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim();
} catch {}
console.log(JSON.stringify({ commit, files, modules: Object.fromEntries(rows), libraries: libs, shared }));
