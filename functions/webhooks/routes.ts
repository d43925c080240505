// Admin API of outbound webhooks (spec: Admin management of triggers and webhooks): create (secret
// shown once), edit, delete, rotate, send test, delivery log, redeliver, resume deliveries, and the
// address allowlist. Instance admins only; every change writes an audit record; anything that needs
// the signing secret answers 409 encryption_key_missing without APP_ENCRYPTION_KEY.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import {
  allowlistAnswer,
  catalogueAnswer,
  deliveryAnswer,
  deliveryDetail,
  deliveryList,
  recoverAnswer,
  testDelivery,
  webhookAnswer,
  webhookList,
  webhookWithSecret,
} from '../../protocol/api/webhooks.ts';
import { audited } from '../audit/audit.ts';
import { auditedDelete } from '../lib/admin-routes.ts';
import { route } from '../lib/context.ts';
import { DecryptError, decryptSecret } from '../lib/crypto.ts';
import type { AppContext, Route, RouteDef } from '../lib/context.ts';
import { publish } from '../live/publish.ts';
import type { Queryable } from '../lib/db/index.ts';
import { badRequest, conflict, json, notFound } from '../lib/errors.ts';
import { httpUrl } from '../lib/http-url.ts';
import { idParam } from '../lib/project-routes.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { CATALOGUE, EVENT_TYPES, SUBSCRIBABLE_TYPES } from './catalogue.ts';
import { compileAllowlist, parseAllowlist, staticRefusal } from './guard.ts';
import { RECOVER_MAX_DAYS, recoverFailed } from './recover.ts';
import {
  createTestDelivery,
  encryptWebhookSecret,
  loadAllowlist,
  newSecret,
  redeliver,
  resumeCircuit,
  secretAad,
  toAttempt,
  toDelivery,
  toWebhook,
  wake,
  webhookRow,
} from './webhooks.ts';
import type { WebhookRow } from './webhooks.ts';
import {
  allowlistRow,
  deleteWebhook,
  deliveryAttempts,
  deliveryExists,
  deliveryRow,
  existingProjects,
  insertWebhook,
  listDeliveries,
  listWebhooks,
  rotateWebhookSecret,
  saveAllowlist,
  updateWebhook,
} from './queries.ts';

const webhookParams = z.strictObject({ webhookId: idParam('webhook') });
const deliveryParams = z.strictObject({ webhookId: idParam('webhook'), deliveryId: idParam('delivery') });

/** A route of this API: instance admins only, under the webhooks tag. */
function adminRoute<P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined>(
  def: Omit<RouteDef<P, Q, B>, 'tag' | 'access'>,
): Route {
  return route({ ...def, tag: 'webhooks', access: 'instanceAdmin' } as RouteDef<P, Q, B>);
}

export const webhookUrl = httpUrl(z.string().max(2048), { query: true }, 'must be an https:// URL (http:// only for allowlisted hosts) without credentials or fragment')
  .transform((s) => new URL(s).toString());
const events = z
  .array(z.enum(SUBSCRIBABLE_TYPES, { message: 'must be an event of the catalogue (webhook.test is sent only by Send test)' }))
  .min(1, { message: 'Choose at least one event' })
  .max(SUBSCRIBABLE_TYPES.length)
  .transform((list) => SUBSCRIBABLE_TYPES.filter((t) => list.includes(t)));
const projects = z
  .array(idParam('project'))
  .max(500)
  .transform((list) => [...new Set(list)].sort());

/** 400 naming `url` when the address guard would refuse it at every attempt whatever DNS says. */
async function requireAllowedUrl(q: Queryable, url: string): Promise<void> {
  const why = staticRefusal(new URL(url), compileAllowlist(await loadAllowlist(q)));
  if (why) throw badRequest('invalid_body', `url: ${why}`, { url: why });
}

export const webhookCreate = z.strictObject({ url: webhookUrl, events, projects: projects.default([]) });
export const webhookPatch = z.strictObject({ url: webhookUrl.optional(), events: events.optional(), projects: projects.optional() });
const deliveryQuery = z.strictObject({
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
  before: z.iso.datetime({ offset: true }).optional(),
  limit: z
    .string()
    .regex(/^\d{1,3}$/, { message: 'must be 1 to 200' })
    .transform(Number)
    .pipe(z.number().int().min(1).max(200))
    .default(50),
});

async function getWebhookRow(q: Queryable, webhookId: string): Promise<WebhookRow> {
  const row = await webhookRow(q, webhookId);
  if (!row) throw notFound('no such webhook');
  return row;
}

