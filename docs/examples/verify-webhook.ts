// Receiver side: verify an svc webhook delivery before trusting it (docs/webhooks.md).
// Copy this file into your receiver; it needs only Node's crypto module. The test suite imports this
// very file (test/webhooks/verifier.test.ts) and checks it against real deliveries.
//
//   X-Svc-Signature: t=<unix seconds>,v1=<hex>
//   hex = HMAC-SHA256(key = the webhook secret exactly as shown, as UTF-8; message = `<t>.<raw body>`)
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface VerifyOptions {
  /** How far `t` may be from the receiver's clock, in seconds. The reference verifier uses 300. */
  toleranceSeconds?: number;
  /** The receiver's clock in Unix seconds (tests pass a fixed time). */
  now?: number;
}

export type Verdict = { ok: true; timestamp: number } | { ok: false; reason: 'missing' | 'malformed' | 'stale' | 'mismatch' };

/**
 * Check the signature header against the RAW request body — the exact bytes received, before any JSON
 * parsing (re-serialized JSON would not match). Only when this says ok, parse the body.
 */
export function verifyWebhook(rawBody: string | Uint8Array, signatureHeader: string | null | undefined, secret: string, opts: VerifyOptions = {}): Verdict {
  if (!signatureHeader) return { ok: false, reason: 'missing' };
  let timestamp: number | null = null;
  const candidates: Buffer[] = [];
  for (const part of signatureHeader.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) candidates.push(Buffer.from(value, 'hex'));
  }
  if (timestamp === null || candidates.length === 0) return { ok: false, reason: 'malformed' };
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (opts.toleranceSeconds ?? 300)) return { ok: false, reason: 'stale' };
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.`).update(rawBody).digest();
  // Constant time: every candidate is compared in full, whatever the first one gave.
  let match = false;
  for (const candidate of candidates) match = timingSafeEqual(candidate, expected) || match;
  return match ? { ok: true, timestamp } : { ok: false, reason: 'mismatch' };
}
