// Audit chain verification (spec: "A nightly job verifies the chain"; docs/security.md, "The audit log").
// Read-only; checkpoint.ts stores the result, writes the next checkpoint and reports a failure. Steps:
//   1. Anchors: the newest checkpoint in `audit_checkpoints` and the one in this replica's anchor file.
//      The file must be this database's (its `instance` is this one's instance_identity, or absent in a
//      file of an earlier release): a file of another instance fails as `other_instance`, its checkpoint
//      unused — not evidence against this database's records. Each must carry a valid MAC when
//      APP_ENCRYPTION_KEY is set, and the table must still hold the file's checkpoint (else checkpoint
//      rows were deleted, or the table dropped).
//   2. Walk the records in seq order, from record 1 (scope `full`) or from the oldest anchor (scope
//      `since_checkpoint`, whose own hash the anchor vouches for): gapless, linked, content matching
//      its hash, the MAC rules below, and at each anchor's seq exactly the anchor's hash.
//   3. The log must reach every anchor's seq: fewer records means records were deleted or replaced.
// MAC rules with the key: a record's MAC must verify; a record without one is refused after a record
// that has one, or after a MAC-valid anchor (older records may predate the key or this check).
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { instanceId, latestStoredCheckpoint, readAnchorFile, storedCheckpointExists, CheckpointTableMissing } from './anchor.ts';
import { GENESIS, recordHash, toRecord } from './audit.ts';
import type { AuditRow } from './audit.ts';
import { checkCheckpointMac, checkRecordMac, macProblem } from './mac.ts';
import type { Checkpoint } from './mac.ts';

export type Scope = 'full' | 'since_checkpoint';

export interface Verification {
  ok: boolean;
  recordsChecked: number;
  firstBrokenSeq: number | null;
  problem: string | null;
}

export interface ChainResult extends Verification {
  /** The last record that passed: the next checkpoint when everything passed. */
  head: { seq: number; hash: string };
}

/**
 * Why a verification failed: `chain_broken`, the records or checkpoints of this database do not verify
 * (tampering, or a restore older than the anchor); `other_instance`, the anchor file was written for
 * another database (two instances sharing one AUDIT_ANCHOR_PATH, or this database was replaced).
 */
export type FailureReason = 'chain_broken' | 'other_instance';

export interface AuditResult extends ChainResult {
  reason: FailureReason | null;
  /** This database's instance id: the checkpoint's anchor file is written for it. */
  instance: string | null;
}

export interface Anchor {
  label: 'anchor file' | 'stored';
  checkpoint: Checkpoint;
  macValid: boolean;
}

export interface WalkOptions {
  batch?: number;
  signal?: AbortSignal;
  key?: Uint8Array | null;
  /** Start at this record instead of record 1; an anchor at this seq vouches for its hash. */
  fromSeq?: number;
  anchors?: Anchor[];
}

const describe = (a: Anchor) => `the ${a.label} checkpoint of ${a.checkpoint.at}`;

/** Walk the chain in seq order, in batches; report the first record that does not fit. */
export async function verifyChain(db: Db, opts: WalkOptions = {}): Promise<ChainResult> {
  const { batch = 5000, signal, key = null, anchors = [] } = opts;
  let expectSeq = Math.max(1, opts.fromSeq ?? 1);
  let prevHash: string | null = expectSeq === 1 ? GENESIS : null; // null: the first record's link is vouched for by an anchor
  let checked = 0;
  let sawMac = false;
  const maced = anchors.filter((a) => a.macValid).map((a) => a.checkpoint.seq);
  const macAfter = maced.length ? Math.max(...maced) : Infinity;
  const fail = (seq: number, problem: string): ChainResult => ({ ok: false, recordsChecked: checked, firstBrokenSeq: seq, problem, head: { seq: expectSeq - 1, hash: prevHash ?? '' } });
  for (;;) {
    signal?.throwIfAborted();
    const rows = await db.query<AuditRow>(sql`select * from audit_records where seq >= ${expectSeq} order by seq limit ${batch}`);
    for (const row of rows) {
      const r = toRecord(row);
      if (r.seq !== expectSeq) return fail(expectSeq, `record ${expectSeq} is missing`);
      if (prevHash !== null && r.prevHash !== prevHash) return fail(r.seq, `record ${r.seq} does not link to record ${r.seq - 1} (prev_hash differs)`);
      if (recordHash(r.prevHash, r) !== r.hash) return fail(r.seq, `record ${r.seq} was altered (its hash does not match its content)`);
      if (key && row.mac) {
        const mac = checkRecordMac(key, r.seq, r.hash, row.mac);
        if (mac !== 'ok') return fail(r.seq, `record ${r.seq} has ${macProblem(mac)}`);
        sawMac = true;
      } else if (key && (sawMac || r.seq > macAfter)) {
        const why = sawMac ? 'the records before it have one' : `the checkpoint at record ${macAfter} has one`;
        return fail(r.seq, `record ${r.seq} has no MAC, but ${why}: svc did not write it`);
      }
      const differs = anchors.find((a) => a.checkpoint.seq === r.seq && a.checkpoint.hash !== r.hash);
      if (differs) return fail(r.seq, `record ${r.seq} is not the record ${describe(differs)} saw (its hash differs: the chain was rewritten or replaced)`);
      prevHash = r.hash;
      expectSeq++;
      checked++;
    }
    if (rows.length < batch) break;
  }
  const head = { seq: expectSeq - 1, hash: prevHash ?? GENESIS };
  const beyond = anchors.filter((a) => a.checkpoint.seq > head.seq).sort((a, b) => b.checkpoint.seq - a.checkpoint.seq)[0];
  if (beyond) {
    const problem = `the audit log ends at record ${head.seq}, but ${describe(beyond)} saw ${beyond.checkpoint.seq} records (records were deleted or the table was replaced)`;
    return { ...fail(head.seq + 1, problem), head };
  }
  return { ok: true, recordsChecked: checked, firstBrokenSeq: null, problem: null, head };
}