/** A new signing secret for this webhook and its ciphertext; 409 encryption_key_missing without APP_ENCRYPTION_KEY. */
function signingSecret(ctx: AppContext, webhookId: string): { key: Buffer; secret: string; ciphertext: string } {
  const key = requireEncryptionKey(ctx);
  const secret = newSecret();
  return { key, secret, ciphertext: encryptWebhookSecret(key, webhookId, secret) };
}

/** Queue only what can be signed: 409 secret_unavailable when the stored secret does not decrypt with `key`. */
function requireUsableSecret(row: WebhookRow, key: Buffer): void {
  try {
    decryptSecret(key, row.secret_ciphertext, secretAad(row.id));
  } catch (err) {
    const why = err instanceof DecryptError && err.reason === 'other_key' ? 'was encrypted with another APP_ENCRYPTION_KEY' : 'cannot be decrypted (the stored value is damaged)';
    throw conflict('secret_unavailable', `this webhook's secret ${why}: rotate it first`);
  }
}

async function requireProjects(q: Queryable, ids: string[]): Promise<void> {
  if (!ids.length) return;
  const found = await existingProjects(q, ids);
  const fields = Object.fromEntries(ids.flatMap((p, i) => (found.has(p) ? [] : [[`projects.${i}`, 'no such project']])));
  if (Object.keys(fields).length) throw badRequest('invalid_body', `invalid fields: ${Object.keys(fields).join(', ')}`, fields);
}

const allowlistView = async (ctx: AppContext) => {
  const row = await allowlistRow(ctx.db);
  return { allowlist: row.entries.join('\n'), entries: row.entries, updatedAt: new Date(row.updated_at).toISOString() };
};

const DAY_MS = 24 * 3600_000;
/** Recover's `since`: a time with its offset, at most RECOVER_MAX_DAYS back and not in the future. */
const recoverBody = z.strictObject({
  since: z.iso
    .datetime({ offset: true })
    .transform((s) => new Date(s))
    .refine((d) => d.getTime() >= Date.now() - RECOVER_MAX_DAYS * DAY_MS, { message: `must be at most ${RECOVER_MAX_DAYS} days back` })
    .refine((d) => d.getTime() <= Date.now(), { message: 'must not be in the future' }),
});

const deliveryRoutes: Route[] = [
  adminRoute({ method: 'GET', path: '/api/webhooks/:webhookId/deliveries',
    summary: 'Delivery log of a webhook, newest first (kept 30 days): event, status, attempts, next attempt, response code and body',
    responses: { 200: { description: 'deliveries, newest first', schema: deliveryList } },
    params: webhookParams,
    query: deliveryQuery,
    async handler({ params, query }, ctx) {
      await getWebhookRow(ctx.db, params.webhookId);
      const rows = await listDeliveries(ctx.db, params.webhookId, query);
      return json({ deliveries: rows.map(toDelivery) });
    },
  }),
  adminRoute({ method: 'GET', path: '/api/webhooks/:webhookId/deliveries/:deliveryId',
    summary: 'One delivery with the envelope sent and every attempt',
    responses: { 200: { description: 'the delivery', schema: deliveryDetail } },
    params: deliveryParams,
    async handler({ params }, ctx) {
      const row = await deliveryRow(ctx.db, params.webhookId, params.deliveryId);
      if (!row) throw notFound('no such delivery');
      const attempts = await deliveryAttempts(ctx.db, row.id);
      return json({ ...toDelivery(row), envelope: row.body ? JSON.parse(row.body) : null, attemptLog: attempts.map(toAttempt) });
    },
  }),
  adminRoute({ method: 'POST', path: '/api/webhooks/:webhookId/deliveries/:deliveryId/redeliver',
    summary: 'Redeliver a failed delivery: it is pending again with one more attempt',
    responses: { 202: { description: 'the delivery, pending again', schema: deliveryAnswer } },
    status: 202,
    params: deliveryParams,
    async handler({ principal, params, requestId }, ctx) {
      const row = await audited(
        ctx.db,
        { actor: principal!, action: 'webhook.redeliver', target: { type: 'outbound_delivery', id: params.deliveryId }, diff: { webhookId: params.webhookId }, requestId },
        async (tx) => {
          const updated = await redeliver(tx, params.webhookId, params.deliveryId, new Date());
          if (updated) return updated;
          throw (await deliveryExists(tx, params.webhookId, params.deliveryId)) ? conflict('not_failed', 'only a failed delivery can be redelivered') : notFound('no such delivery');
        },
      );
      await wake(ctx.db);
      return json(toDelivery(row), { status: 202 });
    },
  }),
  adminRoute({ method: 'POST', path: '/api/webhooks/:webhookId/recover',
    summary: `Recover failed deliveries: each delivery of this webhook that ended failed at or after \`since\` (at most ${RECOVER_MAX_DAYS} days back) gets a new series of attempts, with its original delivery id; answers how many were queued`,
    responses: { 200: { description: 'how many deliveries were queued again', schema: recoverAnswer } },
    params: webhookParams,
    body: recoverBody,
    async handler({ principal, params, body, requestId }, ctx) {
      const queued = await audited(
        ctx.db,
        (ids: string[]) => ({ actor: principal!, action: 'webhook.recover', target: { type: 'webhook', id: params.webhookId }, diff: { since: body.since.toISOString(), queued: ids.length }, requestId }),
        async (tx) => {
          await getWebhookRow(tx, params.webhookId);
          return recoverFailed(tx, params.webhookId, body.since, new Date());
        },
      );
      if (queued.length) await wake(ctx.db);
      return json({ queued: queued.length });
    },
  }),
];

