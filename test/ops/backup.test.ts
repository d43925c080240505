// scripts/backup.sh and scripts/restore.sh against the real PostgreSQL server, with the real pg_dump,
// pg_restore and psql, and the real server started on the restored database (docs/operations.md).
// PostgreSQL only: with the embedded database a backup is a copy of the stopped data directory.
// needs: pg_dump pg_restore
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, TEST_DB, freshPostgres, onlyOn, tempDir } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

/** Run one of the scripts as an admin would: executed directly (shebang, executable bit). */
function script(name: string, args: string[], env: Record<string, string | undefined>, cwd?: string) {
  const r = spawnSync(join(ROOT, 'scripts', name), args, {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, all: r.stdout + r.stderr };
}

const connect = (url: string) => postgres(url, { max: 1, onnotice: () => {} });
const withPassword = (url: string, password: string) => {
  const u = new URL(url);
  u.password = password; // trust auth on the test server ignores it; the scripts must not show it
  return u.toString();
};
const MODEL = 'claude-sonnet-4'; // seeded; the edit must survive the restore and the next seed

onlyOn('postgres', test, 6, () => {
  test('backup → restore into a fresh database → the server starts on it with the same data', async () => {
    const source = await freshPostgres();
    const target = await freshPostgres();
    const dir = tempDir('backup-');
    const marker = `ops-marker-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const servers: { cleanup: () => Promise<void> }[] = [];
    try {
      const s = await startServer({ admin: true, dbEnv: { DATABASE_URL: source.url } });
      servers.push(s);
      const put = await s.api(`/api/prices/${MODEL}`, { method: 'PUT', json: { inputUsdPerMTok: 2.75, outputUsdPerMTok: 11.5 } });
      assert.is(put.status, 200, await put.clone().text());
      const src = connect(source.url);
      await src`insert into activity_items (kind, data) values ('ops.test', ${src.json({ marker })})`;
      assert.is(await s.stop(), 0, 'the source server stops cleanly');

      // Backup: custom format, written atomically, path and size printed.
      const out = join(dir, 'svc.dump');
      const backup = script('backup.sh', [out], { DATABASE_URL: source.url });
      assert.is(backup.status, 0, backup.all);
      const size = statSync(out).size;
      assert.ok(size > 1000, `dump has ${size} bytes`);
      assert.is(readFileSync(out).subarray(0, 5).toString('latin1'), 'PGDMP');
      assert.is(backup.stdout.trim(), `${out} (${size} bytes)`);
      assert.is((statSync(out).mode & 0o777).toString(8), '600', 'the dump is readable by its owner only');
      assert.equal(readdirSync(dir), ['svc.dump'], 'no temporary file is left behind');

      // Restore into the second, empty database.
      const restore = script('restore.sh', [out], { DATABASE_URL: target.url });
      assert.is(restore.status, 0, restore.all);
      assert.match(restore.stderr, /API must be stopped/);
      assert.match(restore.stderr, /same APP_ENCRYPTION_KEY/i);
      assert.match(restore.stderr, /migrations/);

      // The server starts on the restored database without re-applying anything, and is healthy.
      const t = await startServer({ dbEnv: { DATABASE_URL: target.url } });
      servers.push(t);
      assert.not.match(t.output(), /applying (every )?migration/, 'the schema came with the dump');
      const health = await fetch(`${t.url}/health`);
      assert.is(health.status, 200);
      assert.is((await health.json()).status, 'ok');
      // The admin's API token was restored too (only its hash is stored).
      const price = await (await fetch(`${t.url}/api/prices/${MODEL}`, { headers: { authorization: `Bearer ${s.admin.token}` } })).json();
      assert.equal([price.inputUsdPerMTok, price.outputUsdPerMTok], [2.75, 11.5], 'the edited price survived backup, restore and seed');
      assert.is(await t.stop(), 0);

      const dst = connect(target.url);
      const rows = await dst`select kind, data->>'marker' as marker from activity_items where data->>'marker' = ${marker}`;
      assert.equal(rows.map((r) => [r.kind, r.marker]), [['ops.test', marker]]);
      const migrations = (db: postgres.Sql) => db`select name, checksum, applied_at from schema_migrations order by name`;
      const [before, after] = [await migrations(src), await migrations(dst)];
      assert.ok(before.length >= 3, 'the source had its migrations');
      assert.equal(after, before, 'schema_migrations restored row for row');
      const chain = (db: postgres.Sql) => db`select seq, hash from audit_records order by seq`;
      assert.equal(await chain(dst), await chain(src), 'the audit chain is identical');
      await Promise.all([src.end(), dst.end()]);
    } finally {
      for (const x of servers) await x.cleanup();
      await source.drop();
      await target.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('backup.sh with no output file writes svc-YYYYmmdd-HHMMSS.dump in the current directory', async () => {
    const source = await freshPostgres();
    const dir = tempDir('backup-');
    try {
      const db = connect(source.url);
      await db`create table kept (n int)`;
      await db`insert into kept values (7)`;
      await db.end();
      const r = script('backup.sh', [], { DATABASE_URL: source.url }, dir);
      assert.is(r.status, 0, r.all);
      const files = readdirSync(dir);
      assert.is(files.length, 1, files.join(','));
      assert.match(files[0], /^svc-\d{8}-\d{6}\.dump$/);
      assert.is(readFileSync(join(dir, files[0])).subarray(0, 5).toString('latin1'), 'PGDMP');
      assert.match(r.stdout, new RegExp(`^${files[0].replace('.', '\\.')} \\(\\d+ bytes\\)$`, 'm'));
    } finally {
      await source.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('restore.sh into a database that is not empty is refused and changes nothing there', async () => {
    const source = await freshPostgres();
    const busy = await freshPostgres();
    const dir = tempDir('backup-');
    try {
      const db = connect(source.url);
      await db`create table from_dump (n int)`;
      await db.end();
      const out = join(dir, 'x.dump');
      const backup = script('backup.sh', [out], { DATABASE_URL: source.url });
      assert.is(backup.status, 0, backup.all);

      const b = connect(busy.url);
      await b`create table important (n int)`;
      await b`insert into important values (42), (43)`;
      const r = script('restore.sh', [out], { DATABASE_URL: busy.url });
      assert.is(r.status, 1, r.all);
      assert.match(r.stderr, /not empty/);
      assert.match(r.stderr, /public\.important/);
      assert.match(r.stderr, /Nothing was restored/);
      const rows = await b`select n from important order by n`;
      const restored = await b`select count(*)::int as c from pg_tables where tablename = 'from_dump'`;
      await b.end();
      assert.equal(rows.map((x) => x.n), [42, 43], 'the rows are unchanged');
      assert.is(restored[0].c, 0, 'nothing from the dump was restored');
    } finally {
      await source.drop();
      await busy.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('without DATABASE_URL both scripts refuse, and backup.sh explains the PGlite copy', () => {
    const dir = tempDir('backup-');
    try {
      for (const env of [{}, { DATABASE_URL: '' }]) {
        const r = script('backup.sh', [], env, dir);
        assert.is(r.status, 1, r.all);
        assert.match(r.stderr, /DATABASE_URL is not set/);
        assert.match(r.stderr, /PGlite/);
        assert.match(r.stderr, /stop the server and copy its data directory/);
        assert.match(r.stderr, /data\/pglite/);
        assert.equal(readdirSync(dir), [], 'no file was written');
      }
      writeFileSync(join(dir, 'some.dump'), 'PGDMP');
      const r = script('restore.sh', [join(dir, 'some.dump')], {});
      assert.is(r.status, 1, r.all);
      assert.match(r.stderr, /DATABASE_URL is not set/);
      const usage = script('restore.sh', [], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
      assert.is(usage.status, 2);
      assert.match(usage.stderr, /usage:/);
      writeFileSync(join(dir, 'bogus.dump'), 'hello\n');
      const notDump = script('restore.sh', [join(dir, 'bogus.dump')], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
      assert.is(notDump.status, 1);
      assert.match(notDump.stderr, /not a pg_dump custom-format file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the password in DATABASE_URL never appears in what the scripts print', async () => {
    const source = await freshPostgres();
    const target = await freshPostgres();
    const dir = tempDir('backup-');
    const secret = 'SomeSecretPw';
    try {
      const db = connect(source.url);
      await db`create table t (n int)`;
      await db.end();
      const out = join(dir, 'pw.dump');
      const ok = script('backup.sh', [out], { DATABASE_URL: withPassword(source.url, secret) });
      assert.is(ok.status, 0, ok.all);
      assert.ok(existsSync(out));
      assert.not.ok(ok.all.includes(secret), ok.all);
      assert.match(ok.stderr, /postgres:\*\*\*@127\.0\.0\.1/, 'the URL is shown masked');

      // A failing dump (no such database): non-zero, still masked, no file, no temporary left.
      const missing = new URL(withPassword(source.url, secret));
      missing.pathname = '/svc_no_such_database';
      const bad = script('backup.sh', [join(dir, 'bad.dump')], { DATABASE_URL: missing.toString() });
      assert.is(bad.status, 1, bad.all);
      assert.match(bad.stderr, /does not exist/);
      assert.not.ok(bad.all.includes(secret), bad.all);
      assert.equal(readdirSync(dir), ['pw.dump']);

      const restore = script('restore.sh', [out], { DATABASE_URL: withPassword(target.url, secret) });
      assert.is(restore.status, 0, restore.all);
      assert.not.ok(restore.all.includes(secret), restore.all);
      const again = script('restore.sh', [out], { DATABASE_URL: withPassword(target.url, secret) });
      assert.is(again.status, 1, 'the second restore finds the database not empty');
      assert.not.ok(again.all.includes(secret), again.all);
    } finally {
      await source.drop();
      await target.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the password goes to pg_dump in PGPASSWORD, percent-decoded, never on its command line', () => {
    const dir = tempDir('backup-');
    try {
      // A stand-in pg_dump first on PATH records its argv and PGPASSWORD and writes a tiny dump.
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(
        join(bin, 'pg_dump'),
        `#!/usr/bin/env bash
printf '%s\\n' "$@" > "${dir}/argv"
printf '%s' "\${PGPASSWORD-}" > "${dir}/pgpassword"
for a in "$@"; do case $a in --file=*) printf 'PGDMP-fake' > "\${a#--file=}";; esac; done
`,
      );
      chmodSync(join(bin, 'pg_dump'), 0o755);
      const url = 'postgres://svc:S%40me%2FSecret%25Pw@db.example.test:5432/svc?sslmode=disable';
      const r = script('backup.sh', [join(dir, 'out.dump')], { DATABASE_URL: url, PATH: `${bin}:${process.env.PATH}` });
      assert.is(r.status, 0, r.all);
      const argv = readFileSync(join(dir, 'argv'), 'utf8');
      assert.not.match(argv, /Secret/, argv);
      assert.match(argv, /^--dbname=postgres:\/\/svc@db\.example\.test:5432\/svc\?sslmode=disable$/m);
      assert.is(readFileSync(join(dir, 'pgpassword'), 'utf8'), 'S@me/Secret%Pw');
      assert.not.ok(r.all.includes('Secret'), r.all);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test.run();
