// The audit chain's rules, in-process on PGlite and PostgreSQL.
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GENESIS, appendAudit, audited, canonicalJson, recordHash, redact, useAuditKey } from '../../functions/audit/audit.ts';
import { auditMacKey, checkCheckpointMac, checkpointMac, recordMac } from '../../functions/audit/mac.ts';
import { verifyChain } from '../../functions/audit/verify.ts';
import { loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { ROOT, openTestDb } from '../helpers/db.ts';

async function withChain(n: number, fn: (db: Db) => Promise<void>) {
  const { db, cleanup } = await openTestDb();
  try {
    await migrate(db, loadMigrations(`${ROOT}/sql`), createLogger('error'));
    for (let i = 1; i <= n; i++) {
      await db.transaction((tx) => appendAudit(tx, { actor: 'system', action: 'test.append', target: { type: 'thing', id: `t${i}` }, diff: { n: i, nested: { b: 2, a: [1, 'x'] } } }));
    }
    await fn(db);
  } finally {
    await cleanup();
  }
}

test('canonical JSON sorts keys at every level and drops undefined', () => {
  assert.is(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, u: undefined }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
});

test('record hash = SHA-256(prev_hash ‖ canonical JSON) — fixed vector', () => {
  const r = { seq: 1, at: '2026-01-01T00:00:00.000Z', actorId: null, actorLabel: 'system', action: 'x.y', targetType: 't', targetId: null, diff: { k: 'v' }, requestId: null };
  const expected = createHash('sha256')
    .update(GENESIS)
    .update('{"action":"x.y","actorId":null,"actorLabel":"system","at":"2026-01-01T00:00:00.000Z","diff":{"k":"v"},"requestId":null,"seq":1,"targetId":null,"targetType":"t"}')
    .digest('hex');
  assert.is(recordHash(GENESIS, r), expected);
});

test('secret-looking fields are redacted at any depth', () => {
  assert.equal(redact({ name: 'a', password: 'p', nested: { apiToken: 't', list: [{ secret: 's', ok: 1 }] }, password_hash: 'h' }), {
    name: 'a',
    password: '[redacted]',
    nested: { apiToken: '[redacted]', list: [{ secret: '[redacted]', ok: 1 }] },
    password_hash: '[redacted]',
  });
});

test('appends form a gapless, verifiable chain from genesis', () =>
  withChain(25, async (db) => {
    const rows = await db.query<{ seq: number; prev_hash: string; hash: string }>(sql`select seq, prev_hash, hash from audit_records order by seq`);
    assert.equal(rows.map((r) => r.seq), Array.from({ length: 25 }, (_, i) => i + 1));
    assert.is(rows[0].prev_hash, GENESIS);
    for (let i = 1; i < rows.length; i++) assert.is(rows[i].prev_hash, rows[i - 1].hash);
    assert.equal(await verifyChain(db, { batch: 7 }), { ok: true, recordsChecked: 25, firstBrokenSeq: null, problem: null, head: { seq: 25, hash: rows[24].hash } });
  }));

for (const [name, statement] of [
  ['UPDATE', `update audit_records set action = 'x' where seq = 1`],
  ['DELETE', `delete from audit_records where seq = 1`],
  ['TRUNCATE', `truncate audit_records`],
] as const) {
  test(`${name} on audit_records is rejected by the database`, () =>
    withChain(2, async (db) => {
      try {
        await db.exec(statement);
        assert.unreachable('should be rejected');
      } catch (err) {
        assert.match((err as Error).message, new RegExp(`append-only: ${name} is not allowed`));
      }
      const [{ c }] = await db.query<{ c: number }>(sql`select count(*)::int as c from audit_records`);
      assert.is(c, 2);
      assert.ok((await verifyChain(db)).ok);
    }));
}

test('tampering with a disabled trigger: verification names the altered record', () =>
  withChain(5, async (db) => {
    await db.exec(`alter table audit_records disable trigger user;
                   update audit_records set diff = '{"n": 999}' where seq = 3;
                   alter table audit_records enable trigger user;`);
    const v = await verifyChain(db, { batch: 2 });
    assert.is(v.ok, false);
    assert.is(v.firstBrokenSeq, 3);
    assert.is(v.recordsChecked, 2);
    assert.match(v.problem!, /record 3 was altered/);
  }));

test('a forger who recomputes the edited record\'s hash still breaks the link to the next one', () =>
  withChain(5, async (db) => {
    const [r] = await db.query<Record<string, unknown>>(sql`select * from audit_records where seq = 2`);
    const forged = { seq: 2, at: new Date(r.at as Date).toISOString(), actorId: null, actorLabel: 'system', action: 'test.append', targetType: 'thing', targetId: 't2', diff: { n: 'forged' }, requestId: null };
    const hash = recordHash(r.prev_hash as string, forged);
    await db.exec(`alter table audit_records disable trigger user`);
    await db.query(sql`update audit_records set diff = ${sql.json({ n: 'forged' })}, hash = ${hash} where seq = 2`);
    await db.exec(`alter table audit_records enable trigger user`);
    const v = await verifyChain(db);
    assert.is(v.firstBrokenSeq, 3);
    assert.match(v.problem!, /record 3 does not link to record 2/);
  }));

test('a deleted record is reported missing', () =>
  withChain(4, async (db) => {
    await db.exec(`alter table audit_records disable trigger user; delete from audit_records where seq = 2; alter table audit_records enable trigger user;`);
    const v = await verifyChain(db);
    assert.equal([v.ok, v.firstBrokenSeq, v.problem], [false, 2, 'record 2 is missing']);
  }));

test('concurrent audited changes still form one linear chain', () =>
  withChain(0, async (db) => {
    await db.exec('create table widgets (n int)');
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        audited(db, { actor: { label: 'test' }, action: 'widget.create', target: { type: 'widget', id: String(i) } }, (tx) => tx.query(sql`insert into widgets values (${i})`)),
      ),
    );
    const v = await verifyChain(db);
    assert.equal([v.ok, v.recordsChecked], [true, 40]);
  }));