const allowlistRoutes: Route[] = [
  adminRoute({ method: 'GET', path: '/api/webhooks/allowlist',
    summary: 'Hosts and CIDRs the outbound address guard allows (one per line)',
    responses: { 200: { description: 'the allowlist', schema: allowlistAnswer } },
    handler: async (_input, ctx) => json(await allowlistView(ctx)),
  }),
  adminRoute({ method: 'PUT', path: '/api/webhooks/allowlist',
    summary: 'Replace the address allowlist: host names, CIDRs or IP addresses, one per line',
    responses: { 200: { description: 'the allowlist as saved', schema: allowlistAnswer } },
    body: z.strictObject({ allowlist: z.string().max(64 * 1024) }),
    async handler({ principal, body, requestId }, ctx) {
      const { entries, errors } = parseAllowlist(body.allowlist);
      if (Object.keys(errors).length) throw badRequest('invalid_body', `invalid allowlist: ${Object.keys(errors).join(', ')}`, errors);
      await audited(ctx.db, (before: string[]) => ({ actor: principal!, action: 'webhook.allowlist.update', target: { type: 'webhook_allowlist' }, diff: { before, after: entries }, requestId }), async (tx) => {
        const before = await loadAllowlist(tx);
        await saveAllowlist(tx, entries, principal!.user.id);
        return before;
      });
      return json(await allowlistView(ctx));
    },
  }),
];

