// Build step (esbuild.config.mjs): dist/pglite-template/, a PGlite data directory with every migration in
// sql/ applied, and dist/pglite-template.json, its manifest (PGlite's version, the migrations' names and
// checksums). A new embedded database starts as a copy of it instead of running initdb
// (lib/db/pglite.ts), which made the first start seconds slower than the next ones (docs/performance.md,
// Cold start). It holds the schema only: no seed, no keys, no users — those are made per instance at its
// first start. Kept as it is when it is up to date.
//
//   node --import tsx scripts/pglite-template.ts [outDir=dist]
import { chmodSync, existsSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadMigrations } from '../functions/lib/db/migrate.ts';
import { makePgliteTemplate, templateManifest } from '../functions/lib/db/pglite.ts';
import { createLogger } from '../functions/lib/log.ts';

const out = resolve(process.argv[2] ?? 'dist');
const root = resolve(import.meta.dirname, '..');
const dir = join(out, 'pglite-template');
const manifestFile = join(out, 'pglite-template.json');
const started = performance.now();
const migrations = loadMigrations(join(root, 'sql'));
const wanted = JSON.stringify(templateManifest(migrations));
/** The manifest written with the template, without what making it found (the trimmed files). */
const made = () => {
  try {
    const { trimmed: _, ...m } = JSON.parse(readFileSync(manifestFile, 'utf8'));
    return JSON.stringify(m);
  } catch {
    return null;
  }
};
if (existsSync(join(dir, 'PG_VERSION')) && made() === wanted) {
  console.log(`${dir} is up to date`);
  process.exit(0);
}
// Made under a temporary name and renamed: a server starting meanwhile never copies half a directory.
const tmp = `${dir}.tmp-${process.pid}`;
rmSync(tmp, { recursive: true, force: true });
rmSync(manifestFile, { force: true });
const manifest = await makePgliteTemplate(tmp, migrations, createLogger('warn'));
// PGlite writes its files owner-only; the server may run as another user than the build (the image's
// `node` user, the build as root), so the template is readable by all. A copy is made private again
// (lib/db/pglite.ts).
const readable = (path: string) => {
  for (const e of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    if (e.isDirectory()) {
      chmodSync(p, 0o755);
      readable(p);
    } else chmodSync(p, 0o644);
  }
};
chmodSync(tmp, 0o755);
readable(tmp);
rmSync(dir, { recursive: true, force: true });
renameSync(tmp, dir);
writeFileSync(manifestFile, JSON.stringify(manifest, null, 2) + '\n');
console.log(`built ${dir} (${manifest.migrations.length} migrations, PGlite ${manifest.pglite}) in ${Math.round(performance.now() - started)} ms`);
