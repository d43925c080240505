// The triggers admin API's statements (functions/triggers/routes.ts reads as validate → call → present).
// Rows are triggers and inbound_deliveries (sql/0009_triggers.sql); the hook's accept statement and the
// firer's claims stay in hook.ts and fire.ts, the row lookup they share in triggers.ts.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { TriggerSettings } from './schema.ts';
import type { DeliveryRow, TriggerRow } from './triggers.ts';

export const listTriggers = (q: Queryable, projectId: string) =>
  q.query<TriggerRow>(sql`select * from triggers where project_id = ${projectId} order by created_at, id`);

/** Each trigger's newest delivery of the last 30 days (the log's window). */
export const lastDeliveries = (q: Queryable, projectId: string) =>
  q.query<DeliveryRow>(sql`
    select distinct on (d.trigger_id) d.* from inbound_deliveries d join triggers t on t.id = d.trigger_id
     where t.project_id = ${projectId} and d.created_at >= now() - interval '30 days'
     order by d.trigger_id, d.created_at desc, d.id desc`);

export async function insertTrigger(
  q: Queryable,
  t: { id: string; projectId: string; publicId: string; publicIdHash: string; secretCiphertext: string; createdBy: string } & TriggerSettings,
): Promise<void> {
  await q.query(sql`
    insert into triggers (id, project_id, name, action, skill, args, profile, model, output, allowed_paths, value_pattern,
                          public_id, public_id_hash, secret_ciphertext, enabled, created_by,
                          target, target_tags, queue_timeout_minutes, retry_on_runner_loss, cap_usd)
    values (${t.id}, ${t.projectId}, ${t.name}, ${t.action}, ${t.skill}, ${sql.json(t.args)}, ${t.profile}, ${t.model},
            ${t.output}, ${sql.json(t.allowedPaths)}, ${t.valuePattern}, ${t.publicId}, ${t.publicIdHash},
            ${t.secretCiphertext}, ${t.enabled}, ${t.createdBy},
            ${t.target}, ${sql.json(t.targetTags)}, ${t.queueTimeoutMinutes}, ${t.retryOnRunnerLoss}, ${t.capUSD})`);
}

/** Saves a trigger's settings; turning it on clears the reason it was turned off. */
export async function updateTrigger(q: Queryable, triggerId: string, s: TriggerSettings): Promise<void> {
  await q.query(sql`
    update triggers set name = ${s.name}, action = ${s.action}, skill = ${s.skill}, args = ${sql.json(s.args)}, profile = ${s.profile},
           model = ${s.model}, output = ${s.output}, allowed_paths = ${sql.json(s.allowedPaths)}, value_pattern = ${s.valuePattern},
           enabled = ${s.enabled}, target = ${s.target}, target_tags = ${sql.json(s.targetTags)},
           queue_timeout_minutes = ${s.queueTimeoutMinutes}, retry_on_runner_loss = ${s.retryOnRunnerLoss}, cap_usd = ${s.capUSD}, disabled_reason = case when ${s.enabled} then null else disabled_reason end, updated_at = now()
     where id = ${triggerId}`);
}

/** On or off by hand: an admin's choice clears a reason the trigger gave itself. */
export async function setTriggerEnabled(q: Queryable, triggerId: string, enabled: boolean): Promise<void> {
  await q.query(sql`update triggers set enabled = ${enabled}, disabled_reason = null, updated_at = now() where id = ${triggerId}`);
}

/** A new secret; the previous one (null: none) verifies until `until`. */
export async function rotateTriggerSecret(q: Queryable, triggerId: string, s: { secretCiphertext: string; previousCiphertext: string | null; until: Date | null }): Promise<void> {
  await q.query(sql`
    update triggers set secret_ciphertext = ${s.secretCiphertext},
           previous_secret_ciphertext = ${s.previousCiphertext},
           previous_secret_expires_at = ${s.until}, updated_at = now()
     where id = ${triggerId}`);
}

/** Deletes a trigger and, by cascade, its rate row and delivery log. */
export async function deleteTrigger(q: Queryable, triggerId: string): Promise<void> {
  // The rows the delete cascades to are locked first, in the order the other writers lock them,
  // so none of them deadlocks with it (a deadlock aborts one side: a 500 here, or a lost claim):
  // the hook's accept statement locks the rate row before it inserts deliveries, and the firer
  // holds claimed deliveries (it skips locked ones) while it waits for the trigger row.
  await q.query(sql`select 1 from trigger_rate where trigger_id = ${triggerId} for update`);
  await q.query(sql`select 1 from inbound_deliveries where trigger_id = ${triggerId} order by created_at, id for update`);
  await q.query(sql`delete from triggers where id = ${triggerId}`);
}

/** One page and one more row of a trigger's delivery log (30 days), newest first. */
export const listDeliveries = (q: Queryable, triggerId: string, f: { status?: string; before?: string; limit: number }) =>
  q.query<DeliveryRow>(sql`
    select * from inbound_deliveries d
     where d.trigger_id = ${triggerId} and d.created_at >= now() - interval '30 days'
       and (${f.status ?? null}::text is null or d.status = ${f.status ?? null})
       and (${f.before ?? null}::text is null
            or (d.created_at, d.id) < (select created_at, id from inbound_deliveries where id = ${f.before ?? null} and trigger_id = ${triggerId}))
     order by d.created_at desc, d.id desc limit ${f.limit + 1}`);
