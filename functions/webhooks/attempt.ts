// One delivery attempt of the webhook worker (worker.ts): the address guard, the signature and the POST.
// Its result is the attempt's recorded outcome; a receiver's fault never throws.
import type https from 'node:https';
import type { Clock } from '../lib/clock.ts';
import type { Keys } from '../lib/context.ts';
import { DecryptError, decryptSecret } from '../lib/crypto.ts';
import { CHAT_HEADERS, chatUrl } from './chat.ts';
import type { ChannelKind } from './chat.ts';
import { checkTargetWithin, systemResolver } from './guard.ts';
import type { Allowlist, Resolver } from './guard.ts';
import type { Outcome } from './outcomes.ts';
import { send } from './send.ts';
import { deliveryHeaders } from './signature.ts';
import { secretAad } from './webhooks.ts';

/** What an attempt needs of its delivery. */
export interface Attemptable {
  id: string;
  webhook_id: string;
  event_type: string;
  body: string;
  url: string;
  secret_ciphertext: string;
  /** 'webhook' (the default), or a chat channel. */
  kind?: ChannelKind;
}

export interface AttemptOptions {
  keys: Pick<Keys, 'encryption'>;
  clock: Clock;
  timeoutMs: number;
  resolve?: Resolver;
  tls?: https.RequestOptions;
}

/** Guard, sign, send: the outcome of one attempt. Never throws for a receiver's fault. */
export async function attempt(d: Attemptable, allowlist: Allowlist, opts: AttemptOptions, signal?: AbortSignal): Promise<Outcome> {
  const fail = (error: string, detail: string): Outcome => ({ ok: false, error, detail, status: null, body: null, address: null, ms: 0 });
  let secret: string;
  try {
    secret = decryptSecret(opts.keys.encryption, d.secret_ciphertext, secretAad(d.webhook_id));
  } catch (err) {
    return fail('secret_unavailable', err instanceof DecryptError ? err.message : 'cannot decrypt the webhook secret');
  }
  const kind = d.kind ?? 'webhook';
  // A chat channel's URL carries its credential (chat.ts): it is never logged or recorded.
  let url: URL;
  try {
    url = kind === 'webhook' ? new URL(d.url) : chatUrl(kind, d.url, secret);
  } catch {
    return fail('invalid_url', 'the stored address is not a valid URL');
  }
  const started = performance.now();
  const target = await checkTargetWithin(url, allowlist, opts.resolve ?? systemResolver, opts.timeoutMs);
  if (!target.ok) return fail(target.error, target.detail);
  const timestamp = Math.floor(opts.clock.now() / 1000);
  const headers = kind === 'webhook' ? deliveryHeaders({ eventType: d.event_type, deliveryId: d.id, secret, timestamp, body: d.body }) : CHAT_HEADERS;
  const res = await send({
    url,
    address: target.address,
    family: target.family,
    headers,
    body: d.body,
    timeoutMs: Math.max(1, opts.timeoutMs - Math.round(performance.now() - started)),
    signal,
    tls: opts.tls,
  });
  const base = { status: res.status, body: res.body, address: target.address, ms: res.ms };
  if (res.error) return { ...base, ok: false, error: res.error, detail: res.detail };
  const status = res.status!;
  if (status >= 200 && status < 300) return { ...base, ok: true, error: null, detail: null };
  if (status >= 300 && status < 400) return { ...base, ok: false, error: 'redirect', detail: `answered ${status}; redirects are not followed` };
  return { ...base, ok: false, error: 'http_status', detail: `answered ${status}` };
}
