// Embedded PostgreSQL (PGlite, WASM) — the default when DATABASE_URL is unset. One process, one
// connection: PGlite serializes queries itself, and transactions hold it exclusively.
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
// The package (and its WASM) is loaded when an embedded database is opened, not at start-up.
import type { PGlite } from '@electric-sql/pglite';
import type { Logger } from '../log.ts';
import { migrate } from './migrate.ts';
import type { Migration } from './migrate.ts';
import type { Db, Queryable, Sql } from './port.ts';
import { withCommitHooks } from './port.ts';

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
/** How long an empty svc.lock counts as being written by a starting process rather than left by a crash. */
const EMPTY_LOCK_GRACE_MS = 10_000;

async function lock(dataDir: string, createdNow: boolean): Promise<() => void> {
  const file = join(dataDir, 'svc.lock');
  const inUse = (pid: number | string) =>
    new Error(`the embedded database in ${dataDir} is in use by process ${pid}; stop that process first (or use PostgreSQL for several processes)`);
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      // Two processes that both found the same stale lock may both get here; only the one whose pid
      // is still in the file a moment later owns it. In a directory this process has just made there
      // was no stale lock to take over, so nobody else can have removed this one.
      if (tries > 0 || !createdNow) {
        await new Promise((r) => setTimeout(r, 50));
        const owner = Number(readFileSync(file, 'utf8'));
        if (owner !== process.pid) throw inUse(owner);
      }
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // including inUse above
      const text = readFileSync(file, 'utf8');
      // An empty lock is one whose owner is writing its pid right now — unless it is old (a crash between the two).
      if (!text && Date.now() - statSync(file).mtimeMs < EMPTY_LOCK_GRACE_MS) throw inUse('(starting)');
      const pid = Number(text);
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
  /**
   * How the template is made; a template of another layout is made again. 2: without template0 and
   * template1, the WAL switched to a new segment and checkpointed, and files stored without their zero tail.
   */
  layout: number;
  migrations: { name: string; checksum: string }[];
  /** Files stored without their tail of zero bytes (the WAL segment), with their full sizes: extended on copy. */
  trimmed?: Record<string, number>;
}

const TEMPLATE_LAYOUT = 2;

export function templateManifest(migrations: Migration[]): TemplateManifest {
  return { pglite: pgliteVersion(), layout: TEMPLATE_LAYOUT, migrations: migrations.map(({ name, checksum }) => ({ name, checksum })) };
}

/** The template's manifest when it suits this server and this data dir is new (nothing in it but our lock); why not is logged. */
function usableTemplate(dataDir: string, t: PgliteTemplate | undefined, log?: Logger): TemplateManifest | null {
  if (!t || !existsSync(join(t.dir, 'PG_VERSION')) || !existsSync(t.manifest)) return null;
  if (readdirSync(dataDir).some((n) => n !== 'svc.lock')) return null; // not new
  try {
    const m = JSON.parse(readFileSync(t.manifest, 'utf8')) as TemplateManifest;
    const prefix = t.migrations.slice(0, m.migrations.length);
    const same = m.pglite === pgliteVersion() && m.layout === TEMPLATE_LAYOUT && prefix.length === m.migrations.length && prefix.every((x, i) => x.name === m.migrations[i].name && x.checksum === m.migrations[i].checksum);
    if (!same) log?.info('the embedded database template does not match this build; initialising from scratch', { template: t.dir });
    return same ? m : null;
  } catch (err) {
    log?.warn('the embedded database template cannot be read; initialising from scratch', { template: t.dir, problem: err instanceof Error ? err.message : String(err) });
    return null;
  }
}

/**
 * Copy the template into a new data dir, owner-only as PGlite makes its own files (directories 0700, files
 * 0600; the template is readable by all, since any user may run the server), and give the trimmed files
 * their zero tails back as holes.
 */
function copyTemplate(from: string, to: string, trimmed: Record<string, number>): void {
  const copy = (src: string, dst: string) => {
    for (const e of readdirSync(src, { withFileTypes: true })) {
      const a = join(src, e.name);
      const b = join(dst, e.name);
      if (e.isDirectory()) {
        mkdirSync(b, { mode: 0o700 });
        copy(a, b);
      } else writeFileSync(b, readFileSync(a), { mode: 0o600 });
    }
  };
  chmodSync(to, 0o700);
  copy(from, to);
  for (const [file, size] of Object.entries(trimmed)) truncateSync(join(to, file), size);
}

