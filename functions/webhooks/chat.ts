// Chat channels for notifications (spec: Notifications; Stored secrets "chat bot token"): Slack
// incoming webhooks and the Telegram Bot API. A channel is a row of `webhooks` with kind 'slack' or
// 'telegram' (sql/0013), so its pushes are outbound deliveries that the webhook worker attempts with
// the same guard, retries and circuit (functions/webhooks/worker.ts). What differs is only here: the
// URL (it carries the credential, so it is built from the decrypted secret at attempt time and never
// stored or logged in clear) and the body (rendered when the notification is made: notifications/notify.ts).
// Here, beside the worker that sends them, so the webhooks area needs nothing of notifications/.

export type ChannelKind = 'webhook' | 'slack' | 'telegram';
export type ChatKind = Exclude<ChannelKind, 'webhook'>;

export const TELEGRAM_DEFAULT_BASE_URL = 'https://api.telegram.org';
export const CHAT_HEADERS: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'svc-notifications' };

/** Where a push goes: Slack's webhook URL is the secret itself; Telegram's is base + /bot<token>/sendMessage. */
export function chatUrl(kind: ChatKind, storedUrl: string, secret: string): URL {
  if (kind === 'slack') return new URL(secret);
  return new URL(`${storedUrl.replace(/\/+$/, '')}/bot${secret}/sendMessage`);
}

/** What the channel list shows of a Slack webhook URL: its origin only (the path is the credential). */
export const slackDisplayUrl = (webhookUrl: string) => `${new URL(webhookUrl).origin}/…`;

/** The JSON body of one push. */
export function chatBody(kind: ChatKind, text: string, chatId: string | null): string {
  if (kind === 'slack') return JSON.stringify({ text });
  return JSON.stringify({ chat_id: chatId, text, disable_web_page_preview: true });
}
