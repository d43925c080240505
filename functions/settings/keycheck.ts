// At start: the stored secrets the current encryption key cannot decrypt (another APP_ENCRYPTION_KEY,
// no key, or a damaged value), counted per kind, so a changed key is one WARN line per kind instead of
// a surprise at the first delivery. The pages show the same per secret (secretProblem, problem).
import { decryptSecret } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { secretAad as triggerSecretAad } from '../triggers/triggers.ts';
import { secretAad } from '../webhooks/webhooks.ts';

interface Kind {
  kind: string;
  remedy: string;
  rows: (q: Queryable) => Promise<{ id: string; ciphertext: string }[]>;
  aad: (id: string) => string;
}

const KINDS: Kind[] = [
  {
    kind: 'webhook secrets',
    remedy: 'rotate them (Integrations page): Send test is refused until then',
    rows: (q) => q.query(sql`select id, secret_ciphertext as ciphertext from webhooks`),
    aad: secretAad,
  },
  {
    kind: 'trigger secrets',
    remedy: 'rotate them (Integrations page, POST …/triggers/:id/rotate): their calls get 401 until then',
    rows: (q) => q.query(sql`select id, secret_ciphertext as ciphertext from triggers`),
    aad: triggerSecretAad,
  },
];

const decrypts = (key: Buffer | null, ciphertext: string, aad: string): boolean => {
  try {
    decryptSecret(key, ciphertext, aad);
    return true;
  } catch {
    return false;
  }
};

export async function undecryptableSecrets(q: Queryable, key: Buffer | null): Promise<{ kind: string; remedy: string; count: number; total: number }[]> {
  const out = [];
  for (const k of KINDS) {
    const rows = await k.rows(q);
    out.push({ kind: k.kind, remedy: k.remedy, count: rows.filter((r) => !decrypts(key, r.ciphertext, k.aad(r.id))).length, total: rows.length });
  }
  return out;
}

/** One WARN line per kind that has secrets the key cannot decrypt, with the count; nothing otherwise. */
export async function warnUndecryptable(q: Queryable, key: Buffer | null, fingerprint: string | null, log: Logger): Promise<void> {
  for (const k of await undecryptableSecrets(q, key)) {
    if (k.count === 0) continue;
    log.warn(`${k.count} of ${k.total} stored ${k.kind} cannot be decrypted with the current encryption key: ${k.remedy}`, { kind: k.kind, count: k.count, fingerprint: fingerprint ?? 'none' });
  }
}
