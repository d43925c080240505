// The admin Integrations area (spec: Admin management of triggers and webhooks): outbound webhooks
// (docs/webhooks.md): add a webhook (its secret shown once), rotate, send test, resume deliveries,
// delete, the delivery log with redeliver, and the address allowlist; then inbound triggers
// (pages/triggers.ts, docs/triggers.md). Each webhook's circuit state shows in the spec's words
// (circuitLabel: "Delivering", "Delivery paused (receiver failing)", "Trying the receiver again") and
// follows the live `webhook` notices; Resume deliveries is offered while it is not closed.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { actions, api, errorText, when } from '../api.ts';
import { CopyBlock } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import { Triggers } from './triggers.ts';
import { RecoverDeliveries } from './webhook-recover.ts';
import type { Me } from '../session.ts';
import type { EventEnvelope } from '../../protocol/api/events.ts';
import type { AllowlistAnswer, CatalogueAnswer, DeliveryAnswer as Delivery, DeliveryList, WebhookAnswer as Webhook, WebhookList, WebhookWithSecret } from '../../protocol/api/webhooks.ts';

type CatalogueEntry = CatalogueAnswer['events'][number];

const message = errorText;

/** A delivery's event (GET /api/events/:eventId): the envelope, read when opened. */
function EventView({ id }: { id: string }) {
  const [body, setBody] = useState<string | null>(null);
  const toggle = (e: Event) => {
    if (!(e.currentTarget as HTMLDetailsElement).open || body !== null) return;
    api<EventEnvelope>(`/api/events/${encodeURIComponent(id)}`)
      .then((env) => setBody(JSON.stringify(env, null, 2)))
      .catch((err) => setBody(message(err)));
  };
  return html`<details class="event" data-event=${id} onToggle=${toggle}><summary class="muted">${id}</summary><pre class="body">${body ?? 'Loading…'}</pre></details>`;
}

function Deliveries({ hook, onError }: { hook: Webhook; onError: (m: string) => void }) {
  const [rows, setRows] = useState<Delivery[] | null>(null);
  const load = () =>
    api<DeliveryList>(`/api/webhooks/${hook.id}/deliveries?limit=50`)
      .then((r) => setRows(r.deliveries))
      .catch((e) => onError(message(e)));
  useEffect(() => {
    void load();
    const t = setInterval(load, 5000); // attempts happen in the background: keep the log current while it is open
    return () => clearInterval(t);
  }, [hook.id]);
  const redeliver = async (d: Delivery) => {
    await api(`/api/webhooks/${hook.id}/deliveries/${d.id}/redeliver`, { method: 'POST' }).catch((e) => onError(message(e)));
    await load();
  };
  if (!rows) return html`<p class="muted">Loading deliveries…</p>`;
  if (rows.length === 0) return html`<p class="muted">No deliveries in the last 30 days.</p>`;
  return html`<div class="scroll"><table class="deliveries">
    <thead><tr><th>Event</th><th>Status</th><th>Attempts</th><th>Next attempt</th><th>Response</th><th></th></tr></thead>
    <tbody>
      ${rows.map(
        (d) => html`<tr data-delivery=${d.id}>
          <td>${d.event}<div class="muted">${when(d.createdAt)}</div>${d.eventId && html`<${EventView} id=${d.eventId} />`}</td>
          <td><span class=${d.status === 'delivered' ? 'ok' : d.status === 'failed' ? 'failed' : 'running'}>${d.status}</span>
            ${d.lastError && html`<div class="muted">${d.lastError}</div>`}</td>
          <td>${d.attempts}</td>
          <td>${when(d.nextAttemptAt)}</td>
          <td>${d.responseCode ?? '—'}${d.responseBody && html`<pre class="body">${d.responseBody}</pre>`}</td>
          <td>${d.status === 'failed' && html`<button class="secondary" onClick=${() => redeliver(d)}>Redeliver</button>`}</td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

function Allowlist({ onError }: { onError: (m: string | null) => void }) {
  const [text, setText] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    api<AllowlistAnswer>('/api/webhooks/allowlist')
      .then((r) => setText(r.allowlist))
      .catch((e) => onError(message(e)));
  }, []);
  const save = async (ev: Event) => {
    ev.preventDefault();
    setSaved(false);
    try {
      const r = await api<AllowlistAnswer>('/api/webhooks/allowlist', { method: 'PUT', body: { allowlist: text ?? '' } });
      setText(r.allowlist);
      setSaved(true);
      onError(null); // an older banner is stale once a save succeeded
    } catch (e) {
      onError(message(e));
    }
  };
  if (text === null) return null;
  return html`<form class="card allowlist" onSubmit=${save}>
    <h3>Address allowlist</h3>
    <p class="muted">Host names and CIDRs, one per line. Listed hosts may use <code>http://</code> and private or loopback addresses; everything else must be <code>https://</code> to a public address.</p>
    <textarea name="allowlist" rows="4" value=${text} onInput=${(e: Event) => setText((e.target as HTMLTextAreaElement).value)}></textarea>
    <button>Save allowlist</button> ${saved && html`<span class="ok" role="status">Saved</span>`}
  </form>`;
}

