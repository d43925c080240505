// Admin API of code-host (GitHub) apps (docs/github-app.md): register (the webhook secret is in that
// answer only; an optional private key is stored and never shown again), list, get, edit, rotate the
// webhook secret, delivery log, delete. Instance admins only; every change writes an audit record;
// anything that stores a secret answers 409 encryption_key_missing without APP_ENCRYPTION_KEY. The
// endpoint GitHub calls, POST /hooks/github/<appPublicId>, is in hook.ts. A project's issue queue as the
// server keeps it, GET /api/projects/:projectId/queue (project viewers), is read by queue.ts.
import { randomUUID } from 'node:crypto';
import { deliveryList, githubAppAnswer, githubAppCreated, githubAppList, githubAppRotated } from '../../protocol/api/codehost.ts';
import type { GithubAppAnswer } from '../../protocol/api/codehost.ts';
import { projectQueue } from '../../protocol/api/queue.ts';
import { pullRecord as pullRecordAnswer } from '../../protocol/api/pull-record.ts';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Route } from '../lib/context.ts';
import type { Queryable } from '../lib/db/index.ts';
import { projectRoute } from '../lib/project-routes.ts';
import { json, notFound } from '../lib/errors.ts';
import { empty } from '../lib/respond.ts';
import { publicBase } from '../lib/urls.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { apiUrlFor, appRow, encryptPrivateKey, encryptWebhookSecret, newPublicId, newWebhookSecret, publicIdHash, settingsOf, toApp, toDelivery } from './apps.ts';
import type { AppRow } from './apps.ts';
import { routes as gitlabRoutes } from './gitlab-config.ts';
import { routes as gitlabHookRoutes } from './gitlab-hook.ts';
import { routes as hookRoutes } from './hook.ts';
import { readQueue } from './queue.ts';
import { pullRecord } from './record.ts';
import { deleteApp, insertApp, listApps, listDeliveries, projectRunner, setWebhookSecret, updateApp } from './queries.ts';
import { appCreate, appParams, appPatch, deliveryQuery, pullNumber } from './schema.ts';

const TAG = 'codehost';
const ADMIN = 'instanceAdmin' as const;
const NO_STORE = { 'cache-control': 'no-store' };

async function getRow(q: Queryable, appId: string, lock = false): Promise<AppRow> {
  const row = await appRow(q, appId, lock);
  if (!row) throw notFound('no such code-host app');
  return row;
}

