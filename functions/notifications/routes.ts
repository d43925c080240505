// Notifications for people (spec: Notifications): the list with read state per user, marking read,
// and the chat channels an instance admin configures (chat.ts). Who sees what: instance admins see
// every notification; a project's admins see those of their projects (project_id set). Marking read
// acts only on notifications the caller sees: other ids (someone else's, or none at all) are ignored
// rather than refused, so the answer does not tell which ids exist; `marked` counts what changed.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { channelAnswer, channelList, notificationList, notificationsMarked } from '../../protocol/api/notifications.ts';
import type { ChannelAnswer } from '../../protocol/api/notifications.ts';
import { audited } from '../audit/audit.ts';
import { auditedDelete } from '../lib/admin-routes.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { encryptSecret } from '../lib/crypto.ts';
import { publish } from '../live/publish.ts';
import { publicBase } from '../lib/urls.ts';
import { linkKey, notificationLinks, storedActions } from '../act/tokens.ts';
import type { Queryable } from '../lib/db/index.ts';
import { badRequest, json, notFound } from '../lib/errors.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { compileAllowlist, staticRefusal } from '../webhooks/guard.ts';
import { webhookUrl } from '../webhooks/routes.ts';
import { loadAllowlist, resumeCircuit, secretAad, toWebhook, wake } from '../webhooks/webhooks.ts';
import { TELEGRAM_DEFAULT_BASE_URL, slackDisplayUrl } from '../webhooks/chat.ts';
import { channelRow as findChannel, deleteChannel, insertChannel, listChannels, listNotifications, markRead, unreadCount } from './queries.ts';
import type { ChannelRow } from './queries.ts';

const iso = (d: Date | string) => new Date(d).toISOString();

const notificationId = z.string().regex(/^[1-9][0-9]{0,17}$/, { message: 'must be a notification id' });
const readBody = z
  .strictObject({
    ids: z.array(notificationId).min(1, { message: 'name at least one notification' }).max(500).optional(),
    all: z.literal(true).optional(),
  })
  .superRefine((b, ctx) => {
    if ((b.ids === undefined) === (b.all === undefined)) ctx.addIssue({ code: 'custom', path: ['ids'], message: 'give either ids or all: true' });
  });

// Chat channels ------------------------------------------------------------------------------------

