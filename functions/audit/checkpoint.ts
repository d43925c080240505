// Audit verification runs, checkpoints and reports (docs/security.md, "The audit log"). One run:
//   1. verify (verify.ts): the whole chain (`audit.verify`, nightly at AUDIT_VERIFY_CRON) or only the
//      records since the last checkpoint (every replica at AUDIT_CHECKPOINT_CRON, and once at start);
//   2. ok: checkpoint the head — a row in `audit_checkpoints`, then this replica's anchor file
//      (AUDIT_ANCHOR_PATH), then an INFO log line so log shipping keeps a copy. Never after a failure:
//      a broken chain is not re-anchored, so the failure persists until someone looks.
//      Failure: an ERROR log line — `audit chain broken`, or `audit anchor file belongs to another
//      instance` when the file is another database's (verify.ts step 1: not a sign of tampering here);
//   3. in one transaction, the result in `audit_verifications` (what GET /api/audit/verification shows,
//      with its `reason`: chain_broken or other_instance) and, on a failure, an `audit.verification_failed` notification for admins (not again while the
//      previous run failed with the same problem).
// The scheduler runs `audit.verify` once across replicas, but the anchor file belongs to one replica:
// so every replica also runs the since-checkpoint check on its own timer (not a scheduler job). That
// keeps its own file current (a file that is behind rolls forward once the chain is seen to extend it)
// and adds its own checkpoint rows. Runs in one process are serialized, so they never race on the file.
// A process that dies mid-run leaves at most a checkpoint row without its file copy, which is harmless.
import { Cron } from 'croner';
import { publish } from '../live/publish.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { storeCheckpoint, writeAnchorFile } from './anchor.ts';
import { GENESIS } from './audit.ts';
import { checkpointMac } from './mac.ts';
import type { Checkpoint } from './mac.ts';
import { verifyAudit } from './verify.ts';
import type { AuditResult, Scope } from './verify.ts';

export interface AuditAnchorOptions {
  db: Db;
  log: Logger;
  /** The MAC key (mac.ts auditMacKey); null without APP_ENCRYPTION_KEY: checkpoints carry no MAC. */
  key: Uint8Array | null;
  anchorPath: string;
  /** Makes a notification (notifications/notify.ts), passed in so the audit area needs nothing of notifications/. */
  notify: (tx: Queryable, n: { kind: string; data: Record<string, unknown> }) => Promise<unknown>;
}

export const FAILED_KIND = 'audit.verification_failed';

/** Tell admins, unless the run before this one failed with the same problem (no hourly repeats). */
async function notifyAdmins(notify: AuditAnchorOptions['notify'], tx: Queryable, id: number, v: AuditResult, scope: Scope): Promise<void> {
  const [repeat] = await tx.query(sql`
    select 1 from audit_verifications p
     where p.id = (select max(id) from audit_verifications where id < ${id}) and not p.ok and p.problem = ${v.problem}`);
  if (repeat) return;
  await notify(tx, { kind: FAILED_KIND, data: { problem: v.problem, reason: v.reason, firstBrokenSeq: v.firstBrokenSeq, scope, verificationId: id } });
}

export class AuditAnchor {
  private queue: Promise<unknown> = Promise.resolve();
  private timer?: Cron;
  private readonly stopping = new AbortController();

  constructor(private readonly o: AuditAnchorOptions) {}

  /** Steps 1–3, after any run this process already has under way. */
  run(scope: Scope, signal?: AbortSignal, log: Logger = this.o.log): Promise<AuditResult> {
    const next = this.queue.then(() => this.runNow(scope, signal, log));
    this.queue = next.catch(() => {});
    return next;
  }

  private async runNow(scope: Scope, signal: AbortSignal | undefined, log: Logger): Promise<AuditResult> {
    const { db, key, anchorPath } = this.o;
    const startedAt = new Date();
    const v = await verifyAudit(db, { key, anchorPath, scope, signal });
    signal?.throwIfAborted();
    // Checkpoint (or log) first, then the result: whoever sees the result sees its checkpoint too.
    if (v.ok) await this.checkpoint(v.head, v.instance!, scope, log);
    else if (v.reason === 'other_instance') log.error('audit anchor file belongs to another instance', { scope, path: anchorPath, problem: v.problem });
    else log.error('audit chain broken', { scope, firstBrokenSeq: v.firstBrokenSeq, problem: v.problem });
    await db.transaction(async (tx) => {
      const [{ id }] = await tx.query<{ id: number }>(sql`
        insert into audit_verifications (started_at, ok, records_checked, first_broken_seq, problem, scope, reason)
        values (${startedAt}, ${v.ok}, ${v.recordsChecked}, ${v.firstBrokenSeq}, ${v.problem}, ${scope}, ${v.reason})
        returning id`);
      if (!v.ok) await notifyAdmins(this.o.notify, tx, Number(id), v, scope);
      await publish(tx, { type: 'audit.verification', id: String(id), ok: v.ok }, { admins: true });
    });
    return v;
  }

  private async checkpoint(head: { seq: number; hash: string }, instance: string, scope: Scope, log: Logger): Promise<void> {
    const [first] = await this.o.db.query<{ hash: string }>(sql`select hash from audit_records where seq = 1`);
    const body = { seq: head.seq, hash: head.hash, at: new Date().toISOString(), chain: first?.hash ?? GENESIS };
    const checkpoint: Checkpoint = { ...body, mac: this.o.key ? checkpointMac(this.o.key, body) : null };
    // The row first: a file ahead of the table would read as deleted checkpoints.
    await storeCheckpoint(this.o.db, checkpoint, scope);
    try {
      // 'other_instance': another database's replica wrote the file since this run read it; the next run reports it.
      if (writeAnchorFile(this.o.anchorPath, checkpoint, instance) === 'other_instance') log.warn('the audit anchor file belongs to another instance: not overwritten', { path: this.o.anchorPath });
    } catch (err) {
      log.error('could not write the audit anchor file', { path: this.o.anchorPath, error: err });
    }
    log.info('audit checkpoint', { scope, ...checkpoint, instance });
  }

  /** Every replica: a since-checkpoint run now and at each tick of `cron`. */
  start(cron: string): void {
    const tick = async () => {
      await this.run('since_checkpoint', this.stopping.signal).catch((err) => {
        if (!this.stopping.signal.aborted) this.o.log.error('audit checkpoint run failed', { error: err });
      });
    };
    this.timer = new Cron(cron, { protect: true, unref: true }, tick);
    void tick();
  }

  /** Stop the timer and wait for a run under way (before the database closes). */
  async stop(): Promise<void> {
    this.timer?.stop();
    this.stopping.abort(new Error('shutting down'));
    await this.queue;
  }
}
