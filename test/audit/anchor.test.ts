// Issue 11: tampering with the audit log as a database superuser, each case on its own instance, is
// reported by GET /api/audit/verification, an ERROR log line and an admin notification — and the
// anchor file keeps the checkpoint taken before the tampering (a broken chain is never re-anchored).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GENESIS, recordHash } from '../../functions/audit/audit.ts';
import { anchorFile, assertReported, behindTriggers, forgedChain, insertSql, onInstance, records, tamper, verifyNow } from './_instance.ts';
import type { Instance } from './_instance.ts';

/** Verify and checkpoint the chain; returns its length. Running a verification appends a
 *  `schedule.run` record, so after a deletion the log ends one record later than it was left. */
async function checkpointed(inst: Instance): Promise<number> {
  const v = await verifyNow(inst);
  assert.is(v.ok, true, v.problem ?? '');
  const file = anchorFile(inst);
  assert.is(file.seq, v.recordsChecked);
  return file.seq;
}

test(`(a) the last records deleted with the trigger disabled → "the audit log ends at …"`, () =>
  onInstance(undefined, async (inst) => {
    const n = await checkpointed(inst);
    await tamper(inst, async () => behindTriggers('audit_records', `delete from audit_records where seq > ${n - 2};`));
    await assertReported(inst, new RegExp(`^the audit log ends at record ${n - 1}, but the (anchor file|stored) checkpoint of \\S+ saw ${n} records`), { firstBrokenSeq: n, anchoredAt: n });
  }));

test('(b) the table truncated with the trigger disabled → "the audit log ends at …"', () =>
  onInstance(undefined, async (inst) => {
    const n = await checkpointed(inst);
    await tamper(inst, async () => behindTriggers('audit_records', 'truncate audit_records;'));
    await assertReported(inst, new RegExp(`^the audit log ends at record 1, but the (anchor file|stored) checkpoint of \\S+ saw ${n} records`), { firstBrokenSeq: 2, anchoredAt: n });
  }));

test('(c) a record edited and every record after it re-hashed → the edited record has a bad MAC', () =>
  onInstance(undefined, async (inst) => {
    const n = await checkpointed(inst);
    await tamper(inst, async (db) => {
      const all = await records(db);
      const updates: string[] = [];
      let prevHash = all[2].prevHash;
      for (const r of all.slice(2)) {
        const diff = r.seq === 3 ? { after: { 'instance.name': 'rewritten' } } : r.diff;
        const hash = recordHash(prevHash, { ...r, diff });
        updates.push(`update audit_records set diff = '${JSON.stringify(diff)}'::jsonb, prev_hash = '${prevHash}', hash = '${hash}' where seq = ${r.seq};`);
        prevHash = hash;
      }
      return behindTriggers('audit_records', updates.join('\n'));
    });
    await assertReported(inst, /^record 3 has a bad MAC \(not written by svc with this APP_ENCRYPTION_KEY\)/, { firstBrokenSeq: 3, anchoredAt: n });
  }));

test('(d) a forged record appended with a valid hash (a plain INSERT) → it has no MAC', () =>
  onInstance(undefined, async (inst) => {
    const n = await checkpointed(inst);
    await tamper(inst, async (db) => insertSql(forgedChain(1, (await records(db)).at(-1)!)[0]));
    await assertReported(inst, new RegExp(`^record ${n + 1} has no MAC, but the records before it have one: svc did not write it`), { firstBrokenSeq: n + 1, anchoredAt: n });
  }));

test('(e) the table replaced with a shorter, self-consistent chain → "the audit log ends at …"', () =>
  onInstance(undefined, async (inst) => {
    const n = await checkpointed(inst);
    const fake = forgedChain(2);
    assert.is(fake[0].prevHash, GENESIS);
    await tamper(inst, async () => behindTriggers('audit_records', `truncate audit_records;\n${fake.map(insertSql).join('\n')}`));
    await assertReported(inst, new RegExp(`^the audit log ends at record 3, but the (anchor file|stored) checkpoint of \\S+ saw ${n} records`), { firstBrokenSeq: 4, anchoredAt: n });
  }));

test.run();
