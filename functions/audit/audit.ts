// The hash-chained, append-only audit log (spec: Retention; DESIGN §2).
// Appends run inside the caller's transaction (the change and its record commit together or not at
// all) under one advisory lock, so writers from any number of processes form one linear, gapless chain:
//   hash = SHA-256(prev_hash ‖ canonical JSON of {seq, at, actorId, actorLabel, action, targetType, targetId, diff, requestId})
//   mac  = HMAC under a key derived from APP_ENCRYPTION_KEY over (seq, hash) — see mac.ts; null without the key.
// Verification (the whole chain, or since the last checkpoint) is in verify.ts and checkpoint.ts.
import { createHash } from 'node:crypto';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { Principal } from '../lib/context.ts';
import { recordMac } from './mac.ts';

export const GENESIS = '0'.repeat(64);
const AUDIT_LOCK = 4_242_002;
const SECRET_FIELD = /password|secret|token|ciphertext|private_?key|api_?key|hash/i;

// The record MAC key is process-wide, set once at start (server and admin CLI): appends happen inside
// callers' transactions in many places, and the key is configuration like the clock, not an argument.
let recordKey: Uint8Array | null = null;
export function useAuditKey(key: Uint8Array | null): void {
  recordKey = key;
}

export interface AuditEntry {
  actor: Principal | 'system' | { label: string };
  action: string;
  target: { type: string; id?: string | null };
  diff?: Record<string, unknown> | null;
  requestId?: string | null;
}

export interface AuditRecord {
  seq: number;
  at: string;
  actorId: string | null;
  actorLabel: string;
  action: string;
  targetType: string;
  targetId: string | null;
  diff: unknown;
  requestId: string | null;
  prevHash: string;
  hash: string;
}

/** JSON with object keys sorted at every level and no whitespace: one text per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** Replace values of secret-looking fields at any depth; a diff never carries a secret. */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_FIELD.test(k) ? '[redacted]' : redact(v)]),
    );
  }
  return value;
}

export function recordHash(prevHash: string, r: Omit<AuditRecord, 'prevHash' | 'hash'>): string {
  const body = canonicalJson({
    seq: r.seq,
    at: r.at,
    actorId: r.actorId,
    actorLabel: r.actorLabel,
    action: r.action,
    targetType: r.targetType,
    targetId: r.targetId,
    diff: r.diff,
    requestId: r.requestId,
  });
  return createHash('sha256').update(prevHash).update(body).digest('hex');
}

function actorOf(actor: AuditEntry['actor']): { id: string | null; label: string } {
  if (actor === 'system') return { id: null, label: 'system' };
  if ('user' in actor) return { id: actor.user.id, label: actor.user.email };
  return { id: null, label: actor.label };
}

/** Append one record; call inside the transaction that makes the change. */
export async function appendAudit(tx: Queryable, entry: AuditEntry): Promise<AuditRecord> {
  await tx.query(sql`select pg_advisory_xact_lock(${AUDIT_LOCK})`);
  const [last] = await tx.query<{ seq: number; hash: string }>(sql`select seq, hash from audit_records order by seq desc limit 1`);
  const actor = actorOf(entry.actor);
  // Round-trip through JSON so the hashed value is exactly what jsonb will give back.
  const diff = entry.diff ? JSON.parse(JSON.stringify(redact(entry.diff))) : null;
  const base = {
    seq: (last?.seq ?? 0) + 1,
    at: new Date().toISOString(),
    actorId: actor.id,
    actorLabel: actor.label,
    action: entry.action,
    targetType: entry.target.type,
    targetId: entry.target.id ?? null,
    diff,
    requestId: entry.requestId ?? null,
  };
  const prevHash = last?.hash ?? GENESIS;
  const record: AuditRecord = { ...base, prevHash, hash: recordHash(prevHash, base) };
  const mac = recordKey ? recordMac(recordKey, record.seq, record.hash) : null;
  await tx.query(sql`
    insert into audit_records (seq, at, actor_id, actor_label, action, target_type, target_id, diff, request_id, prev_hash, hash, mac)
    values (${record.seq}, ${record.at}, ${record.actorId}, ${record.actorLabel}, ${record.action}, ${record.targetType},
            ${record.targetId}, ${sql.json(record.diff)}, ${record.requestId}, ${record.prevHash}, ${record.hash}, ${mac})`);
  return record;
}

/** Run a change and its audit record in one transaction. */
export async function audited<T>(db: Db, entry: AuditEntry | ((result: T) => AuditEntry), change: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    const result = await change(tx);
    await appendAudit(tx, typeof entry === 'function' ? entry(result) : entry);
    return result;
  });
}

export interface AuditRow {
  seq: number;
  at: Date;
  actor_id: string | null;
  actor_label: string;
  action: string;
  target_type: string;
  target_id: string | null;
  diff: unknown;
  request_id: string | null;
  prev_hash: string;
  hash: string;
  mac?: string | null;
}

export function toRecord(r: AuditRow): AuditRecord {
  return {
    seq: Number(r.seq),
    at: new Date(r.at).toISOString(),
    actorId: r.actor_id,
    actorLabel: r.actor_label,
    action: r.action,
    targetType: r.target_type,
    targetId: r.target_id,
    diff: r.diff,
    requestId: r.request_id,
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}

