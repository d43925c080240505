// Registered code-host (GitHub) apps as stored (docs/github-app.md): the API's view, secrets at rest,
// and the queries the admin routes and the hook share. The webhook secret and the app's private key are
// AES-256-GCM under APP_ENCRYPTION_KEY (functions/lib/crypto.ts), each bound to its row by the AAD;
// neither is ever returned after the answer that created it.
import { DecryptError, decryptSecret, encryptSecret, randomToken, sha256Hex } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

export { PUBLIC_ID, newPublicId } from '../triggers/triggers.ts';

export const webhookSecretAad = (appId: string) => `codehost_app_webhook_secret:${appId}`;
export const privateKeyAad = (appId: string) => `codehost_app_private_key:${appId}`;
/** The app id in the webhook URL is looked up by this hash, so every id costs the same query. */
export const publicIdHash = (publicId: string) => sha256Hex(`codehost_app:${publicId}`);
/** A new webhook secret: 32 random bytes as base64url text; GitHub's HMAC key is this text as UTF-8. */
export const newWebhookSecret = () => randomToken(32);

export const encryptWebhookSecret = (key: Buffer, appId: string, secret: string) => encryptSecret(key, secret, webhookSecretAad(appId));
export const encryptPrivateKey = (key: Buffer, appId: string, pem: string) => encryptSecret(key, pem, privateKeyAad(appId));

export interface AppRow {
  id: string;
  name: string;
  github_app_id: string | number | null;
  public_id: string;
  public_id_hash: string;
  webhook_secret_ciphertext: string;
  private_key_ciphertext: string | null;
  /** Where the App's REST API is (GitHub, or GitHub Enterprise Server's `https://<host>/api/v3`). */
  api_url: string;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** Why a stored secret cannot be used with the current key, or null when it decrypts. */
function problemOf(key: Buffer | null, ciphertext: string | null, aad: string): string | null {
  if (ciphertext === null) return null;
  try {
    decryptSecret(key, ciphertext, aad);
    return null;
  } catch (err) {
    return err instanceof DecryptError ? err.message : 'cannot decrypt';
  }
}

/** The settings an admin sets (and the audit log shows): never a secret. */
export const settingsOf = (r: AppRow) => ({
  name: r.name,
  githubAppId: r.github_app_id === null ? null : Number(r.github_app_id),
  privateKeySet: r.private_key_ciphertext !== null,
  apiUrl: r.api_url,
});

/** The api_url column's value for a create or an edit: the body's, else the stored one, else GitHub's. */
export const apiUrlFor = (body: { apiUrl?: string }, before?: AppRow) => body.apiUrl ?? before?.api_url ?? DEFAULT_API_URL;
export const DEFAULT_API_URL = 'https://api.github.com';

/** The API's view of an app: where GitHub must send its webhooks, and whether its secrets decrypt. */
export function toApp(r: AppRow, base: string, key: Buffer | null) {
  return {
    id: r.id,
    ...settingsOf(r),
    appPublicId: r.public_id,
    webhookUrl: `${base}/hooks/github/${r.public_id}`,
    webhookSecretProblem: problemOf(key, r.webhook_secret_ciphertext, webhookSecretAad(r.id)),
    privateKeyProblem: problemOf(key, r.private_key_ciphertext, privateKeyAad(r.id)),
    createdBy: r.created_by,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

export async function appRow(q: Queryable, appId: string, lock = false): Promise<AppRow | null> {
  const [row] = await q.query<AppRow>(sql`select * from codehost_apps where id = ${appId} ${lock ? sql`for update` : sql``}`);
  return row ?? null;
}

/** The webhook secret for verifying, or null when it cannot be decrypted (no key, another key, damaged). */
export function webhookSecretOf(r: AppRow, key: Buffer | null): string | null {
  try {
    return decryptSecret(key, r.webhook_secret_ciphertext, webhookSecretAad(r.id));
  } catch (err) {
    if (err instanceof DecryptError) return null;
    throw err;
  }
}

export interface DeliveryRow {
  id: string;
  app_id: string | null;
  delivery_id: string | null;
  event: string;
  action: string | null;
  repo: string | null;
  outcome: string;
  polls: Poll[];
  created_at: Date;
  updated_at: Date;
}

/** What became of the collector.poll sent for one matched project. */
export interface Poll {
  projectId: string;
  runnerId: string | null;
  status: 'done' | 'failed' | 'timeout' | 'offline' | 'no_runner' | 'error';
  error?: { code: string; message: string };
}

export const toDelivery = (r: DeliveryRow) => ({
  id: r.id,
  appId: r.app_id,
  deliveryId: r.delivery_id,
  event: r.event,
  action: r.action,
  repo: r.repo,
  outcome: r.outcome,
  polls: r.polls,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
