// Chat channels for notifications (spec: Notifications; Stored secrets "chat bot token"): Slack
// incoming webhooks and the Telegram Bot API. A channel is a row of `webhooks` with kind 'slack' or
// 'telegram' (sql/0013), so its pushes are outbound deliveries that the webhook worker attempts with
// the same guard, retries and circuit (functions/webhooks/worker.ts). What differs is only here: the
// URL (it carries the credential, so it is built from the decrypted secret at attempt time and never
// stored or logged in clear) and the body (rendered when the notification is made).

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

export interface NotificationText {
  kind: string;
  projectName?: string | null;
  data: Record<string, unknown>;
}

const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');

/** One line of plain text per notification (no pane text ever reaches a notification's data). */
export function notificationText(n: NotificationText): string {
  const d = n.data;
  const where = n.projectName ? ` [${n.projectName}]` : '';
  switch (n.kind) {
    case 'runner.offline':
      return `Runner ${str(d.name) || str(d.runnerId)} has been offline since ${str(d.lastSeenAt)}`;
    case 'budget.threshold':
      return `Budget${where}: ${str(d.threshold)} % reached (${str(d.costUsd)} of ${str(d.budgetUsd)} USD this month)${d.stopped ? '; new runs are stopped' : ''}`;
    case 'pane.quota_hit':
      return `Quota hit${where}: a session of ${str(d.provider) || 'its provider'} reached its usage limit${d.resetsAt ? `; resets at ${str(d.resetsAt)}` : ''}`;
    case 'person.needed':
      return `A person is needed${where}${d.question ? `: ${str(d.question)}` : d.summary ? `: ${str(d.summary)}` : ''}`;
    case 'audit.verification_failed':
      return `Audit log verification failed (${str(d.problem)}${d.firstBrokenSeq ? `, first broken record ${str(d.firstBrokenSeq)}` : ''})`;
    case 'run.start_failed':
      return `A run did not start${where}: ${str(d.source)} ${str(d.sourceName)}${d.skill ? ` (skill ${str(d.skill)})` : ''}: ${str(d.words) || str(d.reason)}${d.remedy ? `. ${str(d.remedy)}` : ''}`;
    case 'schedule.disabled':
      return `Schedule ${str(d.schedule)} disabled itself${where}${d.reason ? `: ${str(d.reason)}` : ''}`;
    default:
      return `${n.kind}${where}`;
  }
}

/** The JSON body of one push. */
export function chatBody(kind: ChatKind, text: string, chatId: string | null): string {
  if (kind === 'slack') return JSON.stringify({ text });
  return JSON.stringify({ chat_id: chatId, text, disable_web_page_preview: true });
}
