// Inbound triggers as stored (spec: Resources → Inbound trigger, Inbound delivery record): the shapes the
// admin API returns (protocol/api/triggers.ts), secrets at rest, and the queries the routes, the hook and
// the firer share (the admin API's own statements: queries.ts).
import { randomBytes } from 'node:crypto';
import { DecryptError, decryptSecret, encryptSecret, randomToken, sha256Hex } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { DeliveryAnswer, PayloadReason, TriggerAnswer, TriggerSettings } from '../../protocol/api/triggers.ts';
import { poolTargetOf } from '../runs/pool-target.ts';
import type { PoolTargetRow } from '../runs/pool-target.ts';

/** The previous secret keeps verifying this long after a rotation (spec: Limits). */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export const secretAad = (triggerId: string) => `trigger_secret:${triggerId}`;
export const previousSecretAad = (triggerId: string) => `trigger_secret_previous:${triggerId}`;
/** A new secret: 32 random bytes as base64url text; the HMAC key is this text as UTF-8 (spec). */
export const newSecret = () => randomToken(32);

const URL_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** 24 random URL-safe characters (6 bits each from fresh random bytes): not a database id. */
export function newPublicId(): string {
  return [...randomBytes(24)].map((b) => URL_SAFE[b & 63]).join('');
}
export const PUBLIC_ID = /^[A-Za-z0-9_-]{24}$/;
export const publicIdHash = (publicId: string) => sha256Hex(`trigger:${publicId}`);

/** The settings a row stores under the API's own names (all but allowed_paths and value_pattern). */
const SAME_NAMED = ['name', 'action', 'skill', 'args', 'profile', 'model', 'output'] as const;

export interface TriggerRow extends Pick<TriggerSettings, (typeof SAME_NAMED)[number] | 'enabled'>, PoolTargetRow {
  id: string;
  project_id: string;
  allowed_paths: string[];
  value_pattern: string;
  public_id: string;
  public_id_hash: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: Date | null;
  disabled_reason: string | null;
  cap_usd: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** What create and edit set (and the audit log shows), as the API names it. */
export const settingsOf = (r: TriggerRow): TriggerSettings => ({
  ...(Object.fromEntries(SAME_NAMED.map((k) => [k, r[k]])) as Pick<TriggerSettings, (typeof SAME_NAMED)[number]>),
  allowedPaths: r.allowed_paths,
  valuePattern: r.value_pattern,
  enabled: r.enabled,
  capUSD: r.cap_usd === null ? null : Number(r.cap_usd),
  ...poolTargetOf(r),
});

/** The API's view of a trigger (protocol/api/triggers.ts): never a secret; `url` is where callers POST. */
export function toTrigger(r: TriggerRow, base: string, key: Buffer | null, nowMs: number): TriggerAnswer {
  let secretProblem: string | null = null;
  try {
    decryptSecret(key, r.secret_ciphertext, secretAad(r.id));
  } catch (err) {
    secretProblem = err instanceof DecryptError ? err.message : 'cannot decrypt';
  }
  const overlap = r.previous_secret_expires_at && new Date(r.previous_secret_expires_at).getTime() > nowMs;
  return {
    id: r.id,
    projectId: r.project_id,
    ...settingsOf(r),
    publicId: r.public_id,
    url: `${base}/hooks/${r.public_id}`,
    disabledReason: r.disabled_reason,
    /** While the previous secret still verifies (24 h after a rotation): until when. */
    previousSecretValidUntil: overlap ? iso(r.previous_secret_expires_at) : null,
    secretProblem,
    createdBy: r.created_by,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

export async function triggerRow(q: Queryable, projectId: string, triggerId: string, lock = false): Promise<TriggerRow | null> {
  const [row] = await q.query<TriggerRow>(sql`
    select * from triggers where id = ${triggerId} and project_id = ${projectId} ${lock ? sql`for update` : sql``}`);
  return row ?? null;
}

/** The secrets that verify now: the current one, and the previous one within its 24 h. */
export function liveSecrets(r: TriggerRow, key: Buffer, nowMs: number): string[] {
  const secrets = [decryptSecret(key, r.secret_ciphertext, secretAad(r.id))];
  if (r.previous_secret_ciphertext && r.previous_secret_expires_at && new Date(r.previous_secret_expires_at).getTime() > nowMs) {
    secrets.push(decryptSecret(key, r.previous_secret_ciphertext, previousSecretAad(r.id)));
  }
  return secrets;
}

export const encryptTriggerSecret = (key: Buffer, triggerId: string, secret: string) => encryptSecret(key, secret, secretAad(triggerId));
export const encryptPreviousSecret = (key: Buffer, triggerId: string, secret: string) => encryptSecret(key, secret, previousSecretAad(triggerId));

export interface DeliveryRow {
  id: string;
  trigger_id: string;
  delivery_id: string;
  status: DeliveryAnswer['status'];
  reason: string | null;
  reasons: PayloadReason[];
  args: string[] | null;
  run_id: string | null;
  detail: string | null;
  fired_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A delivery log row: the caller's delivery id, the state with its reason(s), and the run it started. */
export const toDelivery = (r: DeliveryRow): DeliveryAnswer => ({
  id: r.id,
  triggerId: r.trigger_id,
  deliveryId: r.delivery_id,
  status: r.status,
  reason: r.reason,
  reasons: r.reasons,
  args: r.args,
  detail: r.detail,
  runId: r.run_id,
  runUrl: r.run_id ? `/api/runs/${r.run_id}` : null,
  firedAt: iso(r.fired_at),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});
