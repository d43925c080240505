// Forward-only migrations (spec: Upgrade; DESIGN §2). Each file runs in its own transaction under a
// transaction-level advisory lock, so replicas that start together apply each file exactly once and
// in order; a crash mid-file rolls that file back and the next start applies it again. Applied files
// are recorded with a SHA-256 checksum: an edited applied file is a start error, never silently skipped.
// A new database (nothing recorded) gets every file in ONE transaction — the one that checked, under its
// lock — sent as one statement list: one round trip instead of seven per file, and nothing for this
// process to do while PostgreSQL runs the DDL (the server loads its code meanwhile: `whileApplying`). If
// that fails, it rolls back whole and the files are applied one by one as on any database, so a failure
// still names its file and the earlier ones stay.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log.ts';
import { sql } from './port.ts';
import type { Db, Queryable } from './port.ts';

const LOCK_KEY = 4_242_001; // pg_advisory_xact_lock key reserved for migrations and the seed
const FILE = /^(\d{4})_[a-z0-9_-]+\.sql$/;

export interface Migration {
  name: string;
  checksum: string;
  text: string;
}

export class MigrationError extends Error {}

export function loadMigrations(dir: string): Migration[] {
  const names = readdirSync(dir).filter((n) => FILE.test(n)).sort();
  const seen = new Set<string>();
  return names.map((name) => {
    const number = FILE.exec(name)![1];
    if (seen.has(number)) throw new MigrationError(`two migrations share the number ${number} in ${dir}`);
    seen.add(number);
    const text = readFileSync(join(dir, name), 'utf8');
    return { name, text, checksum: createHash('sha256').update(text).digest('hex') };
  });
}

async function lock(tx: Queryable) {
  await tx.query(sql`select pg_advisory_xact_lock(${LOCK_KEY})`);
  await tx.exec(`create table if not exists schema_migrations (
    name text primary key,
    checksum text not null,
    applied_at timestamptz not null default now()
  )`);
}

/** An applied migration whose file changed since: a start error. */
function edited(m: Migration, recorded: string): MigrationError {
  return new MigrationError(
    `migration ${m.name} was edited after it was applied (recorded checksum ${recorded.slice(0, 12)}…, file ${m.checksum.slice(0, 12)}…); add a new migration instead of editing an applied one`,
  );
}

/** Every file and its record as one statement list (one simple-protocol message, one round trip). */
function batchText(migrations: Migration[]): string {
  // Names match FILE and checksums are hex: nothing in them needs quoting.
  const record = `insert into schema_migrations (name, checksum) values ${migrations.map((m) => `('${m.name}', '${m.checksum}')`).join(', ')}`;
  return [...migrations.map((m) => m.text), record].join('\n;\n');
}

export interface MigrateOptions {
  /**
   * Called once, when what is left needs this process only to wait: the new database's statements are
   * sent, or nothing (or only a few files of an upgrade) is left. The server starts loading its code then.
   */
  whileApplying?: () => void;
}

export async function migrate(db: Db, migrations: Migration[], log: Logger, options: MigrateOptions = {}): Promise<{ applied: string[] }> {
  let called = false;
  const whileApplying = () => {
    if (called) return;
    called = true;
    options.whileApplying?.();
  };
  const applied: string[] = [];
  const known = new Set(migrations.map((m) => m.name));
  // One transaction reads what is recorded and checks all of it: on an up-to-date database (every start
  // but the first after an upgrade) nothing else runs. On a new one (nothing recorded) it applies every
  // file too, still under the lock, so no other replica can record anything meanwhile.
  let batch = false;
  let missing: Migration[];
  try {
    missing = await db.transaction(async (tx) => {
      await lock(tx);
      const rows = await tx.query<{ name: string; checksum: string }>(sql`select name, checksum from schema_migrations order by name`);
      const unknown = rows.map((r) => r.name).filter((n) => !known.has(n));
      if (unknown.length) {
        throw new MigrationError(
          `the database has migrations this version does not know (${unknown.join(', ')}): it was upgraded by a newer version; migrations only go forward — restore a dump or run the newer version`,
        );
      }
      const recorded = new Map(rows.map((r) => [r.name, r.checksum]));
      for (const m of migrations) {
        const checksum = recorded.get(m.name);
        if (checksum !== undefined && checksum !== m.checksum) throw edited(m, checksum);
      }
      if (rows.length === 0 && migrations.length > 1) {
        batch = true;
        log.info('applying every migration to a new database', { count: migrations.length, first: migrations[0].name, last: migrations.at(-1)!.name });
        const applying = tx.exec(batchText(migrations));
        whileApplying();
        await applying;
        return [];
      }
      return migrations.filter((m) => !recorded.has(m.name));
    });
  } catch (err) {
    if (!batch) throw err;
    // All of it rolled back: file by file, as on any database, so the error names the file that fails.
    log.warn('the migrations did not apply in one transaction; applying them one by one', { error: err instanceof Error ? err.message : String(err) });
    missing = migrations;
  }
  if (batch && missing.length === 0) {
    log.info('migrations up to date', { total: migrations.length, applied: migrations.length });
    return { applied: migrations.map((m) => m.name) };
  }
  whileApplying();
  // Each missing file in its own transaction, checked again under the lock: another replica may have
  // applied it meanwhile.
  for (const m of missing) {
    await db.transaction(async (tx) => {
      await lock(tx);
      const [row] = await tx.query<{ checksum: string }>(sql`select checksum from schema_migrations where name = ${m.name}`);
      if (row) {
        if (row.checksum !== m.checksum) throw edited(m, row.checksum);
        return;
      }
      log.info('applying migration', { name: m.name });
      try {
        await tx.exec(m.text);
      } catch (err) {
        throw new MigrationError(`migration ${m.name} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      await tx.query(sql`insert into schema_migrations (name, checksum) values (${m.name}, ${m.checksum})`);
      applied.push(m.name);
    });
  }
  log.info('migrations up to date', { total: migrations.length, applied: applied.length });
  return { applied };
}

/**
 * The idempotent seed (spec: Upgrade step 2), under the same lock so replicas do not race: `text`
 * (sql/seed.sql), then `more` in the same transaction (the server's own rows: functions/seed.ts adds the
 * price table; passed in so this lower module imports no area).
 */
export async function seed(db: Db, text: string, log: Logger, more?: (tx: Queryable) => Promise<unknown>): Promise<void> {
  await db.transaction(async (tx) => {
    await lock(tx);
    await tx.exec(text);
    await more?.(tx);
  });
  log.info('seed applied');
}
