// Start-up against a real database: migrations decide whether the process ever listens.
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { ADMIN_URL, ROOT, TEST_DB, onlyOn, serverDbEnv, tempDir } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

function migrationsWith(extra: Record<string, string>): string {
  const dir = tempDir('sql-');
  cpSync(join(ROOT, 'sql'), dir, { recursive: true });
  for (const [name, text] of Object.entries(extra)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Open the server's database directly (the server must be stopped when it is PGlite). */
async function inspect<T>(env: Record<string, string>, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = TEST_DB === 'postgres' ? await openPostgres(env.DATABASE_URL, 1) : await openPglite(env.PGLITE_DATA_DIR);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const appliedNames = (db: Db) => db.query<{ name: string }>(sql`select name from schema_migrations order by name`).then((r) => r.map((x) => x.name));

test('a failing migration: exit 1, a log line naming the file, never listening', async () => {
  const s = await startServer({ env: { MIGRATIONS_DIR: migrationsWith({ '0999_broken.sql': 'alter table no_such_table add column x int;' }) }, expectExit: true });
  try {
    assert.is(await s.exited, 1);
    assert.match(s.output(), /start failed .*migration 0999_broken\.sql failed: .*no_such_table/);
    assert.not.match(s.output(), /listening/);
  } finally {
    await s.cleanup();
  }
});

test('an edited applied migration: exit 1 naming it; the fixed file starts again', async () => {
  const { env: dbEnv, cleanup } = await serverDbEnv();
  try {
    const dir = migrationsWith({ '0500_extra.sql': 'create table extra (n int);' });
    const first = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir } });
    assert.is(await first.stop(), 0);
    writeFileSync(join(dir, '0500_extra.sql'), 'create table extra (n bigint);');
    const second = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir }, expectExit: true });
    assert.is(await second.exited, 1);
    assert.match(second.output(), /migration 0500_extra\.sql was edited after it was applied/);
    writeFileSync(join(dir, '0500_extra.sql'), 'create table extra (n int);');
    const third = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir } });
    assert.is((await fetch(`${third.url}/health`)).status, 200);
    assert.is(await third.stop(), 0);
  } finally {
    await cleanup();
  }
});

const SLOW = "create table slow_done (n int); insert into slow_done values (1); select pg_sleep(4); insert into slow_done values (2);";

test('kill -9 during a migration of an upgrade: the next start applies it whole, once', async () => {
  const { env: dbEnv, cleanup } = await serverDbEnv();
  try {
    const dir = migrationsWith({});
    const before = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir } }); // the database of the previous version
    assert.is(await before.stop(), 0);
    writeFileSync(join(dir, '0600_slow.sql'), SLOW);
    const victim = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir }, waitFor: /applying migration name=0600_slow\.sql/ });
    await new Promise((r) => setTimeout(r, 500)); // inside pg_sleep, the file half applied
    assert.is(await victim.stop('SIGKILL'), 'SIGKILL');
    assert.not.match(victim.output(), /listening/);

    const again = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir } });
    assert.match(again.output(), /applying migration name=0600_slow\.sql/);
    assert.is((await fetch(`${again.url}/health`)).status, 200);
    assert.is(await again.stop(), 0);
    await inspect(dbEnv, async (db) => {
      const rows = await db.query<{ n: number }>(sql`select n from slow_done order by n`);
      assert.equal(rows.map((r) => r.n), [1, 2]);
      const names = await appliedNames(db);
      assert.is(names.filter((n) => n === '0600_slow.sql').length, 1);
    });
  } finally {
    await cleanup();
  }
});

