// Issue 33 item 4: the anchor file names the database (instance) it was written for. Two instances on
// different databases that share one AUDIT_ANCHOR_PATH: the second reports, plainly and as a failed
// verification of its own kind (reason other_instance, no "chain broken"), that the file is another
// instance's, and leaves the file to its owner. A replaced database that takes the old instance id
// still fails as a broken chain. A file of an earlier release (no instance) keeps working and gets the id.
import { writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitUntil } from '../runner/_harness.ts';
import { anchorFile, assertReported, behindTriggers, failureNotifications, instance, latestVerification, sharing, tamper, verifyNow } from './_instance.ts';
import type { Instance } from './_instance.ts';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** The first instance, verified: its anchor file holds a checkpoint and its instance id. */
async function anchored(): Promise<{ a: Instance; id: string }> {
  const a = await instance();
  try {
    const v = await verifyNow(a);
    assert.is(v.ok, true, v.problem ?? '');
    const file = anchorFile(a) as ReturnType<typeof anchorFile> & { instance?: string };
    assert.match(file.instance ?? '', new RegExp(`^${UUID}$`), 'the anchor file names its instance');
    return { a, id: file.instance! };
  } catch (err) {
    await a.cleanup(); // a failed test must not leave its server running
    throw err;
  }
}

test('a new database with the anchor file of another instance: "the anchor file belongs to instance X; this database is instance Y", reason other_instance, not "chain broken"; the file stays its owner\'s', async () => {
  const { a, id } = await anchored();
  let b: Instance | undefined;
  try {
    b = await sharing(a);
    const v = (await verifyNow(b)) as Awaited<ReturnType<typeof verifyNow>> & { reason?: string };
    assert.is(v.ok, false, 'still a failed verification');
    const problem = new RegExp(`^the anchor file belongs to instance ${id}; this database is instance (${UUID}): a different database, or this one was replaced$`);
    assert.match(v.problem!, problem);
    assert.is.not(problem.exec(v.problem!)![1], id, 'each database has its own instance id');
    assert.is(v.reason, 'other_instance');
    assert.is(v.recordsChecked, 0, "this database's records are not compared with another's checkpoint");
    assert.is(v.firstBrokenSeq, null);
    await waitUntil(() => /ERROR audit anchor file belongs to another instance .*scope=full/.test(b!.output()), 10_000, 'the ERROR line');
    assert.not.match(b.output(), /audit chain broken/, 'no "chain broken" wording');
    const sent = await failureNotifications(b);
    assert.ok(sent.length >= 1, 'admins are told');
    assert.match(sent[0].data.problem, problem);
    assert.is((sent[0].data as { reason?: string }).reason, 'other_instance');
    assert.is((anchorFile(a) as { instance?: string }).instance, id, 'the other instance does not take the file over');
    // The owner is unaffected: its next verification passes and moves its file forward.
    const again = await verifyNow(a);
    assert.is(again.ok, true, again.problem ?? '');
    assert.is((anchorFile(a) as { instance?: string }).instance, id);
  } finally {
    await b?.cleanup();
    await a.cleanup();
  }
});

test('a replaced database that takes the old instance id still fails: the checkpoint the file names is not there (chain_broken)', async () => {
  const { a, id } = await anchored();
  let b: Instance | undefined;
  try {
    b = await sharing(a);
    // Whoever replaced the database also copies the old id into it, behind the append-only trigger.
    await tamper(b, async () => behindTriggers('instance_identity', `update instance_identity set instance_id = '${id}';`));
    await assertReported(b, /^audit_checkpoints no longer holds the anchor file's checkpoint at record \d+ /);
    assert.is(((await latestVerification(b)) as { reason?: string }).reason, 'chain_broken');
  } finally {
    await b?.cleanup();
    await a.cleanup();
  }
});

test('an anchor file of the previous release (no instance) counts as this database\'s and is rewritten with the id', async () => {
  const { a, id } = await anchored();
  try {
    const { instance: _, ...legacy } = anchorFile(a) as ReturnType<typeof anchorFile> & { instance?: string };
    writeFileSync(a.anchorPath, `${JSON.stringify({ version: 1, ...legacy }, null, 2)}\n`, { mode: 0o600 });
    const v = (await verifyNow(a)) as Awaited<ReturnType<typeof verifyNow>> & { reason?: string | null };
    assert.is(v.ok, true, v.problem ?? '');
    assert.is(v.reason, null);
    const rewritten = anchorFile(a) as ReturnType<typeof anchorFile> & { instance?: string };
    assert.is(rewritten.instance, id);
    assert.ok(rewritten.seq >= legacy.seq);
    assert.equal(await failureNotifications(a), []);
  } finally {
    await a.cleanup();
  }
});

test.run();
