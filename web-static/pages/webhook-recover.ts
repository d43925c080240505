// "Recover failed deliveries" of one webhook (docs/webhooks.md, issue #39): a date picker for `since`
// (at most 14 days back, a day ago unless changed) and a button; the answer says how many deliveries
// were queued again with their original delivery ids. Shown above the webhook's delivery log
// (pages/integrations.ts), whose own refresh then shows them pending.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Alert, FieldError, useAction } from '../components.ts';
import type { RecoverAnswer, WebhookAnswer } from '../../protocol/api/webhooks.ts';

const DAY_MS = 24 * 3600_000;
/** A time as the value of <input type="datetime-local">: local time, to the minute. */
const localInput = (ms: number) => {
  const d = new Date(ms);
  return new Date(ms - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

export function RecoverDeliveries({ hook }: { hook: WebhookAnswer }) {
  const [since, setSince] = useState(() => localInput(Date.now() - DAY_MS));
  const [queued, setQueued] = useState<number | null>(null);
  const { error, fields, busy, run } = useAction();
  const submit = (ev: Event) => {
    ev.preventDefault();
    setQueued(null);
    void run(async () => {
      const r = await api<RecoverAnswer>(`/api/webhooks/${hook.id}/recover`, { method: 'POST', body: { since: new Date(since).toISOString() } });
      setQueued(r.queued);
    });
  };
  const now = Date.now();
  return html`<form class="recover-deliveries" onSubmit=${submit}>
    <label>Failed since <input type="datetime-local" name="since" required value=${since}
      min=${localInput(now - 14 * DAY_MS)} max=${localInput(now)} onInput=${(e: Event) => setSince((e.target as HTMLInputElement).value)} /></label>
    <button class="secondary" disabled=${busy}>Recover failed deliveries</button>
    ${queued !== null && html`<span class="ok" role="status">${queued === 1 ? '1 delivery' : `${queued} deliveries`} queued again</span>`}
    <${FieldError} fields=${fields} name="since" />
    <${Alert} error=${error} />
  </form>`;
}
