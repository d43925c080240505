// Where audit checkpoints are kept: rows in `audit_checkpoints`, and the newest one this replica wrote
// in its anchor file (AUDIT_ANCHOR_PATH, JSON, written atomically with mode 0600). The file is the
// memory the database does not hold: each replica keeps its own, and it only ever moves forward.
// The file names the database it belongs to (`instance`, the id in `instance_identity`, sql/0023): a
// file written for another database is reported as such, never compared with this one's records, and
// never overwritten. A file of an earlier release has no `instance`; it counts as this database's and
// gets the id at its next write.
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { writeFileAtomic } from '../../protocol/atomic-file.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { Sql } from '../lib/db/port.ts';
import type { Checkpoint } from './mac.ts';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const fileSchema = z.strictObject({
  version: z.literal(1),
  seq: z.number().int().min(0),
  hash: hex64,
  at: z.iso.datetime(),
  chain: hex64,
  mac: z.string().max(200).nullable(),
  instance: z.uuid().optional(),
});

/** `instance`: the database the file was written for; null in a file of an earlier release. */
export type FileAnchor = { state: 'none' } | { state: 'damaged' } | { state: 'ok'; checkpoint: Checkpoint; instance: string | null };

export function readAnchorFile(path: string): FileAnchor {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'none' };
    return { state: 'damaged' };
  }
  try {
    const { version: _, instance, ...checkpoint } = fileSchema.parse(JSON.parse(text));
    return { state: 'ok', checkpoint, instance: instance ?? null };
  } catch {
    return { state: 'damaged' };
  }
}

/**
 * Replace the file's checkpoint with a newer one of database `instance`: never move it back (two writers,
 * one file), and never take over the file of another database (two instances, one path): 'written',
 * 'behind' or 'other_instance' (the file is left as it is).
 */
export function writeAnchorFile(path: string, checkpoint: Checkpoint, instance: string): 'written' | 'behind' | 'other_instance' {
  const current = readAnchorFile(path);
  if (current.state === 'ok' && current.instance !== null && current.instance !== instance) return 'other_instance';
  if (current.state === 'ok' && current.checkpoint.seq > checkpoint.seq) return 'behind';
  writeFileAtomic(path, `${JSON.stringify({ version: 1, instance, ...checkpoint }, null, 2)}\n`);
  return 'written';
}

/** This database's instance id (made once by the seed, sql/0023_instance_id.sql); null when it is gone. */
export async function instanceId(db: Queryable): Promise<string | null> {
  try {
    const [row] = await db.query<{ instance_id: string }>(sql`select instance_id::text as instance_id from instance_identity`);
    return row?.instance_id ?? null;
  } catch (err) {
    const e = err as { code?: string; message?: string };
    if (e.code === '42P01' || /relation "instance_identity" does not exist/.test(e.message ?? '')) return null;
    throw err;
  }
}

interface Row {
  seq: number;
  hash: string;
  at: Date;
  chain: string;
  mac: string | null;
}

const toCheckpoint = (r: Row): Checkpoint => ({ seq: Number(r.seq), hash: r.hash, at: new Date(r.at).toISOString(), chain: r.chain, mac: r.mac });

/** Thrown when `audit_checkpoints` itself is gone (dropped by someone with the database). */
export class CheckpointTableMissing extends Error {
  readonly code = 'checkpoint_table_missing';
}

async function checkpointQuery<T>(db: Queryable, query: Sql): Promise<T[]> {
  try {
    return await db.query<T>(query);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    if (e.code === '42P01' || /relation "audit_checkpoints" does not exist/.test(e.message ?? '')) throw new CheckpointTableMissing('audit_checkpoints is missing');
    throw err;
  }
}

/** The newest stored checkpoint (highest seq, then the last written), and whether any carries a MAC. */
export async function latestStoredCheckpoint(db: Queryable): Promise<{ checkpoint: Checkpoint | null; anyMac: boolean }> {
  const [latest] = await checkpointQuery<Row>(db, sql`select seq, hash, at, chain, mac from audit_checkpoints order by seq desc, id desc limit 1`);
  const [maced] = await checkpointQuery<{ id: number }>(db, sql`select id from audit_checkpoints where mac is not null limit 1`);
  return { checkpoint: latest ? toCheckpoint(latest) : null, anyMac: Boolean(maced) };
}

/** Whether the table still holds a checkpoint of this head (the one a replica's anchor file names). */
export async function storedCheckpointExists(db: Queryable, seq: number, hash: string): Promise<boolean> {
  const rows = await checkpointQuery<{ id: number }>(db, sql`select id from audit_checkpoints where seq = ${seq} and hash = ${hash} limit 1`);
  return rows.length > 0;
}

export async function storeCheckpoint(db: Queryable, c: Checkpoint, scope: 'full' | 'since_checkpoint'): Promise<void> {
  await checkpointQuery(db, sql`
    insert into audit_checkpoints (seq, hash, at, chain, mac, scope)
    values (${c.seq}, ${c.hash}, ${c.at}, ${c.chain}, ${c.mac}, ${scope})`);
}
