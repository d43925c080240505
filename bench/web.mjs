// The admin pages' weight (docs/performance.md, "Admin pages: bytes per page"): builds the browser
// bundle exactly as esbuild.config.mjs does (split, hashed), in memory, then prints what each page
// downloads on a first visit — gzipped (level 9, what a compressing proxy sends) and raw: the entry and
// the chunks it imports statically (index.html preloads them), the page's own chunk and the chunks it
// imports, and the style sheet. The Terminal page adds the terminal chunk (xterm.js and its CSS) only
// when a terminal is attached. The baseline, built in the same run: the same code as ONE bundle (no
// splitting; the terminal kept apart as before), which every page loaded whole. Deterministic: no
// server, no timing, nothing written to dist/.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { entryOf, staticImports, web } from '../esbuild.config.mjs';

const result = await esbuild.build({ ...web, logLevel: 'warning', write: false });
const { metafile } = result;
const bytes = new Map(result.outputFiles.map((f) => [f.path, f.contents]));
const sizes = new Map();
const size = (file) => {
  if (!sizes.has(file)) {
    const raw = bytes.get(resolve(file));
    if (!raw) throw new Error(`no output ${file}`);
    sizes.set(file, { raw: raw.length, gzip: gzipSync(raw, { level: 9 }).length });
  }
  return sizes.get(file);
};
/** A file's name without its hash (shared chunks keep it: they have no other name). */
const short = (file) => file.replace(/^.*\//, '').replace(/^(?!chunk-)([\w-]+)-[A-Z2-7]{8}(?=\.)/, '$1');
const kb = (n) => (n / 1024).toFixed(1);
const sum = (files, key = 'gzip') => files.reduce((n, f) => n + size(f)[key], 0);

const entry = entryOf(metafile);
const always = [entry.js, ...entry.preload];
/** The output chunk made for a module that is imported with import() (its entryPoint). */
const chunkOf = (module) => Object.keys(metafile.outputs).find((f) => metafile.outputs[f].entryPoint === module && f.endsWith('.js'));

// The routes and their modules, as web-static/app.ts declares them (PAGES: `name: { … import('./pages/x.ts') …`).
const app = readFileSync('web-static/app.ts', 'utf8');
const routes = [...app.matchAll(/^ {2}(\w+): \{[^\n]*?(?:import\('\.\/(pages\/[\w-]+\.ts)'\)|Promise\.resolve)/gm)].map((m) => ({ route: m[1], module: m[2] ? `web-static/${m[2]}` : null }));
if (routes.length < 10) throw new Error(`found only ${routes.length} routes in web-static/app.ts`);

const pages = routes.map(({ route, module }) => {
  const chunk = module ? chunkOf(module) : null;
  if (module && !chunk) throw new Error(`no chunk for ${module}`);
  const js = [...new Set([...always, ...(chunk ? staticImports(metafile, chunk) : [])])];
  return { route, js, jsGzip: sum(js), css: entry.css ? size(entry.css).gzip : 0, raw: sum(js, 'raw') + (entry.css ? size(entry.css).raw : 0) };
});
const terminalView = chunkOf('web-static/terminal-view.ts');
const terminalExtra = staticImports(metafile, terminalView).filter((f) => !pages.find((p) => p.route === 'terminal').js.includes(f));

console.log('| Page (first visit) | JS files | JS gzipped KB | CSS gzipped KB | Total gzipped KB | Raw KB |\n|---|---:|---:|---:|---:|---:|');
for (const p of pages) console.log(`| #/${p.route} | ${p.js.length} | ${kb(p.jsGzip)} | ${kb(p.css)} | ${kb(p.jsGzip + p.css)} | ${kb(p.raw)} |`);
console.log(`| #/terminal, a terminal attached | +${terminalExtra.length} | +${kb(sum(terminalExtra))} | (in the JS) | +${kb(sum(terminalExtra))} | +${kb(sum(terminalExtra, 'raw'))} |`);
const totals = pages.map((p) => p.jsGzip + p.css);
// The baseline: one bundle of the same sources, as before the split.
const one = await esbuild.build({ ...web, splitting: false, entryNames: '[name]', chunkNames: '[name]', external: ['*terminal-view.ts'], logLevel: 'warning', write: false });
const oneGzip = one.outputFiles.filter((f) => /\.(js|css)$/.test(f.path)).reduce((n, f) => n + gzipSync(f.contents, { level: 9 }).length, 0);
const ratio = (n) => (n / oneGzip).toFixed(2);
console.log(`\nEvery page loads the entry and its ${entry.preload.length} preloaded chunk(s) + the style sheet: ${kb(sum(always) + (entry.css ? size(entry.css).gzip : 0))} KB gzipped; ` +
  `a first visit costs ${kb(Math.min(...totals))}–${kb(Math.max(...totals))} KB; each further page only its own chunk(s).`);
console.log(`Baseline, the same sources as one bundle (JS + CSS, every page): ${kb(oneGzip)} KB gzipped; a first visit now costs ${ratio(Math.min(...totals))}–${ratio(Math.max(...totals))}× that.\n`);

const files = Object.keys(metafile.outputs).filter((f) => !f.endsWith('.map')).sort((a, b) => size(b).gzip - size(a).gzip);
/** The largest modules in an output (minified bytes), libraries by package name. */
const contents = (f) =>
  [
    ...Object.entries(metafile.outputs[f].inputs)
      .map(([p, v]) => [/node_modules\//.test(p) ? p.replace(/^.*node_modules\/((?:@[^/]+\/)?[^/]+).*$/, '$1') : p.replace(/^web-static\//, ''), v.bytesInOutput])
      .reduce((m, [name, n]) => m.set(name, (m.get(name) ?? 0) + n), new Map())
      .entries(),
  ]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([name]) => name)
    .join(', ');
console.log('| File (hash left out) | Gzipped KB | Raw KB | Loaded by | Largest modules |\n|---|---:|---:|---|---|');
for (const f of files) {
  const users = pages.filter((p) => p.js.includes(f)).map((p) => p.route);
  const when = f === entry.css || always.includes(f) ? 'every page' : f === terminalView || terminalExtra.includes(f) ? 'a terminal attached' : users.join(', ');
  console.log(`| ${short(f)} | ${kb(size(f).gzip)} | ${kb(size(f).raw)} | ${when} | ${contents(f)} |`);
}
let commit = '';
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim();
} catch {}
console.log(
  JSON.stringify({
    commit,
    pages: Object.fromEntries(pages.map((p) => [p.route, { js: p.js.length, jsGzip: p.jsGzip, cssGzip: p.css }])),
    terminalAttached: sum(terminalExtra),
    oneBundleGzip: oneGzip,
    files: Object.fromEntries(files.map((f) => [short(f), size(f)])),
  }),
);