export function Integrations({ me }: { me?: Me }) {
  const [hooks, setHooks] = useState<Webhook[] | null>(null);
  const [catalogue, setCatalogue] = useState<CatalogueEntry[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const load = () =>
    api<WebhookList>('/api/webhooks')
      .then((r) => setHooks(r.webhooks))
      .catch((e) => setError(message(e)));
  useEffect(() => {
    void load();
    api<CatalogueAnswer>('/api/webhooks/catalogue')
      .then((r) => setCatalogue(r.events.filter((e) => e.subscribable)))
      .catch((e) => setError(message(e)));
  }, []);
  // A circuit opening, trying the receiver again or closing (any replica's worker, or Resume) is a notice.
  useLiveRefetch('webhook', load);

  const act = actions(setError, load, () => setNotice(null));
  const add = (ev: Event) =>
    act(async () => {
      ev.preventDefault();
      const form = ev.target as HTMLFormElement;
      const data = new FormData(form);
      const events = data.getAll('events').map(String);
      const made = await api<WebhookWithSecret>('/api/webhooks', { method: 'POST', body: { url: String(data.get('url')).trim(), events } });
      setSecret({ url: made.url, secret: made.secret });
      form.reset();
    });
  const rotate = (h: Webhook) =>
    act(async () => {
      if (!confirm(`Rotate the secret of ${h.url}? Signing switches to the new secret at once.`)) return;
      const r = await api<WebhookWithSecret>(`/api/webhooks/${h.id}/rotate`, { method: 'POST' });
      setSecret({ url: h.url, secret: r.secret });
    });
  const sendTest = (h: Webhook) =>
    act(async () => {
      await api(`/api/webhooks/${h.id}/test`, { method: 'POST' });
      setNotice(`A webhook.test event is on its way to ${h.url}.`);
      setOpen(h.id);
    });
  const resume = (h: Webhook) => act(() => api(`/api/webhooks/${h.id}/resume`, { method: 'POST' }));
  const remove = (h: Webhook) =>
    act(async () => {
      if (!confirm(`Delete the webhook to ${h.url} and its delivery log?`)) return;
      await api(`/api/webhooks/${h.id}`, { method: 'DELETE' });
    });

  return html`
    <h3>Outbound webhooks</h3>
    ${secret &&
    html`<div class="card notice secret" role="status">
      Signing secret for <strong>${secret.url}</strong> — copy it now, it is not shown again:
      <${CopyBlock} text=${secret.secret} label="Signing secret" />
      <button class="secondary" onClick=${() => setSecret(null)}>I have copied it</button>
    </div>`}
    ${notice && html`<p class="ok" role="status">${notice}</p>`}
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    <form class="card add-webhook" onSubmit=${add}>
      <label>Receiver URL <input name="url" type="url" required maxlength="2048" placeholder="https://hooks.example.com/svc" /></label>
      <fieldset>
        <legend>Events</legend>
        ${catalogue.map(
          (c) => html`<label class="check" title=${c.description}><input type="checkbox" name="events" value=${c.type} /> ${c.type}</label>`,
        )}
      </fieldset>
      <button>Add webhook</button>
    </form>
    ${!hooks
      ? html`<p class="muted">Loading…</p>`
      : hooks.length === 0
        ? html`<p class="muted">No webhooks yet.</p>`
        : html`<div class="scroll"><table class="webhooks">
            <thead><tr><th>Receiver</th><th>Delivery</th><th></th></tr></thead>
            <tbody>
              ${hooks.map(
                (h) => html`<tr data-webhook=${h.url}>
                    <td><strong>${h.url}</strong><div class="muted">${h.events.join(', ')}</div>
                      ${h.secretProblem && html`<div class="failed secret-problem" title=${h.secretProblem}>Secret unavailable — rotate <span class="muted">(${h.secretProblem})</span></div>`}</td>
                    <td><span class=${h.circuit === 'closed' ? 'ok' : h.circuit === 'open' ? 'failed' : 'running'}>${h.circuitLabel}</span>
                      ${h.pausedUntil && html`<div class="muted">until ${when(h.pausedUntil)}</div>`}</td>
                    <td class="actions">
                      <button class="secondary" onClick=${() => sendTest(h)}>Send test</button>
                      <button class="secondary" onClick=${() => setOpen(open === h.id ? null : h.id)}>Deliveries</button>
                      <button class="secondary" onClick=${() => rotate(h)}>Rotate secret</button>
                      ${h.circuit !== 'closed' && html`<button onClick=${() => resume(h)}>Resume deliveries</button>`}
                      <button class="secondary" onClick=${() => remove(h)}>Delete</button>
                    </td>
                  </tr>
                  ${open === h.id && html`<tr><td colspan="3"><${RecoverDeliveries} hook=${h} /><${Deliveries} hook=${h} onError=${setError} /></td></tr>`}`,
              )}
            </tbody>
          </table></div>`}
    <${Allowlist} onError=${setError} />
    <h3>Inbound triggers</h3>
    <${Triggers} me=${me} />
  `;
}
