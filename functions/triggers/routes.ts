// Admin API of inbound triggers (spec: Admin management of triggers and webhooks; docs/triggers.md):
// create (secret shown once), list, get, edit, enable/disable, rotate (the previous secret verifies 24 h
// more), dry run (fires and records nothing), delivery log, delete. Project admins of the trigger's
// project (instance admins everywhere); a trigger is found only through its own project's path. Every
// change writes an audit record; anything that stores a secret answers 409 encryption_key_missing
// without APP_ENCRYPTION_KEY. The caller's endpoint, POST /hooks/<publicId>, is in hook.ts.
import { randomUUID } from 'node:crypto';
import { deliveryList, dryRunAnswer, triggerAnswer, triggerList, triggerWithSecret } from '../../protocol/api/triggers.ts';
import { audited } from '../audit/audit.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { DecryptError } from '../lib/crypto.ts';
import type { Queryable } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { idParam, projectRoute } from '../lib/project-routes.ts';
import { empty } from '../lib/respond.ts';
import { publicBase } from '../lib/urls.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { refusedPayload, routes as hookRoutes } from './hook.ts';
import { startVerdict } from './dry-run.ts';
import { payloadReasons, renderArgs } from '../../protocol/placeholders.ts';
import { deleteTrigger, insertTrigger, lastDeliveries, listDeliveries, listTriggers, rotateTriggerSecret, setTriggerEnabled, updateTrigger } from './queries.ts';
import { deliveryQuery, dryRunBody, settle, triggerCreate, triggerPatch } from './schema.ts';
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
import type { TriggerRow } from './triggers.ts';

const TAG = 'triggers';
const one = { triggerId: idParam('trigger') };

