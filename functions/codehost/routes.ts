// Admin API of code-host (GitHub) apps (docs/github-app.md): register (the webhook secret is in that
// answer only; an optional private key is stored and never shown again), list, get, edit, rotate the
// webhook secret, delivery log, delete. Instance admins only; every change writes an audit record;
// anything that stores a secret answers 409 encryption_key_missing without APP_ENCRYPTION_KEY. The
// endpoint GitHub calls, POST /hooks/github/<appPublicId>, is in hook.ts.
import { randomUUID } from 'node:crypto';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { publicBase } from '../lib/urls.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { apiUrlFor, appRow, encryptPrivateKey, encryptWebhookSecret, newPublicId, newWebhookSecret, publicIdHash, settingsOf, toApp, toDelivery } from './apps.ts';
import type { AppRow, DeliveryRow } from './apps.ts';
import { routes as hookRoutes } from './hook.ts';
import { appCreate, appParams, appPatch, deliveryQuery } from './schema.ts';

const TAG = 'codehost';
const ADMIN = 'instanceAdmin' as const;
const NO_STORE = { 'cache-control': 'no-store' };

async function getRow(q: Queryable, appId: string, lock = false): Promise<AppRow> {
  const row = await appRow(q, appId, lock);
  if (!row) throw notFound('no such code-host app');
  return row;
}

const view = (ctx: AppContext, request: Request) => (r: AppRow) => toApp(r, publicBase(ctx.config, request), ctx.keys.encryption);

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/github-apps',
    summary: 'Registered GitHub Apps with their webhook URL (never their secrets)',
    tag: TAG,
    access: ADMIN,
    async handler({ request }, ctx) {
      const rows = await ctx.db.query<AppRow>(sql`select * from codehost_apps order by created_at, id`);
      return json({ apps: rows.map(view(ctx, request)) });
    },
  }),
  route({
    method: 'POST',
    path: '/api/github-apps',
    summary: 'Register a GitHub App: answers its webhook URL and webhook secret (this answer only); an optional private key is stored encrypted and never shown again',
    tag: TAG,
    access: ADMIN,
    status: 201,
    body: appCreate,
    async handler({ principal, body, requestId, request }, ctx) {
      const key = requireEncryptionKey(ctx);
      const id = randomUUID();
      const publicId = newPublicId();
      const webhookSecret = newWebhookSecret();
      const row = await audited(
        ctx.db,
        (r: AppRow) => ({ actor: principal!, action: 'github_app.create', target: { type: 'github_app', id: r.id }, diff: { after: settingsOf(r) }, requestId }),
        async (tx) => {
          await tx.query(sql`
            insert into codehost_apps (id, name, github_app_id, public_id, public_id_hash, webhook_secret_ciphertext, private_key_ciphertext, created_by, api_url)
            values (${id}, ${body.name}, ${body.githubAppId ?? null}, ${publicId}, ${publicIdHash(publicId)}, ${encryptWebhookSecret(key, id, webhookSecret)},
                    ${body.privateKey ? encryptPrivateKey(key, id, body.privateKey) : null}, ${principal!.user.id}, ${apiUrlFor(body)})`);
          return getRow(tx, id);
        },
      );
      const app = view(ctx, request)(row);
      return json({ app, appPublicId: app.appPublicId, webhookUrl: app.webhookUrl, webhookSecret }, { status: 201, headers: NO_STORE });
    },
  }),
  route({
    method: 'GET',
    path: '/api/github-apps/:appId',
    summary: 'One GitHub App with its webhook URL (never its secrets)',
    tag: TAG,
    access: ADMIN,
    params: appParams,
    handler: async ({ params, request }, ctx) => json(view(ctx, request)(await getRow(ctx.db, params.appId))),
  }),
  route({
    method: 'PATCH',
    path: '/api/github-apps/:appId',
    summary: 'Edit a GitHub App: name, App ID, or its private key (replaced, or removed with null; never shown)',
    tag: TAG,
    access: ADMIN,
    params: appParams,
    body: appPatch,
    async handler({ principal, params, body, requestId, request }, ctx) {
      const key = body.privateKey ? requireEncryptionKey(ctx) : null;
      const { after } = await audited(
        ctx.db,
        (r: { before: AppRow; after: AppRow }) => ({ actor: principal!, action: 'github_app.update', target: { type: 'github_app', id: params.appId }, diff: { before: settingsOf(r.before), after: settingsOf(r.after) }, requestId }),
        async (tx) => {
          const before = await getRow(tx, params.appId, true);
          const pem = body.privateKey === undefined ? before.private_key_ciphertext : body.privateKey === null ? null : encryptPrivateKey(key!, params.appId, body.privateKey);
          await tx.query(sql`
            update codehost_apps set name = ${body.name ?? before.name},
                   github_app_id = ${body.githubAppId === undefined ? before.github_app_id : body.githubAppId},
                   private_key_ciphertext = ${pem}, api_url = ${apiUrlFor(body, before)}, updated_at = now()
             where id = ${params.appId}`);
          return { before, after: await getRow(tx, params.appId) };
        },
      );
      return json(view(ctx, request)(after));
    },
  }),
  route({
    method: 'POST',
    path: '/api/github-apps/:appId/rotate',
    summary: "Rotate the webhook secret: the new one is in this answer only and replaces the old one at once (enter it in the GitHub App's settings)",
    tag: TAG,
    access: ADMIN,
    params: appParams,
    async handler({ principal, params, requestId, request }, ctx) {
      const key = requireEncryptionKey(ctx);
      const webhookSecret = newWebhookSecret();
      const row = await audited(ctx.db, { actor: principal!, action: 'github_app.rotate', target: { type: 'github_app', id: params.appId }, requestId }, async (tx) => {
        await getRow(tx, params.appId, true);
        await tx.query(sql`update codehost_apps set webhook_secret_ciphertext = ${encryptWebhookSecret(key, params.appId, webhookSecret)}, updated_at = now() where id = ${params.appId}`);
        return getRow(tx, params.appId);
      });
      return json({ app: view(ctx, request)(row), webhookSecret }, { headers: NO_STORE });
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/github-apps/:appId',
    summary: 'Delete a GitHub App, its secrets and its delivery log; its webhook URL answers 404 from now on',
    tag: TAG,
    access: ADMIN,
    status: 204,
    params: appParams,
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, (r: AppRow) => ({ actor: principal!, action: 'github_app.delete', target: { type: 'github_app', id: params.appId }, diff: { before: settingsOf(r) }, requestId }), async (tx) => {
        const before = await getRow(tx, params.appId, true);
        await tx.query(sql`delete from codehost_apps where id = ${params.appId}`);
        return before;
      });
      return empty(204);
    },
  }),
  route({
    method: 'GET',
    path: '/api/github-apps/:appId/deliveries',
    summary: "The app's webhook deliveries (14 days), newest first: delivery id, event, action, repository, outcome, and each collector.poll's answer",
    tag: TAG,
    access: ADMIN,
    params: appParams,
    query: deliveryQuery,
    async handler({ params, query }, ctx) {
      await getRow(ctx.db, params.appId);
      const rows = await ctx.db.query<DeliveryRow>(sql`
        select * from codehost_deliveries where app_id = ${params.appId} and created_at >= now() - interval '14 days'
         order by created_at desc, id desc limit ${query.limit}`);
      return json({ deliveries: rows.map(toDelivery) });
    },
  }),
  ...hookRoutes,
];