const channelParams = z.strictObject({ channelId: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a channel id' }) });
const name = z.string().trim().min(1).max(100).optional();
const TELEGRAM_ONLY = ['botToken', 'chatId', 'apiBaseUrl'] as const;
const channelCreate = z
  .strictObject({
    type: z.enum(['slack', 'telegram'], { message: 'must be slack or telegram' }),
    name,
    /** Slack: the incoming webhook's URL. */
    webhookUrl: webhookUrl.optional(),
    /** Telegram: the bot's token, the chat to write to, and the Bot API's base URL. */
    botToken: z.string().regex(/^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$/, { message: 'must be a Telegram bot token (digits:characters)' }).optional(),
    chatId: z.string().regex(/^(-?[0-9]{1,20}|@[A-Za-z0-9_]{5,64})$/, { message: 'must be a chat id (a number) or @channelname' }).optional(),
    apiBaseUrl: webhookUrl.optional(),
  })
  .superRefine((b, ctx) => {
    const need = (field: string, present: boolean) => present || ctx.addIssue({ code: 'custom', path: [field], message: `required for a ${b.type} channel` });
    const refuse = (field: string, present: boolean) => !present || ctx.addIssue({ code: 'custom', path: [field], message: `not used by a ${b.type} channel` });
    if (b.type === 'slack') {
      need('webhookUrl', b.webhookUrl !== undefined);
      for (const f of TELEGRAM_ONLY) refuse(f, b[f] !== undefined);
    } else {
      need('botToken', b.botToken !== undefined);
      need('chatId', b.chatId !== undefined);
      refuse('webhookUrl', b.webhookUrl !== undefined);
    }
  });

function toChannel(r: ChannelRow, key: Buffer | null): ChannelAnswer {
  const w = toWebhook(r, key);
  return {
    id: r.id,
    type: r.kind,
    name: r.name,
    /** Slack: the webhook's origin only (its path is the credential); Telegram: the Bot API base URL. */
    url: r.url,
    chatId: r.chat_id,
    circuit: w.circuit,
    circuitLabel: w.circuitLabel,
    consecutiveFailures: w.consecutiveFailures,
    pausedUntil: w.pausedUntil,
    secretProblem: w.secretProblem,
    createdAt: w.createdAt,
  };
}

async function channelRow(q: Queryable, id: string): Promise<ChannelRow> {
  const row = await findChannel(q, id);
  if (!row) throw notFound('no such chat channel');
  return row;
}

/** 400 naming the field when the address guard would refuse the URL at every attempt. */
async function requireAllowed(q: Queryable, field: string, url: string): Promise<void> {
  const why = staticRefusal(new URL(url), compileAllowlist(await loadAllowlist(q)));
  if (why) throw badRequest('invalid_body', `${field}: ${why}`, { [field]: why });
}

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/notifications', tag: 'notifications', access: 'user',
    summary: "Notifications, newest first, each with `read` for the caller and its `actions` with links minted for the caller (docs/notifications.md, Action links), and the caller's unread count: instance admins see all; a project's admins see its own",
    query: z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) }),
    responses: { 200: { description: "the notifications and the caller's unread count", schema: notificationList } },
    async handler({ principal, query, request }, ctx) {
      const user = principal!.user;
      const rows = await listNotifications(ctx.db, user, query.limit);
      const key = ctx.keys.encryption ? linkKey(ctx.keys.encryption) : null;
      const base = publicBase(ctx.config, request);
      return json({
        notifications: rows.map((n) => {
          // Each reader's own links (functions/act/tokens.ts): a link names the user it was made for.
          const { actions: _stored, ...data } = n.data;
          const actions = notificationLinks(key, base, user.id, { id: String(n.id), createdAt: n.created_at, actions: storedActions(n.data) });
          return { id: String(n.id), kind: n.kind, runnerId: n.runner_id, projectId: n.project_id, data, createdAt: iso(n.created_at), read: Boolean(n.read), actions };
        }),
        unread: await unreadCount(ctx.db, user),
      });
    },
  }),
  route({ method: 'POST', path: '/api/notifications/read', tag: 'notifications', access: 'user',
    summary: 'Mark notifications read for the caller: `{ids}` or `{all: true}`; ids the caller cannot see are ignored',
    body: readBody,
    responses: { 200: { description: 'how many were marked, and the unread count', schema: notificationsMarked } },
    async handler({ principal, body }, ctx) {
      const user = principal!.user;
      const marked = await markRead(ctx.db, user, body.all ? 'all' : (body.ids ?? []));
      // The caller's other pages update their bell.
      if (marked) await publish(ctx.db, { type: 'notification.read' }, { userId: user.id });
      return json({ marked, unread: await unreadCount(ctx.db, user) });
    },
  }),
  route({ method: 'GET', path: '/api/notifications/channels', tag: 'notifications', access: 'instanceAdmin',
    summary: 'Chat channels notifications are pushed to (Slack, Telegram), with their circuit state; never their secrets',
    responses: { 200: { description: 'the chat channels', schema: channelList } },
    async handler(_input, ctx) {
      const rows = await listChannels(ctx.db);
      return json({ channels: rows.map((r) => toChannel(r, ctx.keys.encryption)) });
    },
  }),
  route({ method: 'POST', path: '/api/notifications/channels', tag: 'notifications', access: 'instanceAdmin', status: 201,
    summary: 'Add a chat channel: a Slack incoming webhook URL, or a Telegram bot token and chat id (stored encrypted)',
    body: channelCreate,
    responses: { 201: { description: 'the new channel', schema: channelAnswer } },
    async handler({ principal, body, requestId }, ctx) {
      const key = requireEncryptionKey(ctx);
      const channelId = randomUUID();
      const [url, secret, chatId] =
        body.type === 'slack'
          ? [slackDisplayUrl(body.webhookUrl!), body.webhookUrl!, null]
          : [body.apiBaseUrl ?? TELEGRAM_DEFAULT_BASE_URL, body.botToken!, body.chatId!];
      const row = await audited(
        ctx.db,
        (r: ChannelRow) => ({ actor: principal!, action: 'notification_channel.create', target: { type: 'notification_channel', id: r.id }, diff: { after: { type: r.kind, name: r.name, url: r.url, chatId: r.chat_id } }, requestId }),
        async (tx) => {
          await requireAllowed(tx, body.type === 'slack' ? 'webhookUrl' : 'apiBaseUrl', body.type === 'slack' ? secret : url);
          await insertChannel(tx, {
            id: channelId,
            kind: body.type,
            name: body.name ?? null,
            url,
            chatId,
            secretCiphertext: encryptSecret(key, secret, secretAad(channelId)),
            createdBy: principal!.user.id,
          });
          return channelRow(tx, channelId);
        },
      );
      return json(toChannel(row, key), { status: 201 });
    },
  }),
  auditedDelete({
    path: '/api/notifications/channels/:channelId',
    summary: 'Remove a chat channel and its pending pushes',
    tag: 'notifications',
    params: channelParams,
    id: 'channelId',
    action: 'notification_channel.delete',
    targetType: 'notification_channel',
    missing: 'no such chat channel',
    remove: deleteChannel,
  }),
  route({ method: 'POST', path: '/api/notifications/channels/:channelId/resume', tag: 'notifications', access: 'instanceAdmin', params: channelParams,
    summary: "Resume pushes: close the chat channel's circuit by hand",
    responses: { 200: { description: 'the channel with its circuit closed', schema: channelAnswer } },
    async handler({ principal, params, requestId }, ctx) {
      await audited(
        ctx.db,
        (before: string) => ({ actor: principal!, action: 'notification_channel.resume', target: { type: 'notification_channel', id: params.channelId }, diff: { before, after: 'closed' }, requestId }),
        async (tx) => {
          const before = await resumeCircuit(tx, params.channelId, ['slack', 'telegram']);
          if (!before) throw notFound('no such chat channel');
          return before;
        },
      );
      await wake(ctx.db);
      return json(toChannel(await channelRow(ctx.db, params.channelId), ctx.keys.encryption));
    },
  }),
];
