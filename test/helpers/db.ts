// Test databases: a fresh PGlite data dir (copied from a template, so no initdb per test) or a fresh
// database on the real PostgreSQL server named by TEST_DATABASE_URL. SVC_TEST_DB picks the driver.
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import postgres from 'postgres';
import { loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';

export const TEST_DB = (process.env.SVC_TEST_DB ?? 'pglite') as 'pglite' | 'postgres';
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const ROOT = resolve(import.meta.dirname, '..', '..');
export const TMP = join(ROOT, '.tmp');
const TEMPLATE = join(TMP, 'pglite-template');

export function tempDir(prefix = 'svc-'): string {
  mkdirSync(TMP, { recursive: true });
  return mkdtempSync(join(TMP, prefix));
}

/**
 * An initialised, empty PGlite data dir, made once and copied per use: `<own temp dir>/pglite`, so what
 * the server keeps beside it (the generated encryption.key) belongs to this copy alone. Remove it with
 * removePglite.
 */
export async function pgliteDataDir(): Promise<string> {
  if (!existsSync(join(TEMPLATE, 'PG_VERSION'))) {
    const building = tempDir('template-');
    const db = await openPglite(building);
    await db.close();
    try {
      renameSync(building, TEMPLATE);
    } catch {
      rmSync(building, { recursive: true, force: true }); // another test process made it first
    }
  }
  const dir = join(tempDir('pglite-'), 'pglite');
  cpSync(TEMPLATE, dir, { recursive: true });
  return dir;
}

/** Remove a data dir from pgliteDataDir with its parent (and so the key file beside it). */
export const removePglite = (dir: string) => rmSync(dirname(dir), { recursive: true, force: true });

/** A new, empty database on the PostgreSQL server; drop() removes it. */
export async function freshPostgres(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `svc_t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const a = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
      await a.end();
    },
  };
}

/** The domain code's Db port over a fresh database of the selected driver. */
export async function openTestDb(): Promise<{ db: Db; cleanup: () => Promise<void> }> {
  if (TEST_DB === 'postgres') {
    const pg = await freshPostgres();
    const db = await openPostgres(pg.url, 5);
    return { db, cleanup: async () => (await db.close(), await pg.drop()) };
  }
  const dir = await pgliteDataDir();
  const db = await openPglite(dir);
  return { db, cleanup: async () => (await db.close(), removePglite(dir)) };
}

/** openTestDb with every migration of sql/ applied. */
export async function migratedTestDb(): Promise<{ db: Db; cleanup: () => Promise<void> }> {
  const t = await openTestDb();
  await migrate(t.db, loadMigrations(join(ROOT, 'sql')), createLogger('error'));
  return t;
}

/** A test server's audit anchor file (AUDIT_ANCHOR_PATH): one per database, so a restart on the same
 *  data finds it and servers of different tests never share one. */
export function anchorPathFor(dbEnv: Record<string, string>): string {
  // A PGlite dir from pgliteDataDir is `<its own temp dir>/pglite`: the anchor goes beside it (removed with it).
  if (dbEnv.PGLITE_DATA_DIR) return join(dirname(dbEnv.PGLITE_DATA_DIR), 'audit-anchor.json');
  return join(TMP, 'anchors', `${createHash('sha256').update(dbEnv.DATABASE_URL ?? '').digest('hex').slice(0, 16)}.json`);
}

/** Server environment pointing at a fresh database of the selected driver. */
export async function serverDbEnv(): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }> {
  if (TEST_DB === 'postgres') {
    const pg = await freshPostgres();
    const env = { DATABASE_URL: pg.url, AUDIT_ANCHOR_PATH: anchorPathFor({ DATABASE_URL: pg.url }) };
    return { env, cleanup: async () => (await pg.drop(), rmSync(env.AUDIT_ANCHOR_PATH, { force: true })) };
  }
  const dir = await pgliteDataDir();
  const env = { PGLITE_DATA_DIR: dir, AUDIT_ANCHOR_PATH: anchorPathFor({ PGLITE_DATA_DIR: dir }) };
  return { env, cleanup: async () => (removePglite(dir), rmSync(env.AUDIT_ANCHOR_PATH, { force: true })) };
}

/** What onlyOn needs of uvu's `test`: its skip. */
type Registrar = { skip: (name: string, fn: () => void) => void };

/**
 * Tests that need one driver (a real PostgreSQL server for replicas, dumps and superuser edits; PGlite's
 * single-process lock): registered with that driver, and on the other reported as `count` skipped tests
 * rather than as a file that passed with nothing run.
 */
export function onlyOn(db: 'pglite' | 'postgres', t: Registrar, count: number, register: () => void): void {
  if (TEST_DB === db) return register();
  for (let i = 1; i <= count; i++) t.skip(`runs on ${db} only (${i}/${count})`, () => {});
}