const view = (ctx: AppContext, request: Request) => (r: AppRow): GithubAppAnswer => toApp(r, publicBase(ctx.config, request), ctx.keys.encryption);

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/github-apps', tag: TAG, access: ADMIN,
    summary: 'Registered GitHub Apps with their webhook URL (never their secrets)',
    responses: { 200: { description: 'the apps', schema: githubAppList } },
    async handler({ request }, ctx) {
      return json({ apps: (await listApps(ctx.db)).map(view(ctx, request)) });
    },
  }),
  route({ method: 'POST', path: '/api/github-apps', tag: TAG, access: ADMIN, status: 201,
    summary: 'Register a GitHub App: answers its webhook URL and webhook secret (this answer only); an optional private key is stored encrypted and never shown again',
    body: appCreate,
    responses: { 201: { description: 'the new app with its webhook URL and secret (this answer only)', schema: githubAppCreated } },
    async handler({ principal, body, requestId, request }, ctx) {
      const key = requireEncryptionKey(ctx);
      const id = randomUUID();
      const publicId = newPublicId();
      const webhookSecret = newWebhookSecret();
      const row = await audited(
        ctx.db,
        (r: AppRow) => ({ actor: principal!, action: 'github_app.create', target: { type: 'github_app', id: r.id }, diff: { after: settingsOf(r) }, requestId }),
        async (tx) => {
          await insertApp(tx, {
            id,
            name: body.name,
            githubAppId: body.githubAppId ?? null,
            publicId,
            publicIdHash: publicIdHash(publicId),
            webhookSecretCiphertext: encryptWebhookSecret(key, id, webhookSecret),
            privateKeyCiphertext: body.privateKey ? encryptPrivateKey(key, id, body.privateKey) : null,
            createdBy: principal!.user.id,
            apiUrl: apiUrlFor(body),
          });
          return getRow(tx, id);
        },
      );
      const app = view(ctx, request)(row);
      return json({ app, appPublicId: app.appPublicId, webhookUrl: app.webhookUrl, webhookSecret }, { status: 201, headers: NO_STORE });
    },
  }),
  route({ method: 'GET', path: '/api/github-apps/:appId', tag: TAG, access: ADMIN, params: appParams,
    summary: 'One GitHub App with its webhook URL (never its secrets)',
    responses: { 200: { description: 'the app', schema: githubAppAnswer } },
    handler: async ({ params, request }, ctx) => json(view(ctx, request)(await getRow(ctx.db, params.appId))),
  }),
  route({ method: 'PATCH', path: '/api/github-apps/:appId', tag: TAG, access: ADMIN, params: appParams,
    summary: 'Edit a GitHub App: name, App ID, or its private key (replaced, or removed with null; never shown)',
    body: appPatch,
    responses: { 200: { description: 'the app as saved', schema: githubAppAnswer } },
    async handler({ principal, params, body, requestId, request }, ctx) {
      const key = body.privateKey ? requireEncryptionKey(ctx) : null;
      const { after } = await audited(
        ctx.db,
        (r: { before: AppRow; after: AppRow }) => ({ actor: principal!, action: 'github_app.update', target: { type: 'github_app', id: params.appId }, diff: { before: settingsOf(r.before), after: settingsOf(r.after) }, requestId }),
        async (tx) => {
          const before = await getRow(tx, params.appId, true);
          const pem = body.privateKey === undefined ? before.private_key_ciphertext : body.privateKey === null ? null : encryptPrivateKey(key!, params.appId, body.privateKey);
          await updateApp(tx, params.appId, {
            name: body.name ?? before.name,
            githubAppId: body.githubAppId === undefined ? before.github_app_id : body.githubAppId,
            privateKeyCiphertext: pem,
            apiUrl: apiUrlFor(body, before),
          });
          return { before, after: await getRow(tx, params.appId) };
        },
      );
      return json(view(ctx, request)(after));
    },
  }),
  route({ method: 'POST', path: '/api/github-apps/:appId/rotate', tag: TAG, access: ADMIN, params: appParams,
    summary: "Rotate the webhook secret: the new one is in this answer only and replaces the old one at once (enter it in the GitHub App's settings)",
    responses: { 200: { description: 'the app and its new webhook secret (this answer only)', schema: githubAppRotated } },
    async handler({ principal, params, requestId, request }, ctx) {
      const key = requireEncryptionKey(ctx);
      const webhookSecret = newWebhookSecret();
      const row = await audited(ctx.db, { actor: principal!, action: 'github_app.rotate', target: { type: 'github_app', id: params.appId }, requestId }, async (tx) => {
        await getRow(tx, params.appId, true);
        await setWebhookSecret(tx, params.appId, encryptWebhookSecret(key, params.appId, webhookSecret));
        return getRow(tx, params.appId);
      });
      return json({ app: view(ctx, request)(row), webhookSecret }, { headers: NO_STORE });
    },
  }),
  route({ method: 'DELETE', path: '/api/github-apps/:appId', tag: TAG, access: ADMIN, status: 204, params: appParams,
    summary: 'Delete a GitHub App, its secrets and its delivery log; its webhook URL answers 404 from now on',
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, (r: AppRow) => ({ actor: principal!, action: 'github_app.delete', target: { type: 'github_app', id: params.appId }, diff: { before: settingsOf(r) }, requestId }), async (tx) => {
        const before = await getRow(tx, params.appId, true);
        await deleteApp(tx, params.appId);
        return before;
      });
      return empty(204);
    },
  }),
  route({ method: 'GET', path: '/api/github-apps/:appId/deliveries', tag: TAG, access: ADMIN, params: appParams,
    summary: "The app's webhook deliveries (14 days), newest first: delivery id, event, action, repository, outcome, and each collector.poll's answer",
    query: deliveryQuery,
    responses: { 200: { description: 'the deliveries, newest first', schema: deliveryList } },
    async handler({ params, query }, ctx) {
      await getRow(ctx.db, params.appId);
      return json({ deliveries: (await listDeliveries(ctx.db, params.appId, query.limit)).map(toDelivery) });
    },
  }),
  projectRoute('viewer', { method: 'GET', path: '/queue', tag: TAG,
    summary: "The project's issue queue as the server keeps it (App deliveries, the runner's polls and issues.refresh answers): each open issue with the slot working on it now",
    responses: { 200: { description: "the project's issue queue", schema: projectQueue } },
    async handler({ params }, ctx) {
      const runnerId = await projectRunner(ctx.db, params.projectId);
      if (runnerId === undefined) throw notFound('no such project');
      return json(await readQueue(ctx.db, params.projectId, runnerId));
    },
  }),
  projectRoute('viewer', { method: 'GET', path: '/pulls/:number/record', tag: TAG, params: { number: pullNumber },
    summary:
      "A pull request's record (project viewers): its issue, the agent sessions and skill runs that made it with their cost and tokens, " +
      'each approval (who, and how: page, link or api) and the merge with the checks at that moment, and the audit record of each step with its hash in the chain',
    responses: { 200: { description: 'the record', schema: pullRecordAnswer }, 404: { description: 'no such project for you, or a pull request svc has not seen in it' } },
    async handler({ params }, ctx) {
      const record = await pullRecord(ctx.db, params.projectId, params.number, new Date(ctx.clock.now()));
      if (!record) throw notFound('no such pull request in this project');
      return json(record, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  ...hookRoutes,
  ...gitlabRoutes,
  ...gitlabHookRoutes,
];