export const routes: Route[] = [
  adminRoute({ method: 'GET', path: '/api/webhooks/catalogue',
    summary: 'The closed event catalogue: every event type a webhook can receive, with its data keys',
    responses: { 200: { description: 'the catalogue', schema: catalogueAnswer } },
    handler: () =>
      json({
        events: EVENT_TYPES.map((type) => ({ type, description: CATALOGUE[type].description, subscribable: type !== 'webhook.test', data: Object.keys(CATALOGUE[type].data) })),
      }),
  }),
  ...allowlistRoutes,
  adminRoute({ method: 'GET', path: '/api/webhooks',
    summary: 'Outbound webhooks with their circuit state (never their secrets)',
    responses: { 200: { description: 'the webhooks', schema: webhookList } },
    async handler(_input, ctx) {
      const rows = await listWebhooks(ctx.db);
      return json({ webhooks: rows.map((r) => toWebhook(r, ctx.keys.encryption)) });
    },
  }),
  adminRoute({ method: 'POST', path: '/api/webhooks',
    summary: 'Create a webhook; its signing secret is in this answer only',
    responses: { 201: { description: 'the new webhook and its signing secret', schema: webhookWithSecret } },
    status: 201,
    body: webhookCreate,
    async handler({ principal, body, requestId }, ctx) {
      const webhookId = randomUUID();
      const { key, secret, ciphertext } = signingSecret(ctx, webhookId);
      const row = await audited(
        ctx.db,
        (r: WebhookRow) => ({ actor: principal!, action: 'webhook.create', target: { type: 'webhook', id: r.id }, diff: { after: { url: r.url, events: r.events, projects: r.projects } }, requestId }),
        async (tx) => {
          await requireProjects(tx, body.projects);
          await requireAllowedUrl(tx, body.url);
          await insertWebhook(tx, { ...body, id: webhookId, secretCiphertext: ciphertext, createdBy: principal!.user.id });
          return getWebhookRow(tx, webhookId);
        },
      );
      return json({ ...toWebhook(row, key), secret }, { status: 201 });
    },
  }),
  adminRoute({ method: 'GET', path: '/api/webhooks/:webhookId',
    summary: 'One webhook with its circuit state',
    responses: { 200: { description: 'the webhook', schema: webhookAnswer } },
    params: webhookParams,
    handler: async ({ params }, ctx) => json(toWebhook(await getWebhookRow(ctx.db, params.webhookId), ctx.keys.encryption)),
  }),
  adminRoute({ method: 'PATCH', path: '/api/webhooks/:webhookId',
    summary: 'Change the URL, events or projects of a webhook',
    responses: { 200: { description: 'the webhook as saved', schema: webhookAnswer } },
    params: webhookParams,
    body: webhookPatch,
    async handler({ principal, params, body, requestId }, ctx) {
      const pick = (r: WebhookRow) => ({ url: r.url, events: r.events, projects: r.projects });
      const { after } = await audited(
        ctx.db,
        (r: { before: WebhookRow; after: WebhookRow }) => ({ actor: principal!, action: 'webhook.update', target: { type: 'webhook', id: params.webhookId }, diff: { before: pick(r.before), after: pick(r.after) }, requestId }),
        async (tx) => {
          const before = await getWebhookRow(tx, params.webhookId);
          if (body.projects) await requireProjects(tx, body.projects);
          if (body.url) await requireAllowedUrl(tx, body.url);
          await updateWebhook(tx, params.webhookId, { url: body.url ?? before.url, events: body.events ?? before.events, projects: body.projects ?? before.projects });
          return { before, after: await getWebhookRow(tx, params.webhookId) };
        },
      );
      return json(toWebhook(after, ctx.keys.encryption));
    },
  }),
  auditedDelete({
    path: '/api/webhooks/:webhookId',
    summary: 'Delete a webhook and its delivery log',
    tag: 'webhooks',
    params: webhookParams,
    id: 'webhookId',
    action: 'webhook.delete',
    targetType: 'webhook',
    missing: 'no such webhook',
    remove: deleteWebhook,
  }),
  adminRoute({ method: 'POST', path: '/api/webhooks/:webhookId/rotate',
    summary: 'Rotate the signing secret: the next attempt is signed with the new one (shown in this answer only)',
    responses: { 200: { description: 'the webhook and its new signing secret', schema: webhookWithSecret } },
    params: webhookParams,
    async handler({ principal, params, requestId }, ctx) {
      const { key, secret, ciphertext } = signingSecret(ctx, params.webhookId);
      const row = await audited(ctx.db, { actor: principal!, action: 'webhook.rotate', target: { type: 'webhook', id: params.webhookId }, requestId }, async (tx) => {
        if (!(await rotateWebhookSecret(tx, params.webhookId, ciphertext))) throw notFound('no such webhook');
        return getWebhookRow(tx, params.webhookId);
      });
      return json({ ...toWebhook(row, key), secret });
    },
  }),
  adminRoute({ method: 'POST', path: '/api/webhooks/:webhookId/test',
    summary: "Send test: one webhook.test delivery (envelope id test_<delivery id>, project null); 409 secret_unavailable when the stored secret does not decrypt with the current key (rotate first)",
    responses: { 202: { description: 'the test delivery queued', schema: testDelivery } },
    status: 202,
    params: webhookParams,
    async handler({ principal, params, requestId }, ctx) {
      const key = requireEncryptionKey(ctx);
      const made = await audited(
        ctx.db,
        (r: { deliveryId: string }) => ({ actor: principal!, action: 'webhook.test', target: { type: 'webhook', id: params.webhookId }, diff: { deliveryId: r.deliveryId }, requestId }),
        async (tx) => {
          requireUsableSecret(await getWebhookRow(tx, params.webhookId), key);
          return createTestDelivery(tx, params.webhookId, new Date());
        },
      );
      return json(made, { status: 202 });
    },
  }),
  adminRoute({ method: 'POST', path: '/api/webhooks/:webhookId/resume',
    summary: 'Resume deliveries: close the circuit by hand',
    responses: { 200: { description: 'the webhook, its circuit closed', schema: webhookAnswer } },
    params: webhookParams,
    async handler({ principal, params, requestId }, ctx) {
      await audited(
        ctx.db,
        (before: string) => ({ actor: principal!, action: 'webhook.resume', target: { type: 'webhook', id: params.webhookId }, diff: { before, after: 'closed' }, requestId }),
        async (tx) => {
          const before = await resumeCircuit(tx, params.webhookId);
          if (!before) throw notFound('no such webhook');
          await publish(tx, { type: 'webhook', id: params.webhookId, circuit: 'closed' }, { admins: true });
          return before;
        },
      );
      await wake(ctx.db);
      return json(toWebhook(await getWebhookRow(ctx.db, params.webhookId), ctx.keys.encryption));
    },
  }),
  ...deliveryRoutes,
];