type Failure = Verification & { reason: FailureReason };
const anchorFailure = (problem: string, reason: FailureReason = 'chain_broken'): Failure => ({ ok: false, recordsChecked: 0, firstBrokenSeq: null, problem, reason });

/** The plain sentence for an anchor file of another database (docs/security.md has the remedy). */
export const otherInstanceProblem = (fileInstance: string, dbInstance: string) =>
  `the anchor file belongs to instance ${fileInstance}; this database is instance ${dbInstance}: a different database, or this one was replaced`;

/** Step 1: the file is this database's; the stored and the file checkpoint, checked against each other and the key. */
export async function loadAnchors(db: Db, anchorPath: string, key: Uint8Array | null): Promise<{ anchors: Anchor[]; instance: string | null; failure: Failure | null }> {
  const file = readAnchorFile(anchorPath);
  const instance = await instanceId(db);
  if (!instance) return { anchors: [], instance, failure: anchorFailure('this database has no instance id (the instance_identity row is missing)') };
  if (file.state === 'ok' && file.instance !== null && file.instance !== instance) {
    return { anchors: [], instance, failure: anchorFailure(otherInstanceProblem(file.instance, instance), 'other_instance') };
  }
  const fileCheckpoint = file.state === 'ok' ? file.checkpoint : null;
  let stored: Awaited<ReturnType<typeof latestStoredCheckpoint>>;
  try {
    stored = await latestStoredCheckpoint(db);
  } catch (err) {
    if (!(err instanceof CheckpointTableMissing)) throw err;
    const also = fileCheckpoint ? `, while the anchor file has a checkpoint at record ${fileCheckpoint.seq}` : '';
    return { anchors: [], instance, failure: anchorFailure(`the audit_checkpoints table is missing${also}`) };
  }
  if (file.state === 'damaged') return { anchors: [], instance, failure: anchorFailure(`the anchor file ${anchorPath} is damaged (it holds no checkpoint)`) };
  const anchors: Anchor[] = [];
  for (const [label, checkpoint] of [['anchor file', fileCheckpoint], ['stored', stored.checkpoint]] as const) {
    if (!checkpoint) continue;
    const anchor: Anchor = { label, checkpoint, macValid: false };
    if (key && checkpoint.mac) {
      const mac = checkCheckpointMac(key, checkpoint);
      if (mac !== 'ok') return { anchors, instance, failure: anchorFailure(`${describe(anchor)} (record ${checkpoint.seq}) has ${macProblem(mac)}`) };
      anchor.macValid = true;
    } else if (key && stored.anyMac) {
      return { anchors, instance, failure: anchorFailure(`${describe(anchor)} (record ${checkpoint.seq}) has no MAC, but other checkpoints have one: svc did not write it`) };
    }
    anchors.push(anchor);
  }
  if (fileCheckpoint && !(await storedCheckpointExists(db, fileCheckpoint.seq, fileCheckpoint.hash))) {
    return { anchors, instance, failure: anchorFailure(`audit_checkpoints no longer holds the anchor file's checkpoint at record ${fileCheckpoint.seq} of ${fileCheckpoint.at} (checkpoints were deleted)`) };
  }
  return { anchors, instance, failure: null };
}

export interface VerifyOptions {
  key: Uint8Array | null;
  anchorPath: string;
  scope: Scope;
  batch?: number;
  signal?: AbortSignal;
}

/** Steps 1–3: the anchors, then the walk from record 1 or from the oldest anchor. */
export async function verifyAudit(db: Db, o: VerifyOptions): Promise<AuditResult> {
  const { anchors, instance, failure } = await loadAnchors(db, o.anchorPath, o.key);
  if (failure) return { ...failure, head: { seq: 0, hash: GENESIS }, instance };
  const fromSeq = o.scope === 'full' || anchors.length === 0 ? 1 : Math.min(...anchors.map((a) => a.checkpoint.seq));
  const v = await verifyChain(db, { batch: o.batch, signal: o.signal, key: o.key, fromSeq, anchors });
  return { ...v, reason: v.ok ? null : 'chain_broken', instance };
}