test('a change that fails leaves neither the change nor an audit record', () =>
  withChain(1, async (db) => {
    await db.exec('create table gadgets (n int)');
    await audited(db, { actor: 'system', action: 'gadget.create', target: { type: 'gadget' } }, async (tx) => {
      await tx.query(sql`insert into gadgets values (1)`);
      throw new Error('nope');
    }).catch(() => {});
    const [{ g }] = await db.query<{ g: number }>(sql`select count(*)::int as g from gadgets`);
    const [{ a }] = await db.query<{ a: number }>(sql`select count(*)::int as a from audit_records`);
    assert.equal([g, a], [0, 1]);
  }));

const KEY = Buffer.alloc(32, 7);
const OTHER_KEY = Buffer.alloc(32, 8);
const append = (db: Db, n: number) => db.transaction((tx) => appendAudit(tx, { actor: 'system', action: 'test.append', target: { type: 'thing', id: `m${n}` } }));

test('record MAC = HMAC-SHA256 under HKDF(APP_ENCRYPTION_KEY, "svc:audit-mac") — fixed vector', () => {
  const sub = Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), 'svc:audit-mac', 32));
  const hex = createHmac('sha256', sub).update(`svc-audit-record:v1\n7\n${'ab'.repeat(32)}`).digest('hex');
  assert.is(recordMac(auditMacKey(KEY)!, 7, 'ab'.repeat(32)), `v1.${createHash('sha256').update(sub).digest('hex').slice(0, 16)}.${hex}`);
});

test('a checkpoint MAC covers its seq, head hash, time and chain', () => {
  const key = auditMacKey(KEY)!;
  const c = { seq: 5, hash: 'a'.repeat(64), at: '2026-01-01T00:00:00.000Z', chain: 'b'.repeat(64) };
  const mac = checkpointMac(key, c);
  assert.is(checkCheckpointMac(key, { ...c, mac }), 'ok');
  for (const changed of [{ seq: 6 }, { hash: 'c'.repeat(64) }, { at: '2026-01-01T00:00:00.001Z' }, { chain: 'd'.repeat(64) }]) {
    assert.is(checkCheckpointMac(key, { ...c, ...changed, mac }), 'bad', JSON.stringify(changed));
  }
  assert.is(checkCheckpointMac(auditMacKey(OTHER_KEY)!, { ...c, mac }), 'other_key');
});

test('with the key: records from before it pass, later ones must carry a valid MAC', () =>
  withChain(3, async (db) => {
    const key = auditMacKey(KEY)!;
    useAuditKey(key);
    try {
      for (let i = 0; i < 3; i++) await append(db, i);
    } finally {
      useAuditKey(null);
    }
    const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from audit_records where mac is not null`);
    assert.is(n, 3);
    assert.equal((await verifyChain(db, { key })).ok, true);
    await append(db, 99); // written without the key, after records that carry one
    assert.equal((await verifyChain(db, { key })).problem, 'record 7 has no MAC, but the records before it have one: svc did not write it');
    assert.equal((await verifyChain(db, { key: auditMacKey(OTHER_KEY) })).problem, 'record 4 has a MAC made with a different APP_ENCRYPTION_KEY');
    assert.equal((await verifyChain(db)).ok, true, 'without the key MACs are not checked');
  }));

test.run();
