// An outbound JSON request through the outbound address guard (spec: Limits → Outbound address guard):
// the URL is checked (guard.ts checkTarget, with the webhooks' allowlist), then sent to the checked
// address with send.ts (pinned lookup, one deadline, no redirects). Webhook deliveries use the two
// parts directly (worker.ts, which signs between them); the GitHub App calls of functions/codehost/
// use this. Like an attempt, it never throws for the other side's fault: every failure is a result.
import type https from 'node:https';
import { checkTargetWithin, systemResolver } from './guard.ts';
import type { Allowlist, Resolver } from './guard.ts';
import { ATTEMPT_TIMEOUT_MS, send } from './send.ts';

/** JSON answers can be larger than a webhook receiver's 2 KB: read up to 1 MB. */
export const MAX_JSON_ANSWER = 1024 * 1024;

export interface JsonRequest {
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Sent as JSON when given. */
  json?: unknown;
  allowlist: Allowlist;
  resolve?: Resolver;
  timeoutMs?: number;
  tls?: https.RequestOptions;
}

export type JsonAnswer =
  /** The other side answered; `json` is its body parsed, or null when it was empty or not JSON. */
  | { ok: true; status: number; json: unknown }
  /** No answer: refused by the guard (blocked_address, dns_error, invalid_url) or a transport error. */
  | { ok: false; error: string; detail: string };

export async function requestJson(r: JsonRequest): Promise<JsonAnswer> {
  const timeoutMs = r.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const started = performance.now();
  const target = await checkTargetWithin(r.url, r.allowlist, r.resolve ?? systemResolver, timeoutMs);
  if (!target.ok) return { ok: false, error: target.error, detail: target.detail };
  const body = r.json === undefined ? undefined : JSON.stringify(r.json);
  const res = await send({
    url: r.url,
    address: target.address,
    family: target.family,
    method: r.method,
    headers: { ...r.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body,
    maxBody: MAX_JSON_ANSWER,
    timeoutMs: Math.max(1, timeoutMs - Math.round(performance.now() - started)),
    tls: r.tls,
  });
  if (res.error || res.status === null) return { ok: false, error: res.error ?? 'connection_error', detail: res.detail ?? 'no answer' };
  let json: unknown = null;
  try {
    json = res.body ? JSON.parse(res.body) : null;
  } catch {}
  return { ok: true, status: res.status, json };
}
