// Caller side: sign and send a POST to an svc inbound trigger (docs/triggers.md).
// Copy this file into your caller; it needs only Node's crypto module and fetch (Node 18+). The test
// suite imports this very file (test/triggers/*.test.ts) and signs every request with it.
//
//   X-Svc-Timestamp: <unix seconds>      X-Svc-Delivery: <your unique id, 1–64 visible ASCII characters>
//   X-Svc-Signature: sha256=<hex>, hex = HMAC-SHA256(key = the trigger secret exactly as shown, as UTF-8;
//                                                  message = `<timestamp>.<delivery>.<raw body>`)
import { createHmac, randomUUID } from 'node:crypto';

export interface SignOptions {
  /** Your id for this delivery; a retry of the same delivery reuses it. Default: a random UUID. */
  delivery?: string;
  /** Unix seconds; default now. The server accepts 300 seconds either side of its clock. */
  timestamp?: number;
}

/** The three headers for one delivery of exactly these body bytes. */
export function signTrigger(secret: string, rawBody: string | Uint8Array, opts: SignOptions = {}): Record<string, string> {
  const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const delivery = opts.delivery ?? randomUUID();
  const hex = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.${delivery}.`).update(rawBody).digest('hex');
  return { 'X-Svc-Timestamp': timestamp, 'X-Svc-Delivery': delivery, 'X-Svc-Signature': `sha256=${hex}` };
}

/** POST a JSON object to the trigger URL; 202 means recorded (the run starts after the answer). */
export async function sendTrigger(url: string, secret: string, payload: Record<string, unknown>, opts: SignOptions = {}): Promise<Response> {
  const body = JSON.stringify(payload); // sign the exact bytes you send
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...signTrigger(secret, body, opts) }, body });
}
