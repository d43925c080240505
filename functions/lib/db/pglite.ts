// Embedded PostgreSQL (PGlite, WASM) — the default when DATABASE_URL is unset. One process, one
// connection: PGlite serializes queries itself, and transactions hold it exclusively.
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
// The package (and its WASM) is loaded when an embedded database is opened, not at start-up.
import type { PGlite } from '@electric-sql/pglite';
import type { Logger } from '../log.ts';
import { migrate } from './migrate.ts';
import type { Migration } from './migrate.ts';
import type { Db, Queryable, Sql } from './port.ts';

type PgliteLike = Pick<PGlite, 'query' | 'exec'>;

function wrap(pg: PgliteLike): Queryable {
  return {
    async query<T>(q: Sql) {
      const { text, params } = q.compile();
      return (await pg.query<T>(text, params)).rows;
    },
    async exec(text: string) {
      await pg.exec(text);
    },
  };
}

/**
 * PGlite is one process's database: a second process opening the same directory would corrupt it.
 * `svc.lock` holds the owner's pid; a lock whose process is gone (kill -9, crash) is taken over.
 */
async function lock(dataDir: string): Promise<() => void> {
  const file = join(dataDir, 'svc.lock');
  const inUse = (pid: number) =>
    new Error(`the embedded database in ${dataDir} is in use by process ${pid}; stop that process first (or use PostgreSQL for several processes)`);
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      // Two processes that both found the same stale lock may both get here; only the one whose pid
      // is still in the file a moment later owns it.
      await new Promise((r) => setTimeout(r, 50));
      const owner = Number(readFileSync(file, 'utf8'));
      if (owner !== process.pid) throw inUse(owner);
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // including inUse above
      const pid = Number(readFileSync(file, 'utf8'));
      if (pid && pid !== process.pid && alive(pid)) throw inUse(pid);
      rmSync(file, { force: true }); // stale: its owner is gone
    }
  }
  throw new Error(`cannot lock the embedded database in ${dataDir}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A new embedded database starts as a copy of a data directory made at build time with every migration
 * of that build applied (dist/pglite-template/, written by scripts/pglite-template.ts): copying it takes
 * a fraction of PGlite's initdb. It holds the schema only — nothing of an instance (no seed, no keys,
 * no users): the start-up then applies any newer migration and the seed as on any database. `manifest`
 * lists the migrations in it, with PGlite's version; the template is used only when those are the
 * first migrations of this server, unchanged, and PGlite is the same version; otherwise initdb runs.
 */
export interface PgliteTemplate {
  dir: string;
  manifest: string;
  migrations: Migration[];
}

interface TemplateManifest {
  pglite: string;
  migrations: { name: string; checksum: string }[];
}

export function templateManifest(migrations: Migration[]): TemplateManifest {
  return { pglite: pgliteVersion(), migrations: migrations.map(({ name, checksum }) => ({ name, checksum })) };
}

/** Does the template suit this server, and is this data dir new (nothing in it but our lock)? Why not is logged. */
function usableTemplate(dataDir: string, t: PgliteTemplate | undefined, log?: Logger): boolean {
  if (!t || !existsSync(join(t.dir, 'PG_VERSION')) || !existsSync(t.manifest)) return false;
  if (readdirSync(dataDir).some((n) => n !== 'svc.lock')) return false; // not new
  try {
    const m = JSON.parse(readFileSync(t.manifest, 'utf8')) as TemplateManifest;
    const prefix = t.migrations.slice(0, m.migrations.length);
    const same = m.pglite === pgliteVersion() && prefix.length === m.migrations.length && prefix.every((x, i) => x.name === m.migrations[i].name && x.checksum === m.migrations[i].checksum);
    if (!same) log?.info('the embedded database template does not match this build; initialising from scratch', { template: t.dir });
    return same;
  } catch (err) {
    log?.warn('the embedded database template cannot be read; initialising from scratch', { template: t.dir, problem: err instanceof Error ? err.message : String(err) });
    return false;
  }
}

/** Owner-only modes below `dir`, as PGlite makes its own files: directories 0700, files 0600. */
function privateTree(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      chmodSync(p, 0o700);
      privateTree(p);
    } else if (e.name !== 'svc.lock') chmodSync(p, 0o600);
  }
}

/** Build time: a new database in `dir` with `migrations` applied, closed cleanly. */
export async function makePgliteTemplate(dir: string, migrations: Migration[], log: Logger): Promise<TemplateManifest> {
  const { PGlite } = await import('@electric-sql/pglite');
  const pg = await PGlite.create(dir);
  try {
    await migrate({ driver: 'pglite', ...wrap(pg), transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))) } as Db, migrations, log);
  } finally {
    await pg.close();
  }
  return templateManifest(migrations);
}

/** The installed PGlite's version (its package.json, found above its entry point), which the template must match. */
function pgliteVersion(): string {
  let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version: string };
      if (pkg.name === '@electric-sql/pglite') return pkg.version;
    }
    if (dirname(dir) === dir) return 'unknown';
    dir = dirname(dir);
  }
}

export async function openPglite(dataDir: string, template?: PgliteTemplate, log?: Logger): Promise<Db> {
  const memory = dataDir === 'memory://';
  if (!memory) mkdirSync(dataDir, { recursive: true });
  const unlock = memory ? () => {} : await lock(dataDir);
  let pg: PGlite;
  try {
    const { PGlite } = await import('@electric-sql/pglite');
    if (!memory && usableTemplate(dataDir, template, log)) {
      cpSync(template!.dir, dataDir, { recursive: true });
      privateTree(dataDir); // the template is readable by all (any user may run the server); the database is not
      log?.info('new embedded database copied from the build\'s template', { dataDir, template: template!.dir });
    }
    pg = await PGlite.create(memory ? undefined : dataDir);
  } catch (err) {
    unlock();
    throw err;
  }
  const base = wrap(pg);
  return {
    driver: 'pglite',
    ...base,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    async listen(channel, onPayload) {
      const unlisten = await pg.listen(channel, onPayload);
      return () => unlisten();
    },
    async notify(channel, payload) {
      await pg.query('select pg_notify($1, $2)', [channel, payload]);
    },
    close: async () => {
      await pg.close();
      unlock();
    },
  };
}
