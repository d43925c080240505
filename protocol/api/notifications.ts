// Answers of the notifications API (spec: Notifications): the shapes functions/notifications/routes.ts
// sends (declared in its `responses`, so CHECK_ANSWERS holds the handlers to them) and
// web-static/pages/notifications.ts reads (type imports only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { circuitState, iso } from './common.ts';
import { notificationAction } from './act.ts';

/** A notification with `read` for the caller. */
export const notificationAnswer = z.object({
  id: z.string(),
  kind: z.string(),
  runnerId: z.string().nullable(),
  projectId: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
  createdAt: iso,
  read: z.boolean(),
  /** The decisions it asks for, each with a link minted for the caller (functions/act/; none without APP_ENCRYPTION_KEY). */
  actions: z.array(notificationAction),
});
export type NotificationAnswer = z.output<typeof notificationAnswer>;

/** GET /api/notifications: newest first, and the caller's unread count. */
export const notificationList = z.object({ notifications: z.array(notificationAnswer), unread: z.number().int() });
export type NotificationList = z.output<typeof notificationList>;

/** POST /api/notifications/read: how many were marked now, and what is left unread. */
export const notificationsMarked = z.object({ marked: z.number().int(), unread: z.number().int() });
export type NotificationsMarked = z.output<typeof notificationsMarked>;

/** A chat channel (never its secrets): Slack shows its webhook's origin only, Telegram the Bot API base URL. */
export const channelAnswer = z.object({
  id: z.string(),
  type: z.enum(['slack', 'telegram']),
  name: z.string().nullable(),
  url: z.string(),
  chatId: z.string().nullable(),
  ...circuitState,
  /** While open: when the pause ends and one push is tried again. */
  pausedUntil: iso.nullable(),
  secretProblem: z.string().nullable(),
  createdAt: iso.nullable(),
});
export type ChannelAnswer = z.output<typeof channelAnswer>;

/** GET /api/notifications/channels. */
export const channelList = z.object({ channels: z.array(channelAnswer) });
export type ChannelList = z.output<typeof channelList>;
