// Outbound webhook signature and delivery headers (spec: Events → Delivery headers; Versioning).
//   X-Svc-Signature: t=<unix seconds>,v1=<hex>, hex = HMAC-SHA256(key = secret as UTF-8, `<t>.<raw body>`)
import { createHmac } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { VERSION, legacyNamesLive } from '../../protocol/version.ts';

export { LEGACY_UNTIL, compareVersions } from '../../protocol/version.ts';

export const SIGNATURE_SCHEME = 'v1';

/**
 * The former product prefix of the legacy header names. The spec does not name it; this is the one
 * svc sends (docs/webhooks.md), so receivers written against the old names keep working.
 */
export const LEGACY_PREFIX = 'X-Agent-Fleet-';

/**
 * HMAC-SHA256 keyed with a secret exactly as shown (its text as UTF-8 bytes) over the parts in order.
 * Both signature schemes use it: outbound `<t>.<raw body>` here, inbound triggers
 * `<timestamp>.<delivery>.<raw body>` (functions/triggers/verify.ts).
 */
export function hmacSha256(secret: string | KeyObject, ...parts: (string | Uint8Array)[]): Buffer {
  const hmac = createHmac('sha256', typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret);
  for (const part of parts) hmac.update(part);
  return hmac.digest();
}

export function signature(secret: string, timestamp: number, body: string | Uint8Array): string {
  return `t=${timestamp},${SIGNATURE_SCHEME}=${hmacSha256(secret, `${timestamp}.`, body).toString('hex')}`;
}

/** Legacy names are sent until runner version 0.16.0 (spec: Versioning). */
export const sendsLegacyHeaders = (version = VERSION) => legacyNamesLive(version);

export interface DeliveryHeaderInput {
  eventType: string;
  deliveryId: string;
  secret: string;
  /** Unix seconds of the signature. */
  timestamp: number;
  body: string;
  version?: string;
}

/** Every header of one attempt, the legacy names included while they are still sent. */
export function deliveryHeaders(h: DeliveryHeaderInput): Record<string, string> {
  const values: Record<string, string> = {
    Event: h.eventType,
    Delivery: h.deliveryId,
    Signature: signature(h.secret, h.timestamp, h.body),
  };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': `svc-webhooks/${h.version ?? VERSION}`,
  };
  for (const [name, value] of Object.entries(values)) {
    headers[`X-Svc-${name}`] = value;
    if (sendsLegacyHeaders(h.version)) headers[`${LEGACY_PREFIX}${name}`] = value;
  }
  return headers;
}
