// Audit checkpoints (issue 11): where they are written (table, anchor file, INFO log line), that a
// growing healthy chain stays ok, the per-replica periodic check, and what is caught without the key.
import { statSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { recordHash } from '../../functions/audit/audit.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { onlyOn } from '../helpers/db.ts';
import { waitUntil } from '../runner/_harness.ts';
import { anchorFile, assertReported, behindTriggers, change, failureNotifications, latestVerification, onInstance, records, tamper, verifyNow } from './_instance.ts';

test('a healthy chain that grows stays ok: each verification checkpoints the head in the table, the 0600 anchor file and an INFO line', () =>
  onInstance(undefined, async (inst) => {
    const first = await verifyNow(inst);
    assert.is(first.ok, true);
    const a = anchorFile(inst);
    assert.is(a.seq, first.recordsChecked);
    assert.match(a.mac!, /^v1\.[0-9a-f]{16}\.[0-9a-f]{64}$/);
    assert.is(statSync(inst.anchorPath).mode & 0o777, 0o600);
    const line = new RegExp(`INFO audit checkpoint .*scope=full seq=${a.seq} hash=${a.hash} at=${a.at.replace(/\./g, '\\.')} chain=${a.chain} mac=${a.mac}`);
    await waitUntil(() => line.test(inst.output()), 10_000, 'the INFO checkpoint line');

    await change(inst, 4);
    const second = await verifyNow(inst);
    assert.is(second.ok, true);
    assert.ok(anchorFile(inst).seq >= a.seq + 5, 'the anchor moved forward');
    assert.is(anchorFile(inst).chain, a.chain, 'same chain');

    // A restart checks the records since the last checkpoint and finds nothing wrong.
    await inst.restart();
    await waitUntil(async () => (await latestVerification(inst))?.scope === 'since_checkpoint', 10_000, 'the start-up check');
    assert.is((await latestVerification(inst))!.ok, true);
    assert.equal(await failureNotifications(inst), [], 'no notification');
    assert.not.match(inst.output(), /ERROR/);
  }));

test('each replica checks at AUDIT_CHECKPOINT_CRON on its own: new records are checkpointed without a verification run', () =>
  onInstance({ APP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), AUDIT_CHECKPOINT_CRON: '* * * * * *' }, async (inst) => {
    await waitUntil(() => /INFO audit checkpoint .*scope=since_checkpoint/.test(inst.output()), 10_000, 'a periodic checkpoint');
    await change(inst, 2);
    const res = await inst.api('/api/audit?limit=1');
    const head = (await res.json()).records[0].seq;
    await waitUntil(() => anchorFile(inst).seq >= head, 10_000, `the anchor file to reach record ${head}`);
    const v = await latestVerification(inst);
    assert.equal([v!.scope, v!.ok], ['since_checkpoint', true]);
  }));

// The embedded database always has a key (generated on first start), so "no key" exists only with DATABASE_URL.
onlyOn('postgres', test, 2, () => {
  test('without APP_ENCRYPTION_KEY: checkpoints carry no MAC, and truncation is still caught by the anchor file', () =>
    onInstance({}, async (inst) => {
      await verifyNow(inst);
      const a = anchorFile(inst);
      assert.is(a.mac, null);
      await waitUntil(() => /INFO audit checkpoint .*scope=full .*mac=null/.test(inst.output()), 10_000, 'the INFO line');
      await tamper(inst, async () => behindTriggers('audit_records', 'truncate audit_records;'));
      await assertReported(inst, new RegExp(`^the audit log ends at record 1, but the (anchor file|stored) checkpoint of \\S+ saw ${a.seq} records`));
    }));

  test('without APP_ENCRYPTION_KEY: a rewritten chain is caught where it passes the checkpointed record', () =>
    onInstance({}, async (inst) => {
      await verifyNow(inst);
      const a = anchorFile(inst);
      await tamper(inst, async (db) => {
        const all = await records(db);
        let prevHash = all[1].prevHash;
        const updates = all.slice(1).map((r) => {
          const diff = r.seq === 2 ? { rewritten: true } : r.diff;
          const hash = recordHash(prevHash, { ...r, diff });
          const out = `update audit_records set diff = '${JSON.stringify(diff)}'::jsonb, prev_hash = '${prevHash}', hash = '${hash}' where seq = ${r.seq};`;
          prevHash = hash;
          return out;
        });
        const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from audit_records where mac is not null`);
        assert.is(n, 0, 'no record carries a MAC without the key');
        return behindTriggers('audit_records', updates.join('\n'));
      });
      await assertReported(inst, new RegExp(`^record ${a.seq} is not the record the (anchor file|stored) checkpoint of \\S+ saw \\(its hash differs`));
    }));
});

test.run();