// A new PostgreSQL database takes every file in one transaction (lib/db/migrate.ts); on PGlite a new data
// dir starts from the build's template and takes only the extra file, as in the test above.
onlyOn('postgres', test, 1, () =>
  test('kill -9 during the first start on a new database: nothing stays, the next start applies every file', async () => {
  const { env: dbEnv, cleanup } = await serverDbEnv();
  try {
    const dir = migrationsWith({ '0600_slow.sql': SLOW });
    const victim = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir }, waitFor: /applying every migration to a new database .*last=0600_slow\.sql/ });
    await new Promise((r) => setTimeout(r, 500));
    assert.is(await victim.stop('SIGKILL'), 'SIGKILL');
    assert.not.match(victim.output(), /listening/);
    await inspect(dbEnv, async (db) => {
      // The server's connection may take a moment to be gone; its transaction rolls back whole.
      const tables = await db.query<{ t: string }>(sql`select table_name as t from information_schema.tables where table_schema = 'public'`);
      assert.equal(tables, [], 'nothing of the first start remains, not even the table of records');
    });

    const again = await startServer({ dbEnv, env: { MIGRATIONS_DIR: dir } });
    assert.match(again.output(), /applying every migration to a new database/);
    assert.is((await fetch(`${again.url}/health`)).status, 200);
    assert.is(await again.stop(), 0);
    await inspect(dbEnv, async (db) => {
      assert.equal((await db.query<{ n: number }>(sql`select n from slow_done order by n`)).map((r) => r.n), [1, 2]);
      const names = await appliedNames(db);
      assert.is(names.length, new Set(names).size);
      assert.is(names.at(-1), '0600_slow.sql');
    });
  } finally {
    await cleanup();
  }
  }),
);

test('an edited price survives a restart; the seed does not duplicate or reset', async () => {
  const { env: dbEnv, cleanup } = await serverDbEnv();
  try {
    const a = await startServer({ dbEnv, admin: true });
    const auth = { authorization: `Bearer ${a.admin.token}` };
    const before = (await (await a.api('/api/prices')).json()).prices.length;
    assert.ok(before > 0);
    const put = await a.api('/api/prices/claude-sonnet-4', { method: 'PUT', json: { inputUsdPerMTok: 2.5, outputUsdPerMTok: 12.5 } });
    assert.is(put.status, 200);
    assert.is(await a.stop(), 0);
    const b = await startServer({ dbEnv });
    const prices = (await (await fetch(`${b.url}/api/prices`, { headers: auth })).json()).prices;
    assert.is(prices.length, before);
    const sonnet = prices.find((p: { model: string }) => p.model === 'claude-sonnet-4');
    assert.is(sonnet.inputUsdPerMTok, 2.5);
    assert.is(sonnet.outputUsdPerMTok, 12.5);
    assert.not.match(b.output(), /applying migration/);
    assert.is(await b.stop(), 0);
  } finally {
    await cleanup();
  }
});

// A database that cannot become right by waiting fails the start at once with PostgreSQL's own words,
// instead of retrying for DATABASE_CONNECT_TIMEOUT_SECONDS (issue 12, item 9).
onlyOn('postgres', test, 2, () => {
  const refusedAtOnce = async (url: string, said: RegExp) => {
    const started = Date.now();
    const s = await startServer({ dbEnv: { DATABASE_URL: url }, env: { DATABASE_CONNECT_TIMEOUT_SECONDS: '300' }, expectExit: true });
    try {
      assert.is(await s.exited, 1);
      assert.match(s.output(), said);
      assert.match(s.output(), /start failed .*after 1 attempt\(s\)/);
      assert.not.match(s.output(), /retrying|listening/);
      assert.ok(Date.now() - started < 60_000, 'not the 300 s of retries');
    } finally {
      await s.cleanup();
    }
  };

  test('a database that does not exist (3D000) → exit 1 at once with that message, no retry', async () => {
    const url = new URL(ADMIN_URL);
    url.pathname = '/svc_no_such_database';
    await refusedAtOnce(url.toString(), /database \\?"svc_no_such_database\\?" does not exist/);
  });

  test('a role that does not exist (28000) → exit 1 at once with that message, no retry', async () => {
    const url = new URL(ADMIN_URL);
    url.username = 'svc_no_such_role';
    url.password = '';
    await refusedAtOnce(url.toString(), /role \\?"svc_no_such_role\\?" does not exist/);
  });
});

test.run();
