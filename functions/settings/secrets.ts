// Instance secrets at rest (spec: "Stored secrets … encrypted with APP_ENCRYPTION_KEY"). Values are
// written encrypted and never returned; their status says whether they decrypt with the current key.
import { DecryptError, decryptSecret, encryptSecret } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

export const INSTANCE_SECRETS = {
  'chat.bot_token': 'Chat bot token for notifications',
  'codehost.app_private_key': "Code-host app's private key (PEM)",
  'codehost.webhook_secret': "Code-host app's webhook secret",
} as const;
export type SecretName = keyof typeof INSTANCE_SECRETS;

export const instanceSecretAad = (name: string) => `instance_secret:${name}`;
const aad = instanceSecretAad;

export async function storeSecret(tx: Queryable, key: Buffer, name: SecretName, value: string, userId: string | null): Promise<void> {
  const ciphertext = encryptSecret(key, value, aad(name));
  await tx.query(sql`
    insert into instance_secrets (name, ciphertext, updated_by) values (${name}, ${ciphertext}, ${userId})
    on conflict (name) do update set ciphertext = excluded.ciphertext, updated_at = now(), updated_by = excluded.updated_by`);
}

/** Removes an instance secret; false when it was not set. */
export async function deleteSecret(tx: Queryable, name: string): Promise<boolean> {
  const [gone] = await tx.query(sql`delete from instance_secrets where name = ${name} returning 1`);
  return Boolean(gone);
}

/** The plaintext for use by the service, or a DecryptError saying to enter it again. */
export async function readSecret(db: Queryable, key: Buffer | null, name: SecretName): Promise<string | null> {
  const [row] = await db.query<{ ciphertext: string }>(sql`select ciphertext from instance_secrets where name = ${name}`);
  return row ? decryptSecret(key, row.ciphertext, aad(name)) : null;
}

export interface SecretStatus {
  name: SecretName;
  description: string;
  configured: boolean;
  decryptable: boolean | null;
  problem: string | null;
  updatedAt: string | null;
}

export async function secretStatuses(db: Queryable, key: Buffer | null): Promise<SecretStatus[]> {
  const rows = await db.query<{ name: string; ciphertext: string; updated_at: Date }>(sql`select name, ciphertext, updated_at from instance_secrets`);
  const byName = new Map(rows.map((r) => [r.name, r]));
  return (Object.keys(INSTANCE_SECRETS) as SecretName[]).map((name) => {
    const row = byName.get(name);
    let problem: string | null = null;
    if (row) {
      try {
        decryptSecret(key, row.ciphertext, aad(name));
      } catch (err) {
        problem = err instanceof DecryptError ? err.message : 'cannot decrypt';
      }
    }
    return {
      name,
      description: INSTANCE_SECRETS[name],
      configured: Boolean(row),
      decryptable: row ? problem === null : null,
      problem,
      updatedAt: row ? new Date(row.updated_at).toISOString() : null,
    };
  });
}
