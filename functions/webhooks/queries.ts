// The webhooks admin API's statements (functions/webhooks/routes.ts reads as validate → call → present).
// Rows are webhooks (kind 'webhook'; chat webhooks are notifications/), outbound_deliveries,
// outbound_attempts and webhook_allowlist (sql/0004_webhooks.sql). What the worker shares with the
// routes (row lookup, redeliver, resume, Send test, wake) stays in webhooks.ts.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { CHANNEL } from './capture.ts';
import type { AttemptRow, DeliveryRow, WebhookRow } from './webhooks.ts';

/** The ids of `ids` that name a project. */
export async function existingProjects(q: Queryable, ids: string[]): Promise<Set<string>> {
  return new Set((await q.query<{ id: string }>(sql`select id from projects where id = any(${ids})`)).map((r) => r.id));
}

export async function allowlistRow(q: Queryable): Promise<{ entries: string[]; updated_at: Date }> {
  const [row] = await q.query<{ entries: string[]; updated_at: Date }>(sql`select entries, updated_at from webhook_allowlist where id = 1`);
  return row;
}

/** Replaces the allowlist and tells every worker to read it again. */
export async function saveAllowlist(q: Queryable, entries: string[], userId: string): Promise<void> {
  await q.query(sql`update webhook_allowlist set entries = ${sql.json(entries)}, updated_by = ${userId}, updated_at = now() where id = 1`);
  await q.query(sql`select pg_notify(${CHANNEL}, 'allowlist')`);
}

export const listWebhooks = (q: Queryable) => q.query<WebhookRow>(sql`select * from webhooks where kind = 'webhook' order by created_at, id`);

export async function insertWebhook(q: Queryable, w: { id: string; url: string; events: string[]; projects: string[]; secretCiphertext: string; createdBy: string }): Promise<void> {
  await q.query(sql`
    insert into webhooks (id, url, events, projects, secret_ciphertext, created_by)
    values (${w.id}, ${w.url}, ${sql.json(w.events)}, ${sql.json(w.projects)},
            ${w.secretCiphertext}, ${w.createdBy})`);
}

export async function updateWebhook(q: Queryable, id: string, w: { url: string; events: string[]; projects: string[] }): Promise<void> {
  await q.query(sql`
    update webhooks set url = ${w.url}, events = ${sql.json(w.events)},
           projects = ${sql.json(w.projects)}, updated_at = now()
     where id = ${id}`);
}

/** Deletes a webhook and its delivery log; false when there is no such webhook. */
export async function deleteWebhook(q: Queryable, id: string): Promise<boolean> {
  const [gone] = await q.query(sql`delete from webhooks where id = ${id} and kind = 'webhook' returning 1`);
  if (!gone) return false;
  await q.query(sql`delete from outbound_deliveries where webhook_id = ${id}`);
  return true;
}

/** A new signing secret; false when there is no such webhook. */
export async function rotateWebhookSecret(q: Queryable, id: string, secretCiphertext: string): Promise<boolean> {
  const [updated] = await q.query(sql`
    update webhooks set secret_ciphertext = ${secretCiphertext}, updated_at = now()
     where id = ${id} and kind = 'webhook' returning id`);
  return Boolean(updated);
}

/** A webhook's delivery log (30 days), newest first. */
export const listDeliveries = (q: Queryable, webhookId: string, f: { status?: string; before?: string; limit: number }) =>
  q.query<DeliveryRow>(sql`
    select * from outbound_deliveries
     where webhook_id = ${webhookId} and created_at >= now() - interval '30 days'
       and (${f.status ?? null}::text is null or status = ${f.status ?? null})
       and (${f.before ?? null}::timestamptz is null or created_at < ${f.before ?? null}::timestamptz)
     order by created_at desc, id desc limit ${f.limit}`);

/** One delivery of this webhook with the envelope sent. */
export async function deliveryRow(q: Queryable, webhookId: string, deliveryId: string): Promise<(DeliveryRow & { body: string | null }) | null> {
  const [row] = await q.query<DeliveryRow & { body: string | null }>(sql`
    select * from outbound_deliveries where id = ${deliveryId} and webhook_id = ${webhookId}`);
  return row ?? null;
}

export async function deliveryExists(q: Queryable, webhookId: string, deliveryId: string): Promise<boolean> {
  const [exists] = await q.query(sql`select 1 from outbound_deliveries where id = ${deliveryId} and webhook_id = ${webhookId}`);
  return Boolean(exists);
}

export const deliveryAttempts = (q: Queryable, deliveryId: string) =>
  q.query<AttemptRow>(sql`select * from outbound_attempts where delivery_id = ${deliveryId} order by attempt`);
