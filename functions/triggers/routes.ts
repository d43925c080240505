// Admin API of inbound triggers (spec: Admin management of triggers and webhooks; docs/triggers.md):
// create (secret shown once), list, get, edit, enable/disable, rotate (the previous secret verifies 24 h
// more), dry run (fires and records nothing), delivery log, delete. Project admins of the trigger's
// project (instance admins everywhere); a trigger is found only through its own project's path. Every
// change writes an audit record; anything that stores a secret answers 409 encryption_key_missing
// without APP_ENCRYPTION_KEY. The caller's endpoint, POST /hooks/<publicId>, is in hook.ts.
import { randomUUID } from 'node:crypto';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { DecryptError } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { publicBase } from '../lib/urls.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { refusedPayload, routes as hookRoutes } from './hook.ts';
import { startVerdict } from './dry-run.ts';
import { payloadReasons, renderArgs } from '../../protocol/placeholders.ts';
import { deliveryQuery, dryRunBody, projectParams, settle, triggerCreate, triggerParams, triggerPatch } from './schema.ts';
import type { TriggerSettings } from './schema.ts';
import {
  ROTATION_OVERLAP_MS,
  encryptPreviousSecret,
  encryptTriggerSecret,
  liveSecrets,
  newPublicId,
  newSecret,
  publicIdHash,
  settingsOf,
  toDelivery,
  toTrigger,
  triggerRow,
} from './triggers.ts';
import type { DeliveryRow, TriggerRow } from './triggers.ts';

const ADMIN = { projectRole: 'admin', param: 'projectId' } as const;
const TAG = 'triggers';
type Params = { projectId: string; triggerId: string };

async function getRow(q: Queryable, p: Params, lock = false): Promise<TriggerRow> {
  const row = await triggerRow(q, p.projectId, p.triggerId, lock);
  if (!row) throw notFound('no such trigger');
  return row;
}


/** A change to a trigger row: this process's hook cache forgets it once the change is done, committed or not (triggers/cache.ts). */
async function changing<T>(ctx: AppContext, triggerId: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } finally {
    ctx.triggers?.invalidate(triggerId);
  }
}

const view = (ctx: AppContext, request: Request) => (r: TriggerRow) => toTrigger(r, publicBase(ctx.config, request), ctx.keys.encryption, ctx.clock.now());

async function saveSettings(tx: Queryable, triggerId: string, s: TriggerSettings): Promise<void> {
  await tx.query(sql`
    update triggers set name = ${s.name}, action = ${s.action}, skill = ${s.skill}, args = ${sql.json(s.args)}, profile = ${s.profile},
           model = ${s.model}, output = ${s.output}, allowed_paths = ${sql.json(s.allowedPaths)}, value_pattern = ${s.valuePattern},
           enabled = ${s.enabled}, disabled_reason = case when ${s.enabled} then null else disabled_reason end, updated_at = now()
     where id = ${triggerId}`);
}

/** Enable or disable by hand (an admin's choice clears a reason the trigger gave itself). */
function toggle(enabled: boolean): Route {
  return route({
    method: 'POST',
    path: `/api/projects/:projectId/triggers/:triggerId/${enabled ? 'enable' : 'disable'}`,
    summary: enabled ? 'Enable a trigger: its URL answers again' : 'Disable a trigger: its URL answers 404 like an unknown one',
    tag: TAG,
    access: ADMIN,
    params: triggerParams,
    async handler({ principal, params, requestId, request }, ctx) {
      const row = await changing(ctx, params.triggerId, audited(ctx.db, { actor: principal!, action: `trigger.${enabled ? 'enable' : 'disable'}`, target: { type: 'trigger', id: params.triggerId }, requestId }, async (tx) => {
        await getRow(tx, params);
        await tx.query(sql`update triggers set enabled = ${enabled}, disabled_reason = null, updated_at = now() where id = ${params.triggerId}`);
        return getRow(tx, params);
      }));
      return json(view(ctx, request)(row));
    },
  });
}

const auditDiff = (s: TriggerSettings) => ({ ...s });

