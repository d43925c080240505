// Backup → restore into a fresh database → start → the same rows (real pg_dump, pg_restore, server).
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, TEST_DB, freshPostgres, tempDir } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

const script = (name: string, args: string[], env: Record<string, string | undefined>) =>
  spawnSync('bash', [join(ROOT, 'scripts', name), ...args], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });

if (TEST_DB === 'postgres') {
  test('backup → restore into an empty database → the server starts on it with the same data', async () => {
    const source = await freshPostgres();
    const target = await freshPostgres();
    const dir = tempDir('backup-');
    try {
      const s = await startServer({ admin: true, dbEnv: { DATABASE_URL: source.url } });
      assert.is((await s.api('/api/prices/claude-sonnet-4', { method: 'PUT', json: { inputUsdPerMTok: 2.75, outputUsdPerMTok: 11 } })).status, 200);
      const project = await (await s.api('/api/projects', { method: 'POST', json: { name: 'Kept', repo: 'acme/kept' } })).json();
      assert.is(await s.stop(), 0);

      const out = join(dir, 'svc.dump');
      const url = new URL(source.url);
      url.password = 'NotReallyUsedPw';
      const backup = script('backup.sh', [out], { DATABASE_URL: url.toString() });
      assert.is(backup.status, 0, backup.stderr);
      assert.ok(statSync(out).size > 1000);
      assert.is(readFileSync(out).subarray(0, 5).toString(), 'PGDMP');
      assert.not.ok((backup.stdout + backup.stderr).includes('NotReallyUsedPw'), 'password masked');
      assert.match(backup.stderr, /postgres:\*\*\*@/);

      const restore = script('restore.sh', [out], { DATABASE_URL: target.url });
      assert.is(restore.status, 0, restore.stderr);

      const t = await startServer({ dbEnv: { DATABASE_URL: target.url } });
      assert.not.match(t.output(), /applying migration/, 'schema came with the dump');
      const auth = { authorization: `Bearer ${s.admin.token}` };
      const price = await (await fetch(`${t.url}/api/prices/claude-sonnet-4`, { headers: auth })).json();
      assert.equal([price.inputUsdPerMTok, price.outputUsdPerMTok], [2.75, 11]);
      assert.is((await fetch(`${t.url}/api/projects/${project.id}`, { headers: auth })).status, 200);
      assert.is(await t.stop(), 0);
      const [a, b] = [postgres(source.url, { max: 1 }), postgres(target.url, { max: 1 })];
      const chain = (db: postgres.Sql) => db`select seq, hash from audit_records order by seq`;
      assert.equal(await chain(b), await chain(a), 'the audit chain is identical');
      await Promise.all([a.end(), b.end()]);
    } finally {
      await source.drop();
      await target.drop();
    }
  });

  test('restore into a database that is not empty is refused and changes nothing', async () => {
    const source = await freshPostgres();
    const busy = await freshPostgres();
    const dir = tempDir('backup-');
    try {
      const db = postgres(source.url, { max: 1, onnotice: () => {} });
      await db`create table t (n int)`;
      await db.end();
      const out = join(dir, 'x.dump');
      assert.is(script('backup.sh', [out], { DATABASE_URL: source.url }).status, 0);
      const b = postgres(busy.url, { max: 1, onnotice: () => {} });
      await b`create table important (n int)`;
      await b`insert into important values (42)`;
      const r = script('restore.sh', [out], { DATABASE_URL: busy.url });
      assert.is(r.status, 1);
      assert.match(r.stderr, /not empty \(1 tables\)/);
      const rows = await b`select n from important`;
      const t = await b`select count(*)::int as c from pg_tables where tablename = 't'`;
      await b.end();
      assert.equal(rows.map((x) => x.n), [42]);
      assert.is(t[0].c, 0);
    } finally {
      await source.drop();
      await busy.drop();
    }
  });

  test('usage errors: no DATABASE_URL, not a dump, no file', () => {
    const noUrl = script('backup.sh', [], {});
    assert.is(noUrl.status, 1);
    assert.match(noUrl.stderr, /DATABASE_URL is not set.*PGlite.*copy its data directory/);
    const dir = tempDir('backup-');
    const bogus = join(dir, 'bogus.dump');
    spawnSync('bash', ['-c', `echo hello > ${bogus}`]);
    const notDump = script('restore.sh', [bogus], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    assert.is(notDump.status, 1);
    assert.match(notDump.stderr, /not a pg_dump custom-format file/);
    assert.is(script('restore.sh', [], { DATABASE_URL: 'x' }).status, 2);
  });
}

test.run();
