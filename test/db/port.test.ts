// The database port behaves the same on every driver (runs on PGlite and on PostgreSQL).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { openTestDb } from '../helpers/db.ts';

let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await openTestDb());
  await db.exec(`create table items (id bigserial primary key, name text not null unique, meta jsonb, at timestamptz default now());
                 create table other (n int)`);
});
test.after(async () => cleanup?.());

test('sql`` compiles values to numbered parameters and splices fragments', () => {
  const where = sql`name = ${'a'} and id > ${1}`;
  const q = sql`select * from items where ${where} limit ${5}`.compile();
  assert.is(q.text, 'select * from items where name = $1 and id > $2 limit $3');
  assert.equal(q.params, ['a', 1, 5]);
  const joined = sql`values ${sql.join([sql`(${1})`, sql`(${2})`], ', ')}`.compile();
  assert.is(joined.text, 'values ($1), ($2)');
  assert.equal(joined.params, [1, 2]);
});

test('values are parameters, never SQL text', async () => {
  const evil = "x'); drop table items; --";
  await db.query(sql`insert into items (name) values (${evil})`);
  const rows = await db.query<{ name: string }>(sql`select name from items where name = ${evil}`);
  assert.is(rows.length, 1);
  assert.is(rows[0].name, evil);
});

test('sql.json() writes any JSON value the same on every driver; int8 comes back as a number, jsonb as an object, timestamptz as a Date', async () => {
  const [row] = await db.query<{ id: number; meta: unknown; at: Date; n: number; s: unknown; z: unknown }>(
    sql`insert into items (name, meta) values (${'typed'}, ${sql.json({ a: [1, 2] })}) returning id, meta, at, 7::int8 as n, ${sql.json('text')} as s, ${sql.json(null)} as z`,
  );
  assert.type(row.id, 'number');
  assert.is(row.n, 7);
  assert.equal(row.meta, { a: [1, 2] });
  assert.is(row.s, 'text', 'a JSON string stays a string on every driver');
  assert.is(row.z, null);
  assert.instance(row.at, Date);
});

test('arrays bind as parameters (= any)', async () => {
  const rows = await db.query<{ name: string }>(sql`select name from items where name = any(${['typed', 'nope']}) order by name`);
  assert.equal(rows.map((r) => r.name), ['typed']);
});

test('a transaction commits on success and rolls back on a thrown error', async () => {
  await db.transaction(async (tx) => {
    await tx.query(sql`insert into other (n) values (1)`);
  });
  await db
    .transaction(async (tx) => {
      await tx.query(sql`insert into other (n) values (2)`);
      throw new Error('boom');
    })
    .then(() => assert.unreachable('should throw'), (err) => assert.is(err.message, 'boom'));
  const rows = await db.query<{ n: number }>(sql`select n from other order by n`);
  assert.equal(rows.map((r) => r.n), [1]);
});

test('exec runs several statements; a failing one throws', async () => {
  await db.exec('insert into other (n) values (10); insert into other (n) values (11);');
  const [{ c }] = await db.query<{ c: number }>(sql`select count(*)::int as c from other where n >= 10`);
  assert.is(c, 2);
  try {
    await db.exec('select 1; select * from no_such_table;');
    assert.unreachable('should throw');
  } catch (err) {
    assert.match((err as Error).message, /no_such_table/);
  }
});

test('listen/notify delivers payloads; unsubscribe stops them', async () => {
  const got: string[] = [];
  const stop = await db.listen('svc_test_channel', (p) => got.push(p));
  await db.notify('svc_test_channel', 'hello');
  await db.notify('svc_test_channel', 'wörld');
  for (let i = 0; i < 50 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(got, ['hello', 'wörld']);
  await stop();
  await db.notify('svc_test_channel', 'after');
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(got, ['hello', 'wörld']);
});

test.run();
