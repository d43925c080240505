// Admin API of outbound webhooks (spec: Admin management of triggers and webhooks): create (secret
// shown once), edit, delete, rotate, send test, delivery log, redeliver, resume deliveries, and the
// address allowlist. Instance admins only; every change writes an audit record; anything that needs
// the signing secret answers 409 encryption_key_missing without APP_ENCRYPTION_KEY.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import { DecryptError, decryptSecret } from '../lib/crypto.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { publish } from '../live/publish.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { badRequest, conflict, json, notFound } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { CATALOGUE, EVENT_TYPES, SUBSCRIBABLE_TYPES } from './catalogue.ts';
import { CHANNEL } from './capture.ts';
import { compileAllowlist, parseAllowlist, staticRefusal } from './guard.ts';
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
import type { AttemptRow, DeliveryRow, WebhookRow } from './webhooks.ts';

const id = (what: string) => z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: `must be a ${what} id` });
const webhookParams = z.strictObject({ webhookId: id('webhook') });
const deliveryParams = z.strictObject({ webhookId: id('webhook'), deliveryId: id('delivery') });

export const webhookUrl = z
  .string()
  .max(2048)
  .refine(
    (s) => {
      try {
        const u = new URL(s);
        return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && !u.hash && !s.includes('#');
      } catch {
        return false;
      }
    },
    { message: 'must be an https:// URL (http:// only for allowlisted hosts) without credentials or fragment' },
  )
  .transform((s) => new URL(s).toString());
const events = z
  .array(z.enum(SUBSCRIBABLE_TYPES, { message: 'must be an event of the catalogue (webhook.test is sent only by Send test)' }))
  .min(1, { message: 'Choose at least one event' })
  .max(SUBSCRIBABLE_TYPES.length)
  .transform((list) => SUBSCRIBABLE_TYPES.filter((t) => list.includes(t)));
const projects = z
  .array(id('project'))
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
  const found = new Set((await q.query<{ id: string }>(sql`select id from projects where id = any(${ids})`)).map((r) => r.id));
  const fields = Object.fromEntries(ids.flatMap((p, i) => (found.has(p) ? [] : [[`projects.${i}`, 'no such project']])));
  if (Object.keys(fields).length) throw badRequest('invalid_body', `invalid fields: ${Object.keys(fields).join(', ')}`, fields);
}

const allowlistView = async (ctx: AppContext) => {
  const [row] = await ctx.db.query<{ entries: string[]; updated_at: Date }>(sql`select entries, updated_at from webhook_allowlist where id = 1`);
  return { allowlist: row.entries.join('\n'), entries: row.entries, updatedAt: new Date(row.updated_at).toISOString() };
};

const deliveryRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/webhooks/:webhookId/deliveries',
    summary: 'Delivery log of a webhook, newest first (kept 30 days): event, status, attempts, next attempt, response code and body',
    tag: 'webhooks',
    access: 'instanceAdmin',
    params: webhookParams,
    query: deliveryQuery,
    async handler({ params, query }, ctx) {
      await getWebhookRow(ctx.db, params.webhookId);
      const rows = await ctx.db.query<DeliveryRow>(sql`
        select * from outbound_deliveries
         where webhook_id = ${params.webhookId} and created_at >= now() - interval '30 days'
           and (${query.status ?? null}::text is null or status = ${query.status ?? null})
           and (${query.before ?? null}::timestamptz is null or created_at < ${query.before ?? null}::timestamptz)
         order by created_at desc, id desc limit ${query.limit}`);
      return json({ deliveries: rows.map(toDelivery) });
    },
  }),
  route({
    method: 'GET',
    path: '/api/webhooks/:webhookId/deliveries/:deliveryId',
    summary: 'One delivery with the envelope sent and every attempt',
    tag: 'webhooks',
    access: 'instanceAdmin',
    params: deliveryParams,
    async handler({ params }, ctx) {
      const [row] = await ctx.db.query<DeliveryRow & { body: string | null }>(sql`
        select * from outbound_deliveries where id = ${params.deliveryId} and webhook_id = ${params.webhookId}`);
      if (!row) throw notFound('no such delivery');
      const attempts = await ctx.db.query<AttemptRow>(sql`select * from outbound_attempts where delivery_id = ${row.id} order by attempt`);
      return json({ ...toDelivery(row), envelope: row.body ? JSON.parse(row.body) : null, attemptLog: attempts.map(toAttempt) });
    },
  }),
  route({
    method: 'POST',
    path: '/api/webhooks/:webhookId/deliveries/:deliveryId/redeliver',
    summary: 'Redeliver a failed delivery: it is pending again with one more attempt',
    tag: 'webhooks',
    access: 'instanceAdmin',
    status: 202,
    params: deliveryParams,
    async handler({ principal, params, requestId }, ctx) {
      const row = await audited(
        ctx.db,
        { actor: principal!, action: 'webhook.redeliver', target: { type: 'outbound_delivery', id: params.deliveryId }, diff: { webhookId: params.webhookId }, requestId },
        async (tx) => {
          const updated = await redeliver(tx, params.webhookId, params.deliveryId, new Date());
          if (updated) return updated;
          const [exists] = await tx.query(sql`select 1 from outbound_deliveries where id = ${params.deliveryId} and webhook_id = ${params.webhookId}`);
          throw exists ? conflict('not_failed', 'only a failed delivery can be redelivered') : notFound('no such delivery');
        },
      );
      await wake(ctx.db);
      return json(toDelivery(row), { status: 202 });
    },
  }),
];

const allowlistRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/webhooks/allowlist',
    summary: 'Hosts and CIDRs the outbound address guard allows (one per line)',
    tag: 'webhooks',
    access: 'instanceAdmin',
    handler: async (_input, ctx) => json(await allowlistView(ctx)),
  }),
  route({
    method: 'PUT',
    path: '/api/webhooks/allowlist',
    summary: 'Replace the address allowlist: host names, CIDRs or IP addresses, one per line',
    tag: 'webhooks',
    access: 'instanceAdmin',
    body: z.strictObject({ allowlist: z.string().max(64 * 1024) }),
    async handler({ principal, body, requestId }, ctx) {
      const { entries, errors } = parseAllowlist(body.allowlist);
      if (Object.keys(errors).length) throw badRequest('invalid_body', `invalid allowlist: ${Object.keys(errors).join(', ')}`, errors);
      await audited(ctx.db, (before: string[]) => ({ actor: principal!, action: 'webhook.allowlist.update', target: { type: 'webhook_allowlist' }, diff: { before, after: entries }, requestId }), async (tx) => {
        const before = await loadAllowlist(tx);
        await tx.query(sql`update webhook_allowlist set entries = ${sql.json(entries)}, updated_by = ${principal!.user.id}, updated_at = now() where id = 1`);
        await tx.query(sql`select pg_notify(${CHANNEL}, 'allowlist')`);
        return before;
      });
      return json(await allowlistView(ctx));
    },
  }),
];

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/webhooks/catalogue',
    summary: 'The closed event catalogue: every event type a webhook can receive, with its data keys',
    tag: 'webhooks',
    access: 'instanceAdmin',
    handler: () =>
      json({
        events: EVENT_TYPES.map((type) => ({ type, description: CATALOGUE[type].description, subscribable: type !== 'webhook.test', data: Object.keys(CATALOGUE[type].data) })),
      }),
  }),
  ...allowlistRoutes,
  route({
    method: 'GET',
    path: '/api/webhooks',
    summary: 'Outbound webhooks with their circuit state (never their secrets)',
    tag: 'webhooks',
    access: 'instanceAdmin',
    async handler(_input, ctx) {
      const rows = await ctx.db.query<WebhookRow>(sql`select * from webhooks where kind = 'webhook' order by created_at, id`);
      return json({ webhooks: rows.map((r) => toWebhook(r, ctx.keys.encryption)) });
    },
  }),
  route({
    method: 'POST',
    path: '/api/webhooks',
    summary: 'Create a webhook; its signing secret is in this answer only',
    tag: 'webhooks',
    access: 'instanceAdmin',
    status: 201,
    body: webhookCreate,
    async handler({ principal, body, requestId }, ctx) {
      const key = requireEncryptionKey(ctx);
      const webhookId = randomUUID();
      const secret = newSecret();
      const row = await audited(
        ctx.db,
        (r: WebhookRow) => ({ actor: principal!, action: 'webhook.create', target: { type: 'webhook', id: r.id }, diff: { after: { url: r.url, events: r.events, projects: r.projects } }, requestId }),
        async (tx) => {
          await requireProjects(tx, body.projects);
          await requireAllowedUrl(tx, body.url);
          await tx.query(sql`
            insert into webhooks (id, url, events, projects, secret_ciphertext, created_by)
            values (${webhookId}, ${body.url}, ${sql.json(body.events)}, ${sql.json(body.projects)},
                    ${encryptWebhookSecret(key, webhookId, secret)}, ${principal!.user.id})`);
          return getWebhookRow(tx, webhookId);
        },
      );
      return json({ ...toWebhook(row, key), secret }, { status: 201 });
    },
  }),
  route({
    method: 'GET',
    path: '/api/webhooks/:webhookId',
    summary: 'One webhook with its circuit state',
    tag: 'webhooks',
    access: 'instanceAdmin',
    params: webhookParams,
    handler: async ({ params }, ctx) => json(toWebhook(await getWebhookRow(ctx.db, params.webhookId), ctx.keys.encryption)),
  }),
  route({
    method: 'PATCH',
    path: '/api/webhooks/:webhookId',
    summary: 'Change the URL, events or projects of a webhook',
    tag: 'webhooks',
    access: 'instanceAdmin',
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
          await tx.query(sql`
            update webhooks set url = ${body.url ?? before.url}, events = ${sql.json(body.events ?? before.events)},
                   projects = ${sql.json(body.projects ?? before.projects)}, updated_at = now()
             where id = ${params.webhookId}`);
          return { before, after: await getWebhookRow(tx, params.webhookId) };
        },
      );
      return json(toWebhook(after, ctx.keys.encryption));
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/webhooks/:webhookId',
    summary: 'Delete a webhook and its delivery log',
    tag: 'webhooks',
    access: 'instanceAdmin',
    status: 204,
    params: webhookParams,
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, { actor: principal!, action: 'webhook.delete', target: { type: 'webhook', id: params.webhookId }, requestId }, async (tx) => {
        const [gone] = await tx.query(sql`delete from webhooks where id = ${params.webhookId} and kind = 'webhook' returning 1`);
        if (!gone) throw notFound('no such webhook');
        await tx.query(sql`delete from outbound_deliveries where webhook_id = ${params.webhookId}`);
      });
      return empty(204);
    },
  }),
  route({
    method: 'POST',
    path: '/api/webhooks/:webhookId/rotate',
    summary: 'Rotate the signing secret: the next attempt is signed with the new one (shown in this answer only)',
    tag: 'webhooks',
    access: 'instanceAdmin',
    params: webhookParams,
    async handler({ principal, params, requestId }, ctx) {
      const key = requireEncryptionKey(ctx);
      const secret = newSecret();
      const row = await audited(ctx.db, { actor: principal!, action: 'webhook.rotate', target: { type: 'webhook', id: params.webhookId }, requestId }, async (tx) => {
        const [updated] = await tx.query(sql`
          update webhooks set secret_ciphertext = ${encryptWebhookSecret(key, params.webhookId, secret)}, updated_at = now()
           where id = ${params.webhookId} and kind = 'webhook' returning id`);
        if (!updated) throw notFound('no such webhook');
        return getWebhookRow(tx, params.webhookId);
      });
      return json({ ...toWebhook(row, key), secret });
    },
  }),
  route({
    method: 'POST',
    path: '/api/webhooks/:webhookId/test',
    summary: "Send test: one webhook.test delivery (envelope id test_<delivery id>, project null); 409 secret_unavailable when the stored secret does not decrypt with the current key (rotate first)",
    tag: 'webhooks',
    access: 'instanceAdmin',
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
  route({
    method: 'POST',
    path: '/api/webhooks/:webhookId/resume',
    summary: 'Resume deliveries: close the circuit by hand',
    tag: 'webhooks',
    access: 'instanceAdmin',
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