/** The trigger the path names (with `lock`, locked for update), or 404. */
async function getRow(q: Queryable, { projectId, triggerId }: { projectId: string; triggerId: string }, lock = false): Promise<TriggerRow> {
  const row = await triggerRow(q, projectId, triggerId, lock);
  if (row) return row;
  throw notFound('no such trigger');
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

/** Enable or disable by hand (an admin's choice clears a reason the trigger gave itself). */
function toggle(enabled: boolean): Route {
  return projectRoute('admin', { method: 'POST', path: `/triggers/:triggerId/${enabled ? 'enable' : 'disable'}`, tag: TAG,
    summary: enabled ? 'Enable a trigger: its URL answers again' : 'Disable a trigger: its URL answers 404 like an unknown one',
    responses: { 200: { description: 'the trigger as saved', schema: triggerAnswer } },
    params: one,
    async handler({ principal, params, requestId, request }, ctx) {
      const row = await changing(ctx, params.triggerId, audited(ctx.db, { actor: principal!, action: `trigger.${enabled ? 'enable' : 'disable'}`, target: { type: 'trigger', id: params.triggerId }, requestId }, async (tx) => {
        await getRow(tx, params);
        await setTriggerEnabled(tx, params.triggerId, enabled);
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
  projectRoute('admin', { method: 'GET', path: '/triggers', tag: TAG,
    summary: "The project's inbound triggers (never their secrets), each with its last delivery",
    responses: { 200: { description: 'the triggers', schema: triggerList } },
    async handler({ params, request }, ctx) {
      const rows = await listTriggers(ctx.db, params.projectId);
      const last = await lastDeliveries(ctx.db, params.projectId);
      const lastOf = new Map(last.map((d) => [d.trigger_id, toDelivery(d)]));
      return json({ triggers: rows.map((r) => ({ ...view(ctx, request)(r), lastDelivery: lastOf.get(r.id) ?? null })) });
    },
  }),
  projectRoute('admin', { method: 'POST', path: '/triggers', tag: TAG,
    summary: 'Create an inbound trigger; its secret is in this answer only',
    responses: { 201: { description: 'the new trigger and its secret', schema: triggerWithSecret } },
    status: 201,
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
          await insertTrigger(tx, {
            ...s,
            id: triggerId,
            projectId: params.projectId,
            publicId,
            publicIdHash: publicIdHash(publicId),
            secretCiphertext: encryptTriggerSecret(key, triggerId, secret),
            createdBy: principal!.user.id,
          });
          return getRow(tx, { projectId: params.projectId, triggerId });
        },
      );
      return json({ trigger: view(ctx, request)(row), secret }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  projectRoute('admin', { method: 'GET', path: '/triggers/:triggerId', tag: TAG,
    summary: 'One trigger with its URL (never its secret)',
    responses: { 200: { description: 'the trigger', schema: triggerAnswer } },
    params: one,
    handler: async ({ params, request }, ctx) => json(view(ctx, request)(await getRow(ctx.db, params))),
  }),
  projectRoute('admin', { method: 'PATCH', path: '/triggers/:triggerId', tag: TAG,
    summary: 'Edit a trigger (its project is fixed): name, action, skill, args, profile, model, output, allowed paths, value pattern, enabled',
    responses: { 200: { description: 'the trigger as saved', schema: triggerAnswer } },
    params: one,
    body: triggerPatch,
    async handler({ principal, params, body, requestId, request }, ctx) {
      const { after } = await changing(ctx, params.triggerId, audited(
        ctx.db,
        (r: { before: TriggerRow; after: TriggerRow }) => ({ actor: principal!, action: 'trigger.update', target: { type: 'trigger', id: params.triggerId }, diff: { before: auditDiff(settingsOf(r.before)), after: auditDiff(settingsOf(r.after)) }, requestId }),
        async (tx) => {
          const before = await getRow(tx, params, true);
          const given = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as Partial<TriggerSettings>;
          await updateTrigger(tx, params.triggerId, settle({ ...settingsOf(before), ...given }, given));
          return { before, after: await getRow(tx, params) };
        },
      ));
      return json(view(ctx, request)(after));
    },
  }),
  projectRoute('admin', { method: 'DELETE', path: '/triggers/:triggerId', tag: TAG, status: 204, params: one,
    summary: 'Delete a trigger and its delivery log; its URL answers 404 from now on',
    async handler({ principal, params, requestId }, ctx) {
      await changing(ctx, params.triggerId, audited(ctx.db, (r: TriggerRow) => ({ actor: principal!, action: 'trigger.delete', target: { type: 'trigger', id: params.triggerId }, diff: { before: auditDiff(settingsOf(r)) }, requestId }), async (tx) => {
        const before = await getRow(tx, params);
        await deleteTrigger(tx, params.triggerId); // locks what it cascades to first (queries.ts)
        return before;
      }));
      return empty(204);
    },
  }),
  toggle(true),
  toggle(false),
  projectRoute('admin', { method: 'POST', path: '/triggers/:triggerId/rotate', tag: TAG,
    summary: 'Rotate the secret: the new one is in this answer only; the previous one verifies for 24 hours more, then never',
    responses: { 200: { description: 'the trigger and its new secret', schema: triggerWithSecret } },
    params: one,
    async handler({ principal, params, requestId, request }, ctx) {
      const key = requireEncryptionKey(ctx);
      const secret = newSecret();
      const row = await changing(ctx, params.triggerId, audited(ctx.db, { actor: principal!, action: 'trigger.rotate', target: { type: 'trigger', id: params.triggerId }, requestId }, async (tx) => {
        const before = await getRow(tx, params, true);
        // A secret that no longer decrypts (another APP_ENCRYPTION_KEY) is replaced with no overlap:
        // rotating is the remedy, so it must work then too.
        const current = decryptOrNull(() => liveSecrets(before, key, ctx.clock.now())[0]);
        const until = current === null ? null : new Date(ctx.clock.now() + ROTATION_OVERLAP_MS);
        await rotateTriggerSecret(tx, params.triggerId, {
          secretCiphertext: encryptTriggerSecret(key, params.triggerId, secret),
          previousCiphertext: current === null ? null : encryptPreviousSecret(key, params.triggerId, current),
          until,
        });
        return getRow(tx, params);
      }));
      return json({ trigger: view(ctx, request)(row), secret }, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  projectRoute('admin', { method: 'POST', path: '/triggers/:triggerId/dry-run',
    summary:
      'Dry run: the verdict a delivery of this sample payload would get — 200 with the rendered args and `would_fire`, or `would_fail` ' +
      'with a reason (no_profile, runner_offline, budget_exceeded, …) when the run could not start now; 422 invalid_payload with every reason. Fires and records nothing',
    tag: TAG,
    responses: { 200: { description: 'the verdict, the action and the args as rendered', schema: dryRunAnswer } },
    params: one,
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
  projectRoute('admin', { method: 'GET', path: '/triggers/:triggerId/deliveries', tag: TAG,
    summary: 'Delivery log of a trigger (30 days), newest first: delivery id, status with its reason(s), the run it started; page with before',
    responses: { 200: { description: 'deliveries, newest first', schema: deliveryList } },
    params: one,
    query: deliveryQuery,
    async handler({ params, query }, ctx) {
      await getRow(ctx.db, params);
      const rows = await listDeliveries(ctx.db, params.triggerId, query);
      const page = rows.slice(0, query.limit);
      return json({ deliveries: page.map(toDelivery), nextBefore: rows.length > query.limit ? page[page.length - 1].id : null });
    },
  }),
  ...hookRoutes,
];

