// Notifications in the pages (spec: Notifications): the bell in the header with the caller's unread
// count, and the list it opens (#/notifications): newest first, mark one or all read. Read state is the
// caller's own (GET /api/notifications, POST /api/notifications/read). The chat channels an instance
// admin configures are a section of the Settings page (ChatChannels below).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { notificationText } from '../../protocol/notification-text.ts';
import { FieldError } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import { useManagedList } from '../managed-list.ts';
import type { ChannelAnswer, ChannelList, NotificationAnswer, NotificationList } from '../../protocol/api/notifications.ts';

type Notification = NotificationAnswer;

/** Fired after marking read, so the bell updates at once. */
const CHANGED = 'svc-notifications-changed';
const POLL_MS = 120_000; // a safety net: new notifications and read state arrive live

/** The bell as an inline SVG: an emoji needs an emoji font, and shows as an empty box without one. */
const BELL = html`<svg class="bell-icon" aria-hidden="true" width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">
  <path d="M18 8a6 6 0 0 0-12 0c0 7-3 9-3 9h18s-3-2-3-9" /><path d="M13.73 21a2 2 0 0 1-3.46 0" /></svg>`;

export function NotificationBell() {
  const [unread, setUnread] = useState<number | null>(null);
  const load = () => api<NotificationList>('/api/notifications?limit=1').then((l) => setUnread(l.unread), () => {});
  useLiveRefetch(['notification', 'notification.read'], load);
  useEffect(() => {
    load();
    const timer = setInterval(load, POLL_MS);
    addEventListener(CHANGED, load);
    return () => (clearInterval(timer), removeEventListener(CHANGED, load));
  }, []);
  const label = unread ? `Notifications, ${unread} unread` : 'Notifications';
  return html`<a class="bell" href="#/notifications" aria-label=${label} title=${label}>
    ${BELL}${unread ? html`<span class="badge" data-unread=${unread}>${unread > 99 ? '99+' : unread}</span>` : null}
  </a>`;
}

export function Notifications() {
  const [list, setList] = useState<NotificationList | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    api<NotificationList>('/api/notifications?limit=200')
      .then((l) => (setList(l), setError(null)))
      .catch((e) => setError(errorText(e)));
  useEffect(() => void load(), []);
  useLiveRefetch(['notification', 'notification.read'], load);
  const mark = async (body: { ids: string[] } | { all: true }) => {
    try {
      await api('/api/notifications/read', { method: 'POST', body });
      dispatchEvent(new Event(CHANGED));
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };
  if (error) return html`<p class="failed" role="alert">Could not load the notifications: ${error}</p>`;
  if (!list) return html`<p class="muted">Loading…</p>`;
  return html`<p class="notifications-summary">
      <span class="unread-count">${list.unread} unread</span>
      ${list.unread > 0 && html` <button type="button" class="secondary mark-all" onClick=${() => mark({ all: true })}>Mark all read</button>`}
    </p>
    ${list.notifications.length === 0
      ? html`<p class="muted">No notifications.</p>`
      : html`<ul class="notifications">
          ${list.notifications.map(
            (n) => html`<li class=${n.read ? 'read' : 'unread'} data-notification=${n.id} data-kind=${n.kind}>
              <span class="when">${when(n.createdAt)}</span>
              <span class="text">${notificationText({ kind: n.kind, projectName: (n.data.projectName as string) ?? null, data: n.data })}</span>
              ${n.actions.map((a) => html`<a class="button act-link" href=${a.url}>${a.label}</a>`)}
              ${n.read ? html`<span class="muted">Read</span>` : html`<button type="button" class="link mark-one" onClick=${() => mark({ ids: [n.id] })}>Mark read</button>`}
            </li>`,
          )}
        </ul>`}`;
}

// Chat channels (Settings) -------------------------------------------------------------------------

type Channel = ChannelAnswer;

export function ChatChannels() {
  const { items: channels, error, setError, fields, load, create } = useManagedList('/api/notifications/channels', (r: ChannelList) => r.channels);
  const [type, setType] = useState<'slack' | 'telegram'>('slack');
  const add = async (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.target as HTMLFormElement);
    const v = (k: string) => String(form.get(k) ?? '').trim();
    const body =
      type === 'slack'
        ? { type, webhookUrl: v('webhookUrl'), ...(v('name') ? { name: v('name') } : {}) }
        : { type, botToken: v('botToken'), chatId: v('chatId'), ...(v('apiBaseUrl') ? { apiBaseUrl: v('apiBaseUrl') } : {}), ...(v('name') ? { name: v('name') } : {}) };
    await create(ev.target as HTMLFormElement, body);
  };
  const remove = async (c: Channel) => {
    if (!confirm(`Remove the ${c.type} channel${c.name ? ` ${c.name}` : ''}?`)) return;
    await api(`/api/notifications/channels/${c.id}`, { method: 'DELETE' }).catch((e) => setError(errorText(e)));
    await load();
  };
  return html`<h3>Chat channels</h3>
    <p class="muted">Every notification is also pushed to these channels, through the same address guard, retries and circuit as outbound webhooks. Tokens and webhook URLs are stored encrypted and never shown again.</p>
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    ${channels &&
    (channels.length === 0
      ? html`<p class="muted">No chat channels.</p>`
      : html`<div class="scroll"><table class="chat-channels">
          <thead><tr><th>Channel</th><th>Where</th><th>State</th><th></th></tr></thead>
          <tbody>${channels.map(
            (c) => html`<tr data-channel=${c.id}>
              <td>${c.type === 'slack' ? 'Slack' : 'Telegram'}${c.name ? html` — ${c.name}` : ''}</td>
              <td><code>${c.url}</code>${c.chatId && html` chat <code>${c.chatId}</code>`}</td>
              <td>${c.secretProblem ? html`<span class="failed">${c.secretProblem}</span>` : c.circuitLabel}</td>
              <td><button type="button" class="secondary" onClick=${() => remove(c)}>Remove</button></td>
            </tr>`,
          )}</tbody></table></div>`)}
    <form class="card add-channel" onSubmit=${add}>
      <label>Type <select name="type" value=${type} onChange=${(e: Event) => setType((e.target as HTMLSelectElement).value as 'slack' | 'telegram')}>
        <option value="slack">Slack incoming webhook</option><option value="telegram">Telegram bot</option></select></label>
      <label>Name <input name="name" maxlength="100" /></label>
      ${type === 'slack'
        ? html`<label>Webhook URL <input name="webhookUrl" type="url" required autocomplete="off" /></label><${FieldError} fields=${fields} name="webhookUrl" />`
        : html`<label>Bot token <input name="botToken" type="password" required autocomplete="off" /></label><${FieldError} fields=${fields} name="botToken" />
            <label>Chat id <input name="chatId" required /></label><${FieldError} fields=${fields} name="chatId" />
            <label>Bot API base URL <input name="apiBaseUrl" type="url" placeholder="https://api.telegram.org" /></label><${FieldError} fields=${fields} name="apiBaseUrl" />`}
      <button type="submit">Add channel</button>
    </form>`;
}
