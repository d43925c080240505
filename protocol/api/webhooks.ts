// Answers of the outbound webhooks admin API (spec: Admin management of triggers and webhooks): the
// shapes functions/webhooks/routes.ts sends (declared in its `responses`, so the OpenAPI document shows
// them and CHECK_ANSWERS holds the handlers to them) and web-static/pages/integrations.ts and start.ts
// read (type imports only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { circuitState, maybe, stamps } from './common.ts';

const count = z.number().int();

/** A webhook with its circuit state; never its secret. */
export const webhookAnswer = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  projects: z.array(z.string()),
  ...circuitState,
  pausedUntil: maybe.describe('While open: when the pause ends and one delivery is tried again'),
  secretProblem: maybe,
  ...stamps,
});
export type WebhookAnswer = z.output<typeof webhookAnswer>;

export const webhookList = z.object({ webhooks: z.array(webhookAnswer) });
export type WebhookList = z.output<typeof webhookList>;

/** Create and rotate: the webhook and its new signing secret, in this answer only. */
export const webhookWithSecret = webhookAnswer.extend({ secret: z.string() });
export type WebhookWithSecret = z.output<typeof webhookWithSecret>;

/** A delivery log row (spec: event, status, attempts, next attempt, response code, response body). */
export const deliveryAnswer = z.object({
  id: z.string(), webhookId: z.string(),
  event: z.string(),
  eventId: maybe,
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: count,
  attemptsAllowed: count,
  nextAttemptAt: maybe,
  responseCode: count.nullable(),
  responseBody: maybe,
  lastError: maybe,
  deliveredAt: maybe,
  ...stamps,
});
export type DeliveryAnswer = z.output<typeof deliveryAnswer>;

export const deliveryList = z.object({ deliveries: z.array(deliveryAnswer) });
export type DeliveryList = z.output<typeof deliveryList>;

/** One attempt at a delivery: when, its outcome, the receiver's answer, the address used. */
export const attemptAnswer = z.object({
  attempt: count,
  startedAt: maybe,
  finishedAt: maybe,
  outcome: maybe,
  error: maybe,
  detail: maybe,
  responseCode: count.nullable(),
  responseBody: maybe,
  address: maybe,
  durationMs: z.number().nullable(),
  trial: z.boolean(),
});
export type AttemptAnswer = z.output<typeof attemptAnswer>;

/** One delivery with the envelope sent (null when not kept) and every attempt. */
export const deliveryDetail = deliveryAnswer.extend({ envelope: z.unknown(), attemptLog: z.array(attemptAnswer) });
export type DeliveryDetail = z.output<typeof deliveryDetail>;

/** Send test: the delivery queued and its envelope id (test_<delivery id>). */
export const testDelivery = z.object({ deliveryId: z.string(), eventId: z.string() });
export type TestDelivery = z.output<typeof testDelivery>;

/** Recover failed deliveries: how many were queued for a new series of attempts. */
export const recoverAnswer = z.object({ queued: count });
export type RecoverAnswer = z.output<typeof recoverAnswer>;

export const catalogueAnswer = z.object({
  events: z.array(z.object({ type: z.string(), description: z.string(), subscribable: z.boolean(), data: z.array(z.string()) })),
});
export type CatalogueAnswer = z.output<typeof catalogueAnswer>;

/** The address allowlist: as typed (one per line) and as entries. */
export const allowlistAnswer = z.object({ allowlist: z.string(), entries: z.array(z.string()), updatedAt: z.string() });
export type AllowlistAnswer = z.output<typeof allowlistAnswer>;
