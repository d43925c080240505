// Outbound webhooks as stored (spec: Resources → Outbound webhook, Outbound delivery record): the
// shapes the admin API returns (protocol/api/webhooks.ts) and the few queries the routes and the worker
// share (the admin API's own statements: queries.ts).
import { randomUUID } from 'node:crypto';
import { storeEvents } from '../event-list/store.ts';
import { DecryptError, decryptSecret, encryptSecret, randomToken } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { AttemptAnswer, DeliveryAnswer, WebhookAnswer } from '../../protocol/api/webhooks.ts';
import { CHANNEL } from './capture.ts';
import { CIRCUIT_LABEL, CIRCUIT_PAUSE_MS } from './circuit.ts';
import type { CircuitState } from './circuit.ts';
import { buildEnvelope } from './envelope.ts';

export const secretAad = (webhookId: string) => `webhook_secret:${webhookId}`;

/** A new signing secret: 32 random bytes as base64url text; the HMAC key is this text as UTF-8. */
export const newSecret = () => randomToken(32);
export const encryptWebhookSecret = (key: Buffer, webhookId: string, secret: string) => encryptSecret(key, secret, secretAad(webhookId));

export interface WebhookRow {
  id: string;
  url: string;
  events: string[];
  projects: string[];
  secret_ciphertext: string;
  circuit_state: CircuitState;
  consecutive_failures: number;
  circuit_opened_at: Date | null;
  trial_delivery_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The API's view of a webhook (protocol/api/webhooks.ts). */
export function toWebhook(r: WebhookRow, key: Buffer | null): WebhookAnswer {
  let secretProblem: string | null = null;
  try {
    decryptSecret(key, r.secret_ciphertext, secretAad(r.id));
  } catch (err) {
    secretProblem = err instanceof DecryptError ? err.message : 'cannot decrypt';
  }
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    projects: r.projects,
    circuit: r.circuit_state,
    circuitLabel: CIRCUIT_LABEL[r.circuit_state],
    consecutiveFailures: r.consecutive_failures,
    /** While open: when the pause ends and one delivery is tried again. */
    pausedUntil: r.circuit_state === 'open' && r.circuit_opened_at ? iso(new Date(new Date(r.circuit_opened_at).getTime() + CIRCUIT_PAUSE_MS)) : null,
    secretProblem,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

export async function webhookRow(q: Queryable, id: string): Promise<WebhookRow | null> {
  const [row] = await q.query<WebhookRow>(sql`select * from webhooks where id = ${id} and kind = 'webhook'`);
  return row ?? null;
}

export async function loadAllowlist(q: Queryable): Promise<string[]> {
  const [row] = await q.query<{ entries: string[] }>(sql`select entries from webhook_allowlist where id = 1`);
  return row?.entries ?? [];
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_id: string | null;
  event_type: string;
  status: DeliveryAnswer['status'];
  attempts: number;
  attempts_allowed: number;
  next_attempt_at: Date | null;
  response_code: number | null;
  response_body: string | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A delivery log row (spec: event, status, attempts, next attempt, response code, response body). */
export const toDelivery = (r: DeliveryRow): DeliveryAnswer => ({
  id: r.id,
  webhookId: r.webhook_id,
  event: r.event_type,
  eventId: r.event_id,
  status: r.status,
  attempts: r.attempts,
  attemptsAllowed: r.attempts_allowed,
  nextAttemptAt: r.status === 'pending' ? iso(r.next_attempt_at) : null,
  responseCode: r.response_code,
  responseBody: r.response_body,
  lastError: r.last_error,
  deliveredAt: iso(r.delivered_at),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});

export interface AttemptRow {
  attempt: number;
  owner: string;
  started_at: Date;
  finished_at: Date | null;
  outcome: string | null;
  error: string | null;
  detail: string | null;
  response_code: number | null;
  response_body: string | null;
  address: string | null;
  duration_ms: number | null;
  trial: boolean;
}

export const toAttempt = (a: AttemptRow): AttemptAnswer => ({
  attempt: a.attempt,
  startedAt: iso(a.started_at),
  finishedAt: iso(a.finished_at),
  outcome: a.outcome,
  error: a.error,
  detail: a.detail,
  responseCode: a.response_code,
  responseBody: a.response_body,
  address: a.address,
  durationMs: a.duration_ms,
  trial: a.trial,
});

/**
 * Send test: one `webhook.test` delivery to this webhook only, whatever its events. The envelope's id
 * is `test_<delivery id>` and its project null (spec: Envelope).
 */
export async function createTestDelivery(q: Queryable, webhookId: string, now: Date): Promise<{ deliveryId: string; eventId: string }> {
  const deliveryId = randomUUID();
  const envelope = buildEnvelope({
    id: `test_${deliveryId}`,
    type: 'webhook.test',
    ts: now,
    project: null,
    raw: { data: { message: 'This is a test delivery from svc. If you can read it, the webhook works.' } },
  });
  const body = JSON.stringify(envelope);
  await q.query(sql`
    insert into outbound_deliveries (id, webhook_id, event_id, event_type, body, status, next_attempt_at)
    values (${deliveryId}, ${webhookId}, ${envelope.id}, 'webhook.test', ${body}, 'pending', ${now})`);
  await storeEvents(q, [{ envelope, body }]); // in the list too (no project: instance admins see it)
  await wake(q);
  return { deliveryId, eventId: envelope.id };
}

/** Tell the workers there is something to do now. */
export const wake = (q: Queryable) => q.query(sql`select pg_notify(${CHANNEL}, 'due')`);

/** Redeliver (spec: failed → pending, one more attempt). Null when there is no such failed delivery. */
export async function redeliver(q: Queryable, webhookId: string, deliveryId: string, now: Date): Promise<DeliveryRow | null> {
  const [row] = await q.query<DeliveryRow>(sql`
    update outbound_deliveries
       set status = 'pending', attempts_allowed = attempts + 1, next_attempt_at = ${now}, updated_at = now()
     where id = ${deliveryId} and webhook_id = ${webhookId} and status = 'failed'
    returning *`);
  return row ?? null;
}

/** Resume deliveries (spec: admin action → closed, whatever the state). Returns the state before. */
export async function resumeCircuit(q: Queryable, webhookId: string, kinds: string[] = ['webhook']): Promise<CircuitState | null> {
  const [row] = await q.query<{ before: CircuitState }>(sql`
    update webhooks w set circuit_state = 'closed', consecutive_failures = 0, circuit_opened_at = null, trial_delivery_id = null, updated_at = now()
      from (select id, circuit_state as before from webhooks where id = ${webhookId} and kind in (select jsonb_array_elements_text(${sql.json(kinds)})) for update) old
     where w.id = old.id
    returning old.before`);
  return row?.before ?? null;
}
