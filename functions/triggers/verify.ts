// Inbound trigger signature (spec: Authentication → Inbound trigger signature; Limits "Trigger …").
//   X-Svc-Timestamp: <unix seconds>   X-Svc-Delivery: <1–64 visible ASCII characters>
//   X-Svc-Signature: sha256=<hex>, hex = HMAC-SHA256(key = the trigger secret's base64url text as UTF-8,
//                                                  message = `<timestamp>.<delivery>.<raw body>`)
// Pure: the caller passes the header values, the raw bytes, the candidate secrets and the clock. The
// digest is computed for EVERY candidate and compared in constant time, so the time taken does not
// depend on which secret matched, if any, nor on how much of a digest did.
import { timingSafeEqual } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { LEGACY_PREFIX, hmacSha256 } from '../webhooks/signature.ts';

/** How far the timestamp may be from the server clock, either side (spec: 5 minutes). */
export const TIMESTAMP_WINDOW_SECONDS = 300;
export const MAX_DELIVERY_ID = 64;

export const TRIGGER_HEADERS = { timestamp: 'X-Svc-Timestamp', delivery: 'X-Svc-Delivery', signature: 'X-Svc-Signature' } as const;
/** The former product's names, accepted until runner version 0.16.0 (spec: Versioning). */
export const LEGACY_TRIGGER_HEADERS = {
  timestamp: `${LEGACY_PREFIX}Timestamp`,
  delivery: `${LEGACY_PREFIX}Delivery`,
  signature: `${LEGACY_PREFIX}Signature`,
} as const;

export interface SignedHeaders {
  timestamp: string | null;
  delivery: string | null;
  signature: string | null;
}

/** Each value under its svc name, or under its legacy name when the svc one is absent. */
export function signedHeaders(headers: Pick<Headers, 'get'>): SignedHeaders {
  const pick = (k: keyof SignedHeaders) => headers.get(TRIGGER_HEADERS[k]) ?? headers.get(LEGACY_TRIGGER_HEADERS[k]);
  return { timestamp: pick('timestamp'), delivery: pick('delivery'), signature: pick('signature') };
}

/**
 * Timestamps are 1–12 digits (no sign, no fraction, no exponent). Delivery ids are 1–64 visible ASCII
 * characters: no spaces, so two headers of the same name (joined as `a, b`) never pass as one id.
 */
const TIMESTAMP = /^\d{1,12}$/;
const DELIVERY = /^[\x21-\x7e]{1,64}$/;
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;

export type Refusal = 'missing' | 'malformed' | 'stale' | 'mismatch';
export type Verdict = { ok: true; delivery: string; timestamp: number; secretIndex: number } | { ok: false; reason: Refusal };

/** The signature header value for a message (the reference signer; docs/examples/sign-trigger.ts is the callers' copy). */
export function triggerSignature(secret: string, timestamp: string | number, delivery: string, body: string | Uint8Array): string {
  return `sha256=${hmacSha256(secret, `${timestamp}.${delivery}.`, body).toString('hex')}`;
}

/** Check the signed headers against the raw body with each candidate secret (all of them, always). */
export function verifyTrigger(h: SignedHeaders, body: Uint8Array, secrets: readonly (string | KeyObject)[], nowMs: number): Verdict {
  if (!h.timestamp || !h.delivery || !h.signature) return { ok: false, reason: 'missing' };
  const sig = SIGNATURE.exec(h.signature);
  if (!TIMESTAMP.test(h.timestamp) || !DELIVERY.test(h.delivery) || !sig) return { ok: false, reason: 'malformed' };
  const timestamp = Number(h.timestamp);
  const stale = Math.abs(Math.floor(nowMs / 1000) - timestamp) > TIMESTAMP_WINDOW_SECONDS;
  const given = Buffer.from(sig[1], 'hex');
  const prefix = `${h.timestamp}.${h.delivery}.`;
  let matched = -1;
  for (let i = 0; i < secrets.length; i++) {
    const expected = hmacSha256(secrets[i], prefix, body);
    if (timingSafeEqual(given, expected) && matched < 0) matched = i;
  }
  // Staleness is decided after the digests, so a stale request costs as much as a fresh one.
  if (stale) return { ok: false, reason: 'stale' };
  if (matched < 0) return { ok: false, reason: 'mismatch' };
  return { ok: true, delivery: h.delivery, timestamp, secretIndex: matched };
}
