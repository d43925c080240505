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

/** A link button under a push (an action link, functions/act/). */
export interface ChatButton {
  text: string;
  url: string;
}

/** Slack's mrkdwn needs &, < and > escaped (https://api.slack.com/reference/surfaces/formatting#escaping). */
const slackEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The JSON body of one push. With buttons: Slack gets Block Kit (a section with the text, then an
 * `actions` block of `button` elements with `url`), Telegram an inline keyboard of URL buttons
 * (`reply_markup.inline_keyboard` of `{text, url}`); and the plain text keeps each link on its own line,
 * for clients that show neither (Slack's `text` is the notification fallback).
 */
export function chatBody(kind: ChatKind, text: string, chatId: string | null, buttons: ChatButton[] = []): string {
  const plain = buttons.length ? `${text}\n${buttons.map((b) => `${b.text}: ${b.url}`).join('\n')}` : text;
  if (kind === 'slack') {
    if (!buttons.length) return JSON.stringify({ text });
    return JSON.stringify({
      text: plain,
      blocks: [
        { type: 'section', text: { type: 'mrkdwn', text: slackEscape(text) } },
        { type: 'actions', elements: buttons.map((b, i) => ({ type: 'button', action_id: `svc-act-${i}`, text: { type: 'plain_text', text: b.text }, url: b.url })) },
      ],
    });
  }
  return JSON.stringify({
    chat_id: chatId,
    text: plain,
    disable_web_page_preview: true,
    ...(buttons.length ? { reply_markup: { inline_keyboard: [buttons.map((b) => ({ text: b.text, url: b.url }))] } } : {}),
  });
}
