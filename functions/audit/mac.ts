// MACs that tie audit records and checkpoints to APP_ENCRYPTION_KEY (docs/security.md, "The audit log").
// HMAC-SHA256 under an HKDF sub-key (purpose `audit-mac`); each message starts with its own label, so a
// record MAC can never pass for a checkpoint MAC. Stored as `v1.<key id>.<hex>`: the key id (first 8
// bytes of SHA-256 of the sub-key) tells "made with another key" apart from "forged".
import { createHmac } from 'node:crypto';
import { constantTimeEqual, deriveKey, sha256Hex } from '../lib/crypto.ts';

export interface Checkpoint {
  seq: number;
  hash: string;
  /** ISO 8601 with milliseconds. */
  at: string;
  /** Hash of record 1: which chain this is (64 zeros while the log is empty). */
  chain: string;
  mac: string | null;
}

export type MacCheck = 'ok' | 'other_key' | 'bad';

export function auditMacKey(encryption: Buffer | null): Uint8Array | null {
  return encryption ? deriveKey(encryption, 'audit-mac') : null;
}

function mac(key: Uint8Array, message: string): string {
  return `v1.${sha256Hex(key).slice(0, 16)}.${createHmac('sha256', key).update(message).digest('hex')}`;
}

function check(key: Uint8Array, message: string, stored: string): MacCheck {
  const expected = mac(key, message);
  if (constantTimeEqual(expected, stored)) return 'ok';
  return stored.split('.')[1] !== expected.split('.')[1] && /^v1\.[0-9a-f]{16}\./.test(stored) ? 'other_key' : 'bad';
}

const recordMessage = (seq: number, hash: string) => `svc-audit-record:v1\n${seq}\n${hash}`;
const checkpointMessage = (c: Omit<Checkpoint, 'mac'>) => `svc-audit-checkpoint:v1\n${c.chain}\n${c.seq}\n${c.hash}\n${c.at}`;

export const recordMac = (key: Uint8Array, seq: number, hash: string): string => mac(key, recordMessage(seq, hash));
export const checkRecordMac = (key: Uint8Array, seq: number, hash: string, stored: string): MacCheck => check(key, recordMessage(seq, hash), stored);
export const checkpointMac = (key: Uint8Array, c: Omit<Checkpoint, 'mac'>): string => mac(key, checkpointMessage(c));
export const checkCheckpointMac = (key: Uint8Array, c: Checkpoint): MacCheck => (c.mac ? check(key, checkpointMessage(c), c.mac) : 'bad');

/** What a MAC problem means, in a sentence that ends a problem text. */
export function macProblem(result: Exclude<MacCheck, 'ok'>): string {
  return result === 'other_key'
    ? 'a MAC made with a different APP_ENCRYPTION_KEY'
    : 'a bad MAC (not written by svc with this APP_ENCRYPTION_KEY)';
}
