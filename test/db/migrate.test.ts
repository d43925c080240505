// Migrations: forward only, once each, checksummed, transactional (runs on PGlite and PostgreSQL).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MigrationError, loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { seed } from '../../functions/seed.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { ROOT, openTestDb, tempDir } from '../helpers/db.ts';

const quiet = createLogger('error');

function dirWith(files: Record<string, string>): string {
  const dir = tempDir('migrations-');
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function withDb(fn: (db: Db) => Promise<void>) {
  const { db, cleanup } = await openTestDb();
  try {
    await fn(db);
  } finally {
    await cleanup();
  }
}

const tables = async (db: Db) =>
  (await db.query<{ t: string }>(sql`select table_name as t from information_schema.tables where table_schema = 'public' order by 1`)).map((r) => r.t);

test('the real migrations apply once; a second run applies nothing', () =>
  withDb(async (db) => {
    const migrations = loadMigrations(join(ROOT, 'sql'));
    assert.ok(migrations.length >= 1);
    const first = await migrate(db, migrations, quiet);
    assert.equal(first.applied, migrations.map((m) => m.name));
    const second = await migrate(db, migrations, quiet);
    assert.equal(second.applied, []);
    const recorded = await db.query<{ name: string; checksum: string }>(sql`select name, checksum from schema_migrations order by name`);
    assert.equal(recorded, migrations.map((m) => ({ name: m.name, checksum: m.checksum })));
    for (const t of ['settings', 'model_prices', 'job_runs', 'activity_items', 'outbound_deliveries', 'inbound_deliveries', 'codehost_deliveries']) {
      assert.ok((await tables(db)).includes(t), `table ${t} exists`);
    }
  }));

test('files apply in number order; only NNNN_name.sql files count', () =>
  withDb(async (db) => {
    const dir = dirWith({
      '0002_b.sql': 'insert into log values (2);',
      '0001_a.sql': 'create table log (n int);',
      'README.md': 'not a migration',
      'seed.sql': 'select 1;',
    });
    const { applied } = await migrate(db, loadMigrations(dir), quiet);
    assert.equal(applied, ['0001_a.sql', '0002_b.sql']);
  }));

test('two files with the same number are refused', () => {
  const dir = dirWith({ '0001_a.sql': 'select 1;', '0001_b.sql': 'select 2;' });
  assert.throws(() => loadMigrations(dir), /share the number 0001/);
});

test('an edited applied migration is an error that names the file', () =>
  withDb(async (db) => {
    const dir = dirWith({ '0001_a.sql': 'create table a (n int);' });
    await migrate(db, loadMigrations(dir), quiet);
    writeFileSync(join(dir, '0001_a.sql'), 'create table a (n bigint);');
    try {
      await migrate(db, loadMigrations(dir), quiet);
      assert.unreachable('should refuse');
    } catch (err) {
      assert.instance(err, MigrationError);
      assert.match((err as Error).message, /0001_a\.sql was edited after it was applied/);
    }
  }));

test('a failing migration rolls back whole and is not recorded; earlier ones stay', () =>
  withDb(async (db) => {
    const dir = dirWith({
      '0001_ok.sql': 'create table kept (n int);',
      '0002_bad.sql': 'create table half (n int); insert into half values (1); select * from missing_table;',
    });
    try {
      await migrate(db, loadMigrations(dir), quiet);
      assert.unreachable('should fail');
    } catch (err) {
      assert.match((err as Error).message, /migration 0002_bad\.sql failed: .*missing_table/);
    }
    const t = await tables(db);
    assert.ok(t.includes('kept'));
    assert.not.ok(t.includes('half'), 'partial work of the failed file rolled back');
    const names = (await db.query<{ name: string }>(sql`select name from schema_migrations`)).map((r) => r.name);
    assert.equal(names, ['0001_ok.sql']);
  }));

test('a database migrated by a newer version is refused (forward only)', () =>
  withDb(async (db) => {
    await migrate(db, loadMigrations(dirWith({ '0001_a.sql': 'select 1;', '0002_b.sql': 'select 2;' })), quiet);
    try {
      await migrate(db, loadMigrations(dirWith({ '0001_a.sql': 'select 1;' })), quiet);
      assert.unreachable('should refuse');
    } catch (err) {
      assert.match((err as Error).message, /does not know \(0002_b\.sql\)/);
    }
  }));

const recordedTimes = async (db: Db) =>
  (await db.query<{ n: number }>(sql`select count(distinct applied_at)::int as n from schema_migrations`))[0].n;

test('a new database gets every file in one transaction; whileApplying is called once, after the statements are sent', () =>
  withDb(async (db) => {
    const dir = dirWith({ '0001_a.sql': 'create table a (n int);', '0002_b.sql': 'insert into a values (2);', '0003_c.sql': 'create table c (n int);' });
    const lines: string[] = [];
    let calls = 0;
    const { applied } = await migrate(db, loadMigrations(dir), createLogger('info', {}, (l) => lines.push(l)), { whileApplying: () => calls++ });
    assert.equal(applied, ['0001_a.sql', '0002_b.sql', '0003_c.sql']);
    assert.is(calls, 1);
    // now() is the transaction's start: one transaction recorded all three.
    assert.is(await recordedTimes(db), 1);
    assert.ok(lines.some((l) => l.includes('applying every migration to a new database count=3')));
    assert.not.ok(lines.some((l) => / WARN /.test(l)), lines.join('\n'));
    // An up-to-date database: nothing to apply, and the callback still comes (once).
    assert.equal((await migrate(db, loadMigrations(dir), quiet, { whileApplying: () => calls++ })).applied, []);
    assert.is(calls, 2);
  }));

test('an upgrade applies the new files one by one, each in its own transaction, after whileApplying', () =>
  withDb(async (db) => {
    const dir = dirWith({ '0001_a.sql': 'create table a (n int);' });
    await migrate(db, loadMigrations(dir), quiet);
    writeFileSync(join(dir, '0002_b.sql'), 'create table b (n int);');
    writeFileSync(join(dir, '0003_c.sql'), 'create table c (n int);');
    const order: string[] = [];
    const { applied } = await migrate(db, loadMigrations(dir), createLogger('info', {}, (l) => l.includes('applying migration') && order.push(l.split('name=')[1])), {
      whileApplying: () => order.push('whileApplying'),
    });
    assert.equal(applied, ['0002_b.sql', '0003_c.sql']);
    assert.equal(order, ['whileApplying', '0002_b.sql', '0003_c.sql']);
    assert.is(await recordedTimes(db), 3);
  }));

test('a new database whose batch fails: all of it rolls back, then file by file, and the error names the failing file', () =>
  withDb(async (db) => {
    const dir = dirWith({ '0001_ok.sql': 'create table kept (n int);', '0002_bad.sql': 'select * from missing_table;', '0003_later.sql': 'create table later (n int);' });
    const lines: string[] = [];
    try {
      await migrate(db, loadMigrations(dir), createLogger('info', {}, (l) => lines.push(l)));
      assert.unreachable('should fail');
    } catch (err) {
      assert.instance(err, MigrationError);
      assert.match((err as Error).message, /migration 0002_bad\.sql failed: .*missing_table/);
    }
    assert.ok(lines.some((l) => / WARN the migrations did not apply in one transaction/.test(l)));
    const t = await tables(db);
    assert.ok(t.includes('kept'));
    assert.not.ok(t.includes('later'));
    assert.equal((await db.query<{ name: string }>(sql`select name from schema_migrations`)).map((r) => r.name), ['0001_ok.sql']);
  }));

test('two processes migrating one new database at once: one applies every file, the other then finds them recorded', () =>
  withDb(async (db) => {
    // On PostgreSQL the two transactions run on two connections of the pool (the second waits on the
    // advisory lock); on PGlite they queue on its one connection.
    const migrations = loadMigrations(dirWith({ '0001_a.sql': 'create table a (n int);', '0002_b.sql': 'insert into a values (2);' }));
    const lines: string[] = [];
    const log = createLogger('info', {}, (l) => lines.push(l));
    const results = await Promise.all([migrate(db, migrations, log), migrate(db, migrations, log)]);
    assert.equal(results.map((r) => r.applied.length).sort(), [0, 2]);
    assert.equal((await db.query<{ n: number }>(sql`select n from a`)).map((r) => r.n), [2], 'applied once');
    assert.not.ok(lines.some((l) => / WARN /.test(l)), lines.join('\n'));
  }));

test('seed: settings upserted without overwriting values, prices inserted only when empty', () =>
  withDb(async (db) => {
    await migrate(db, loadMigrations(join(ROOT, 'sql')), quiet);
    const text = (await import('node:fs')).readFileSync(join(ROOT, 'sql', 'seed.sql'), 'utf8');
    await seed(db, text, quiet);
    const [{ c: prices }] = await db.query<{ c: number }>(sql`select count(*)::int as c from model_prices`);
    assert.ok(prices > 0, 'price table seeded');
    await db.query(sql`update model_prices set input_usd_per_mtok = 99 where model = 'claude-sonnet-4'`);
    await db.query(sql`delete from model_prices where model = 'gpt-5'`);
    await db.query(sql`update settings set value = '"Team svc"', description = 'stale' where key = 'instance.name'`);
    await seed(db, text, quiet);
    const [edited] = await db.query<{ p: string }>(sql`select input_usd_per_mtok::text as p from model_prices where model = 'claude-sonnet-4'`);
    assert.is(Number(edited.p), 99);
    assert.is((await db.query(sql`select 1 from model_prices where model = 'gpt-5'`)).length, 0, 'deleted price stays deleted');
    const [setting] = await db.query<{ value: string; description: string }>(sql`select value, description from settings where key = 'instance.name'`);
    assert.is(setting.value, 'Team svc');
    assert.is.not(setting.description, 'stale');
  }));

test.run();
