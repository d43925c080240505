// Issue 11: damage to the audit checkpoints themselves — in the anchor file or in audit_checkpoints —
// is reported like damage to the records (result, ERROR line, admin notification).
import { writeFileSync } from 'node:fs';
import { test } from 'uvu';
import { anchorFile, assertReported, behindTriggers, onInstance, tamper, verifyNow } from './_instance.ts';

test('a bad MAC in the anchor file is reported', () =>
  onInstance(undefined, async (inst) => {
    await verifyNow(inst);
    const a = anchorFile(inst);
    const flipped = a.mac!.slice(0, -1) + (a.mac!.endsWith('0') ? '1' : '0');
    writeFileSync(inst.anchorPath, JSON.stringify({ version: 1, ...a, mac: flipped }));
    await assertReported(inst, new RegExp(`^the anchor file checkpoint of \\S+ \\(record ${a.seq}\\) has a bad MAC`));
  }));

test('a bad MAC on the newest stored checkpoint is reported', () =>
  onInstance(undefined, async (inst) => {
    await verifyNow(inst);
    const a = anchorFile(inst);
    await tamper(inst, async () => behindTriggers('audit_checkpoints', `update audit_checkpoints set mac = 'v1.0000000000000000.${'0'.repeat(64)}' where seq = ${a.seq};`));
    await assertReported(inst, new RegExp(`^the stored checkpoint of \\S+ \\(record ${a.seq}\\) has a MAC made with a different APP_ENCRYPTION_KEY`));
  }));

test('a dropped audit_checkpoints table while the anchor file has a checkpoint is reported', () =>
  onInstance(undefined, async (inst) => {
    await verifyNow(inst);
    const a = anchorFile(inst);
    await tamper(inst, async () => 'drop table audit_checkpoints;');
    await assertReported(inst, new RegExp(`^the audit_checkpoints table is missing, while the anchor file has a checkpoint at record ${a.seq}`));
  }));

test('deleted checkpoint rows (the file has one the table lost) are reported', () =>
  onInstance(undefined, async (inst) => {
    await verifyNow(inst);
    const a = anchorFile(inst);
    await tamper(inst, async () => behindTriggers('audit_checkpoints', `delete from audit_checkpoints where seq >= ${a.seq};`));
    await assertReported(inst, new RegExp(`^audit_checkpoints no longer holds the anchor file's checkpoint at record ${a.seq}`));
  }));

test.run();
