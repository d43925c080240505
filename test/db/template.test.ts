// A new embedded database starts as a copy of the build's template (dist/pglite-template/, made by
// scripts/pglite-template.ts through esbuild.config.mjs): every migration applied, nothing of an
// instance. The real server, on data directories that do not exist yet.
import { cpSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadMigrations } from '../../functions/lib/db/migrate.ts';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { ROOT, onlyOn, tempDir } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

const TEMPLATE = join(ROOT, 'dist', 'pglite-template');
const COPIED = /new embedded database copied from the build's template/;

/** Env for a server on a data dir that does not exist yet, with its own anchor file. */
function fresh(extra: Record<string, string> = {}) {
  const parent = tempDir('pglite-new-');
  return { parent, env: { PGLITE_DATA_DIR: join(parent, 'data'), AUDIT_ANCHOR_PATH: join(parent, 'anchor.json'), ...extra } };
}

async function inspect<T>(dir: string, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await openPglite(dir);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const count = async (db: Db, table: string) => (await db.query<{ n: number }>(sql`select count(*)::int as n from ${sql.raw(table)}`))[0].n;

onlyOn('pglite', test, 4, () => {
  test('two new instances start from the template, each with its own keys; the template holds nothing of an instance', async () => {
    assert.ok(existsSync(join(TEMPLATE, 'PG_VERSION')), 'the build made dist/pglite-template/');
    const names = loadMigrations(join(ROOT, 'sql')).map((m) => m.name);
    const made = [fresh(), fresh()];
    try {
      for (const m of made) {
        const s = await startServer({ dbEnv: m.env });
        assert.match(s.output(), COPIED);
        assert.match(s.output(), /migrations up to date .*applied=0/);
        assert.is((await fetch(`${s.url}/health`)).status, 200);
        assert.is(await s.stop(), 0);
      }
      // Started again: an existing database is opened as it is.
      const again = await startServer({ dbEnv: made[0].env });
      assert.not.match(again.output(), COPIED);
      assert.is(await again.stop(), 0);
      // The template is readable by any user the server may run as; each copy is owner-only again.
      for (const f of ['PG_VERSION', 'global/pg_control']) {
        assert.is(statSync(join(TEMPLATE, f)).mode & 0o777, 0o644, `template ${f}`);
        assert.is(statSync(join(made[0].env.PGLITE_DATA_DIR, f)).mode & 0o777, 0o600, `copied ${f}`);
      }
      assert.is(statSync(join(made[0].env.PGLITE_DATA_DIR, 'global')).mode & 0o777, 0o700);
      const keys = made.map((m) => readFileSync(join(m.parent, 'encryption.key'), 'utf8'));
      assert.is.not(keys[0], keys[1], 'each instance generated its own encryption key');
      const ids: string[] = [];
      for (const m of made) {
        const applied = await inspect(m.env.PGLITE_DATA_DIR, (db) => db.query<{ name: string }>(sql`select name from schema_migrations order by name`));
        assert.equal(applied.map((r) => r.name), names);
        ids.push(...(await inspect(m.env.PGLITE_DATA_DIR, (db) => db.query<{ id: string }>(sql`select instance_id::text as id from instance_identity`))).map((r) => r.id));
      }
      assert.is(ids.length, 2);
      assert.is.not(ids[0], ids[1], 'each instance made its own instance id (the audit anchor file names it)');
      // The template itself: schema only. (Opened through a copy: the build's directory stays untouched.)
      const copy = join(tempDir('pglite-tpl-'), 'data');
      cpSync(TEMPLATE, copy, { recursive: true });
      await inspect(copy, async (db) => {
        for (const table of ['users', 'instance_keys', 'settings', 'model_prices', 'audit_records', 'runners', 'api_tokens', 'sessions', 'instance_identity']) assert.is(await count(db, table), 0, `${table} is empty in the template`);
        assert.is((await db.query(sql`select name from schema_migrations`)).length, names.length);
        // Only the database the server uses: the template databases are a third of the files to copy.
        assert.equal((await db.query<{ datname: string }>(sql`select datname from pg_database order by datname`)).map((r) => r.datname), ['postgres']);
        assert.equal(await db.query(sql`show shared_buffers`), [{ shared_buffers: '32MB' }], 'the default PGLITE_SHARED_BUFFERS');
      });
      rmSync(copy, { recursive: true, force: true });
    } finally {
      for (const m of made) rmSync(m.parent, { recursive: true, force: true });
    }
  });

  test('PGLITE_SHARED_BUFFERS reaches PostgreSQL; a size below its minimum is a configuration error naming it', async () => {
    const dir = join(tempDir('pglite-sb-'), 'data');
    try {
      const db = await openPglite(dir, undefined, undefined, '16MB');
      try {
        assert.equal(await db.query(sql`show shared_buffers`), [{ shared_buffers: '16MB' }]);
      } finally {
        await db.close();
      }
      const m = fresh({ PGLITE_SHARED_BUFFERS: '64kB' }); // PostgreSQL's minimum is 128kB
      try {
        const s = await startServer({ dbEnv: m.env, expectExit: true });
        assert.is(await s.exited, 1);
        assert.match(s.output(), /PGLITE_SHARED_BUFFERS must be between 128kB/);
      } finally {
        rmSync(m.parent, { recursive: true, force: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a migration newer than the template is applied on top of the copy', async () => {
    const dir = tempDir('sql-');
    cpSync(join(ROOT, 'sql'), dir, { recursive: true });
    writeFileSync(join(dir, '0999_extra.sql'), 'create table template_extra (n int);');
    const m = fresh({ MIGRATIONS_DIR: dir });
    try {
      const s = await startServer({ dbEnv: m.env });
      assert.match(s.output(), COPIED);
      assert.match(s.output(), /applying migration name=0999_extra\.sql/);
      assert.is(await s.stop(), 0);
      await inspect(m.env.PGLITE_DATA_DIR, async (db) => assert.is(await count(db, 'template_extra'), 0));
    } finally {
      rmSync(m.parent, { recursive: true, force: true });
    }
  });

  test('a template whose migrations differ from the server\'s is not used: initdb, then every migration', async () => {
    const dir = tempDir('sql-');
    cpSync(join(ROOT, 'sql'), dir, { recursive: true });
    writeFileSync(join(dir, '0001_init.sql'), readFileSync(join(dir, '0001_init.sql'), 'utf8') + '\n-- edited after the build\n');
    const m = fresh({ MIGRATIONS_DIR: dir });
    try {
      const s = await startServer({ dbEnv: m.env, timeoutMs: 120_000 });
      try {
        assert.not.match(s.output(), COPIED);
        assert.match(s.output(), /the embedded database template does not match this build/);
        // A new database: every file in one transaction (lib/db/migrate.ts).
        assert.match(s.output(), /applying every migration to a new database count=\d+ first=0001_init\.sql/);
      } finally {
        assert.is(await s.stop(), 0);
      }
    } finally {
      rmSync(m.parent, { recursive: true, force: true });
    }
  });
});

test.run();
