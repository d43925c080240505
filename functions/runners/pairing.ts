// Pairing (spec: Runner pairing; DESIGN §3): an admin makes a one-time code XXXX-XXXX (15 minutes,
// single use, only its hash kept); the runner trades it at POST /runners/pair for its id and a token
// (only a hash kept). A code made for an existing runner re-pairs it: the old token stops working and
// the old socket closes with 4409. A runner created without a name is named after the machine's hostname.
import { randomInt } from 'node:crypto';
import { randomToken, sha256Hex } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { setRunnerTags } from './queries.ts';

export const CODE_MINUTES = 15;
const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789'; // no 0/O, 1/I: read aloud and typed by people

export function newCode(): string {
  const pick = () => Array.from({ length: 4 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
  return `${pick()}-${pick()}`;
}

export async function createPairingCode(tx: Queryable, runnerId: string, userId: string | null): Promise<{ code: string; expiresAt: Date }> {
  const code = newCode();
  const expiresAt = new Date(Date.now() + CODE_MINUTES * 60_000);
  await tx.query(sql`insert into pairing_codes (code_hash, runner_id, created_by, expires_at) values (${sha256Hex(code)}, ${runnerId}, ${userId}, ${expiresAt})`);
  return { code, expiresAt };
}

/** Trade a code for a fresh token; null when the code is unknown, used or expired. */
export async function redeemPairingCode(
  tx: Queryable,
  code: string,
  facts: { hostname: string; version: string; target: string; tags?: string[] },
): Promise<{ runnerId: string; token: string; repaired: boolean } | null> {
  const [used] = await tx.query<{ runner_id: string }>(sql`
    update pairing_codes c set used_at = now()
      from runners r
     where c.code_hash = ${sha256Hex(code.toUpperCase())} and c.used_at is null and c.expires_at > now()
       and r.id = c.runner_id and r.removed_at is null
    returning c.runner_id`);
  if (!used) return null;
  const token = `svc_rt_${randomToken(32)}`;
  const [before] = await tx.query<{ paired_at: Date | null }>(sql`
    select paired_at from runners where id = ${used.runner_id} for update`);
  await tx.query(sql`
    update runners set token_hash = ${sha256Hex(token)}, revoked_at = null, paired_at = now(),
           hostname = ${facts.hostname}, version = ${facts.version}, target = ${facts.target},
           name = case when name = '' then left(${facts.hostname}, 100) else name end
     where id = ${used.runner_id}`);
  // `svc-runner pair --tags a,b` replaces the tags; pairing without --tags keeps those an admin set.
  if (facts.tags) await setRunnerTags(tx, used.runner_id, facts.tags);
  return { runnerId: used.runner_id, token, repaired: Boolean(before?.paired_at) };
}