function decryptOrNull(read: () => string): string | null {
  try {
    return read();
  } catch (err) {
    if (err instanceof DecryptError) return null;
    throw err;
  }
}

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/projects/:projectId/triggers',
    summary: "The project's inbound triggers (never their secrets), each with its last delivery",
    tag: TAG,
    access: ADMIN,
    params: projectParams,
    async handler({ params, request }, ctx) {
      const rows = await ctx.db.query<TriggerRow>(sql`select * from triggers where project_id = ${params.projectId} order by created_at, id`);
      const last = await ctx.db.query<DeliveryRow>(sql`
        select distinct on (d.trigger_id) d.* from inbound_deliveries d join triggers t on t.id = d.trigger_id
         where t.project_id = ${params.projectId} and d.created_at >= now() - interval '30 days'
         order by d.trigger_id, d.created_at desc, d.id desc`);
      const lastOf = new Map(last.map((d) => [d.trigger_id, toDelivery(d)]));
      return json({ triggers: rows.map((r) => ({ ...view(ctx, request)(r), lastDelivery: lastOf.get(r.id) ?? null })) });
    },
  }),
  route({
    method: 'POST',
    path: '/api/projects/:projectId/triggers',
    summary: 'Create an inbound trigger; its secret is in this answer only',
    tag: TAG,
    access: ADMIN,
    status: 201,
    params: projectParams,
    body: triggerCreate,
    async handler({ principal, params, body, requestId, request }, ctx) {
      const key = requireEncryptionKey(ctx);
      const { skill = null, profile = null, model = null, ...rest } = body;
      const given = { ...rest, skill, profile, model };
      const s = settle(given, given);
      const triggerId = randomUUID();
      const publicId = newPublicId();
      const secret = newSecret();
      const row = await audited(
        ctx.db,
        (r: TriggerRow) => ({ actor: principal!, action: 'trigger.create', target: { type: 'trigger', id: r.id }, diff: { projectId: r.project_id, after: auditDiff(s) }, requestId }),
        async (tx) => {
          await tx.query(sql`
            insert into triggers (id, project_id, name, action, skill, args, profile, model, output, allowed_paths, value_pattern,
                                  public_id, public_id_hash, secret_ciphertext, enabled, created_by)
            values (${triggerId}, ${params.projectId}, ${s.name}, ${s.action}, ${s.skill}, ${sql.json(s.args)}, ${s.profile}, ${s.model},
                    ${s.output}, ${sql.json(s.allowedPaths)}, ${s.valuePattern}, ${publicId}, ${publicIdHash(publicId)},
                    ${encryptTriggerSecret(key, triggerId, secret)}, ${s.enabled}, ${principal!.user.id})`);
          return getRow(tx, { projectId: params.projectId, triggerId });
        },
      );
      return json({ trigger: view(ctx, request)(row), secret }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({
    method: 'GET',
    path: '/api/projects/:projectId/triggers/:triggerId',
    summary: 'One trigger with its URL (never its secret)',
    tag: TAG,
    access: ADMIN,
    params: triggerParams,
    handler: async ({ params, request }, ctx) => json(view(ctx, request)(await getRow(ctx.db, params))),
  }),
  route({
    method: 'PATCH',
    path: '/api/projects/:projectId/triggers/:triggerId',
    summary: 'Edit a trigger (its project is fixed): name, action, skill, args, profile, model, output, allowed paths, value pattern, enabled',
    tag: TAG,
    access: ADMIN,
    params: triggerParams,
    body: triggerPatch,
    async handler({ principal, params, body, requestId, request }, ctx) {
      const { after } = await changing(ctx, params.triggerId, audited(
        ctx.db,
        (r: { before: TriggerRow; after: TriggerRow }) => ({ actor: principal!, action: 'trigger.update', target: { type: 'trigger', id: params.triggerId }, diff: { before: auditDiff(settingsOf(r.before)), after: auditDiff(settingsOf(r.after)) }, requestId }),
        async (tx) => {
          const before = await getRow(tx, params, true);
          const given = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as Partial<TriggerSettings>;
          await saveSettings(tx, params.triggerId, settle({ ...settingsOf(before), ...given }, given));
          return { before, after: await getRow(tx, params) };
        },
      ));
      return json(view(ctx, request)(after));
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/projects/:projectId/triggers/:triggerId',
    summary: 'Delete a trigger and its delivery log; its URL answers 404 from now on',
    tag: TAG,
    access: ADMIN,
    status: 204,
    params: triggerParams,
    async handler({ principal, params, requestId }, ctx) {
      await changing(ctx, params.triggerId, audited(ctx.db, (r: TriggerRow) => ({ actor: principal!, action: 'trigger.delete', target: { type: 'trigger', id: params.triggerId }, diff: { before: auditDiff(settingsOf(r)) }, requestId }), async (tx) => {
        const before = await getRow(tx, params);
        // The rows the delete cascades to are locked first, in the order the other writers lock them,
        // so none of them deadlocks with it (a deadlock aborts one side: a 500 here, or a lost claim):
        // the hook's accept statement locks the rate row before it inserts deliveries, and the firer
        // holds claimed deliveries (it skips locked ones) while it waits for the trigger row.
        await tx.query(sql`select 1 from trigger_rate where trigger_id = ${params.triggerId} for update`);
        await tx.query(sql`select 1 from inbound_deliveries where trigger_id = ${params.triggerId} order by created_at, id for update`);
        await tx.query(sql`delete from triggers where id = ${params.triggerId}`);
        return before;
      }));
      return empty(204);
    },
  }),
  toggle(true),
  toggle(false),
  route({
    method: 'POST',
    path: '/api/projects/:projectId/triggers/:triggerId/rotate',
    summary: 'Rotate the secret: the new one is in this answer only; the previous one verifies for 24 hours more, then never',
    tag: TAG,
    access: ADMIN,
    params: triggerParams,
    async handler({ principal, params, requestId, request }, ctx) {
      const key = requireEncryptionKey(ctx);
      const secret = newSecret();
      const row = await changing(ctx, params.triggerId, audited(ctx.db, { actor: principal!, action: 'trigger.rotate', target: { type: 'trigger', id: params.triggerId }, requestId }, async (tx) => {
        const before = await getRow(tx, params, true);
        // A secret that no longer decrypts (another APP_ENCRYPTION_KEY) is replaced with no overlap:
        // rotating is the remedy, so it must work then too.
        const current = decryptOrNull(() => liveSecrets(before, key, ctx.clock.now())[0]);
        const until = current === null ? null : new Date(ctx.clock.now() + ROTATION_OVERLAP_MS);
        await tx.query(sql`
          update triggers set secret_ciphertext = ${encryptTriggerSecret(key, params.triggerId, secret)},
                 previous_secret_ciphertext = ${current === null ? null : encryptPreviousSecret(key, params.triggerId, current)},
                 previous_secret_expires_at = ${until}, updated_at = now()
           where id = ${params.triggerId}`);
        return getRow(tx, params);
      }));
      return json({ trigger: view(ctx, request)(row), secret }, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({
    method: 'POST',
    path: '/api/projects/:projectId/triggers/:triggerId/dry-run',
    summary:
      'Dry run: the verdict a delivery of this sample payload would get — 200 with the rendered args and `would_fire`, or `would_fail` ' +
      'with a reason (no_profile, runner_offline, budget_exceeded, …) when the run could not start now; 422 invalid_payload with every reason. Fires and records nothing',
    tag: TAG,
    access: ADMIN,
    params: triggerParams,
    body: dryRunBody,
    bodyLimit: 256 * 1024,
    async handler({ params, body }, ctx) {
      const r = await getRow(ctx.db, params);
      const notObject = payloadReasons(body.payload);
      if (notObject.length) return refusedPayload(notObject);
      const rendered = renderArgs(r.args, body.payload, r.value_pattern, r.allowed_paths);
      if (!rendered.ok) return refusedPayload(rendered.reasons);
      // Accepted: would the run start now (runner online, an agent runtime, budget…)? dry-run.ts
      const verdict = await startVerdict(ctx.db, r, ctx.clock);
      return json({ ...verdict, action: r.action, skill: r.skill, args: r.action === 'skill' ? rendered.args : [] });
    },
  }),
  route({
    method: 'GET',
    path: '/api/projects/:projectId/triggers/:triggerId/deliveries',
    summary: 'Delivery log of a trigger (30 days), newest first: delivery id, status with its reason(s), the run it started; page with before',
    tag: TAG,
    access: ADMIN,
    params: triggerParams,
    query: deliveryQuery,
    async handler({ params, query }, ctx) {
      await getRow(ctx.db, params);
      const rows = await ctx.db.query<DeliveryRow>(sql`
        select * from inbound_deliveries d
         where d.trigger_id = ${params.triggerId} and d.created_at >= now() - interval '30 days'
           and (${query.status ?? null}::text is null or d.status = ${query.status ?? null})
           and (${query.before ?? null}::text is null
                or (d.created_at, d.id) < (select created_at, id from inbound_deliveries where id = ${query.before ?? null} and trigger_id = ${params.triggerId}))
         order by d.created_at desc, d.id desc limit ${query.limit + 1}`);
      const page = rows.slice(0, query.limit);
      return json({ deliveries: page.map(toDelivery), nextBefore: rows.length > query.limit ? page[page.length - 1].id : null });
    },
  }),
  ...hookRoutes,
];

