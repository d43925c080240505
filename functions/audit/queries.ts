// The audit API's statements (functions/audit/routes.ts reads as validate → call → present): the
// filtered, cursor-paged listing and the latest chain verification. Appending records stays in audit.ts.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { AuditRow } from './audit.ts';

export interface AuditFilter {
  actor?: string;
  action?: string;
  targetType?: string;
  targetId?: string;
  since?: string;
  until?: string;
  /** Records before this seq (the nextCursor of the previous page). */
  cursor?: string;
}

/** Up to `limit` records matching `f`, newest first. */
export function listAuditRecords(q: Queryable, f: AuditFilter, limit: number) {
  const where = [sql`true`];
  if (f.actor) where.push(sql`actor_id = ${f.actor}`);
  if (f.action) where.push(sql`action = ${f.action}`);
  if (f.targetType) where.push(sql`target_type = ${f.targetType}`);
  if (f.targetId) where.push(sql`target_id = ${f.targetId}`);
  if (f.since) where.push(sql`at >= ${f.since}`);
  if (f.until) where.push(sql`at < ${f.until}`);
  if (f.cursor) where.push(sql`seq < ${Number(f.cursor)}`);
  return q.query<AuditRow>(sql`
    select * from audit_records where ${sql.join(where, ' and ')} order by seq desc limit ${limit}`);
}

export type VerificationRow = { started_at: Date; finished_at: Date; ok: boolean; records_checked: number; first_broken_seq: number | null; problem: string | null; scope: string; reason: 'chain_broken' | 'other_instance' | null };

export async function latestVerification(q: Queryable): Promise<VerificationRow | null> {
  const [v] = await q.query<VerificationRow>(sql`select * from audit_verifications order by started_at desc, id desc limit 1`);
  return v ?? null;
}

/** The newest checkpoint written at or before `at`: the head of the chain verified by then. */
export async function checkpointHead(q: Queryable, at: Date): Promise<number | null> {
  const [head] = await q.query<{ seq: string | null }>(sql`select max(seq)::text as seq from audit_checkpoints where at <= ${at}`);
  return head?.seq ? Number(head.seq) : null;
}