/** Build time: cut the zero tail of each WAL segment (to whole 8 kB pages); answers their full sizes. */
function trimWal(dir: string): Record<string, number> {
  const trimmed: Record<string, number> = {};
  for (const name of readdirSync(join(dir, 'pg_wal'))) {
    if (!/^[0-9A-F]{24}$/.test(name)) continue;
    const file = join(dir, 'pg_wal', name);
    const bytes = readFileSync(file);
    let end = bytes.length;
    while (end > 0 && bytes[end - 1] === 0) end--;
    const kept = Math.ceil(end / 8192) * 8192;
    if (kept === bytes.length) continue;
    truncateSync(file, kept);
    trimmed[`pg_wal/${name}`] = bytes.length;
  }
  return trimmed;
}

/** Build time: a new database in `dir` with `migrations` applied, closed cleanly. */
export async function makePgliteTemplate(dir: string, migrations: Migration[], log: Logger): Promise<TemplateManifest> {
  const { PGlite } = await import('@electric-sql/pglite');
  const pg = await PGlite.create(dir);
  try {
    await migrate({ driver: 'pglite', ...wrap(pg), transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))) } as Db, migrations, log);
    // The server only ever uses the `postgres` database and never creates one: the two template databases
    // are a third of the files a first start copies (docs/performance.md, Cold start).
    for (const name of ['template0', 'template1']) {
      await pg.exec(`alter database ${name} is_template false`);
      await pg.exec(`drop database ${name}`);
    }
    // initdb and the migrations filled 9 MB of the 16 MB WAL segment, all of it before the last checkpoint:
    // a new segment, old ones removed (not recycled, which would keep their bytes), leaves a few hundred bytes.
    await pg.exec('set wal_recycle = off');
    await pg.query('select pg_switch_wal()');
    await pg.exec('checkpoint');
    await pg.exec('checkpoint');
  } finally {
    await pg.close();
  }
  return { ...templateManifest(migrations), trimmed: trimWal(dir) };
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

/**
 * PostgreSQL's shared buffers inside PGlite (PGLITE_SHARED_BUFFERS). The WASM build zeroes all of them at
 * every start, in code not yet optimised, about 3 ms per MB here: initdb's 128MB was a third of a first
 * start and 128 MiB of resident memory. Pages that do not fit are read through the OS's file cache.
 */
export const DEFAULT_SHARED_BUFFERS = '32MB';

/**
 * V8 compiles WASM functions quickly first (Liftoff), then again optimised (TurboFan) once a function has
 * run for its "tiering budget". At the default budget PGlite's start-up alone sends hundreds of functions
 * to TurboFan, and the main thread waits on that compilation: a new server answered its first request
 * ~370 ms after it listened on 2 cores, ~130 ms with ten times the budget (docs/performance.md, Cold
 * start). Functions that stay hot are still optimised, a little later. Set once, before PGlite's module
 * is compiled; an explicit --wasm-tiering-budget on the command line wins.
 */
function wasmTiering(): void {
  if (process.execArgv.some((a) => a.startsWith('--wasm-tiering-budget')) || /--wasm-tiering-budget/.test(process.env.NODE_OPTIONS ?? '')) return;
  setFlagsFromString('--wasm-tiering-budget=18000000');
}

export async function openPglite(dataDir: string, template?: PgliteTemplate, log?: Logger, sharedBuffers = DEFAULT_SHARED_BUFFERS): Promise<Db> {
  const memory = dataDir === 'memory://';
  // mkdirSync answers the first directory it made, undefined when `dataDir` was there already.
  const createdNow = !memory && mkdirSync(dataDir, { recursive: true }) !== undefined;
  const unlock = memory ? () => {} : await lock(dataDir, createdNow);
  let pg: PGlite;
  try {
    wasmTiering();
    const { PGlite } = await import('@electric-sql/pglite');
    const manifest = memory ? null : usableTemplate(dataDir, template, log);
    if (manifest) {
      copyTemplate(template!.dir, dataDir, manifest.trimmed ?? {});
      log?.info('new embedded database copied from the build\'s template', { dataDir, template: template!.dir });
    }
    pg = await PGlite.create(memory ? undefined : dataDir, { startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}`] });
  } catch (err) {
    unlock();
    throw err;
  }
  const base = wrap(pg);
  return {
    driver: 'pglite',
    ...base,
    transaction: (fn) => pg.transaction((tx) => withCommitHooks(wrap(tx), fn)),
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
