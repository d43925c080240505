// Settings → GitHub App (docs/github-app.md): register a GitHub App (name, App ID, private key), its
// webhook URL and secret shown once in a dialog to paste into the app's settings on GitHub; the list
// with each app's webhook URL, whether its secrets decrypt, its last deliveries; edit (App ID, private
// key), rotate and delete.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { CopyBlock, FieldError } from '../components.ts';
import { useManagedList } from '../managed-list.ts';
import type { DeliveryAnswer, DeliveryList, GithubAppAnswer, GithubAppCreated, GithubAppList, GithubAppRotated } from '../../protocol/api/codehost.ts';

type GithubApp = GithubAppAnswer;
type Delivery = DeliveryAnswer;
interface Shown {
  app: GithubApp;
  webhookSecret: string;
  rotated: boolean;
}

/** The webhook secret, once, in a modal dialog with the URL it belongs to. */
function SecretDialog({ shown, onDone }: { shown: Shown; onDone: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal?.();
  }, []);
  return html`<dialog ref=${ref} class="card github-app-secret" aria-labelledby="github-app-secret-title" onClose=${onDone}>
    <h3 id="github-app-secret-title">${shown.rotated ? 'New webhook secret' : 'GitHub App registered'}: ${shown.app.name}</h3>
    <p>Copy the secret now — it is not shown again. In the app's settings on GitHub, set:</p>
    <${CopyBlock} text=${shown.app.webhookUrl} label="Webhook URL" />
    <${CopyBlock} text=${shown.webhookSecret} label="Webhook secret" />
    ${shown.rotated && html`<p class="notice">The old secret stops working now: deliveries signed with it get 401 until GitHub has the new one.</p>`}
    <form method="dialog"><button type="submit">Done</button></form>
  </dialog>`;
}

function Deliveries({ appId }: { appId: string }) {
  const [rows, setRows] = useState<Delivery[] | null>(null);
  useEffect(() => {
    api<DeliveryList>(`/api/github-apps/${appId}/deliveries?limit=10`)
      .then((r) => setRows(r.deliveries))
      .catch(() => setRows([]));
  }, [appId]);
  if (!rows) return null;
  if (!rows.length) return html`<div class="muted">No deliveries yet.</div>`;
  return html`<ul class="github-app-deliveries">${rows.map(
    (d) => html`<li data-delivery=${d.deliveryId}>${when(d.createdAt)} <code>${d.event}${d.action ? `.${d.action}` : ''}</code> ${d.repo ?? ''} — ${d.outcome}</li>`,
  )}</ul>`;
}

/** Name, App ID and private key of a registered app; an empty key field keeps the stored key. */
function EditApp({ app, onSaved, onError }: { app: GithubApp; onSaved: () => void; onError: (e: unknown) => void }) {
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const save = async (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.target as HTMLFormElement);
    const v = (k: string) => String(form.get(k) ?? '').trim();
    const body: Record<string, unknown> = { name: v('name'), githubAppId: v('githubAppId') ? Number(v('githubAppId')) : null };
    if (form.get('removeKey')) body.privateKey = null;
    else if (v('privateKey')) body.privateKey = `${v('privateKey')}\n`;
    try {
      await api(`/api/github-apps/${app.id}`, { method: 'PATCH', body });
      setFields(null);
      onSaved();
    } catch (e) {
      setFields((e as { fields?: Record<string, string> }).fields ?? null);
      onError(e);
    }
  };
  return html`<details class="edit-github-app"><summary>Edit</summary>
    <form onSubmit=${save}>
      <label>Name <input name="name" required maxlength="100" value=${app.name} /></label><${FieldError} fields=${fields} name="name" />
      <label>App ID <input name="githubAppId" inputmode="numeric" pattern="[0-9]*" value=${app.githubAppId ?? ''} /></label><${FieldError} fields=${fields} name="githubAppId" />
      <label>New private key (PEM; empty keeps the stored one) <textarea name="privateKey" rows="3" autocomplete="off" spellcheck="false"></textarea></label><${FieldError} fields=${fields} name="privateKey" />
      ${app.privateKeySet && html`<label><input type="checkbox" name="removeKey" /> Remove the stored private key</label>`}
      <button type="submit">Save</button>
    </form></details>`;
}

export function GithubApps() {
  const { items: apps, error, setError, fields, load, create } = useManagedList('/api/github-apps', (r: GithubAppList) => r.apps);
  const [shown, setShown] = useState<Shown | null>(null);
  const add = async (ev: Event) => {
    ev.preventDefault();
    const formEl = ev.target as HTMLFormElement;
    const form = new FormData(formEl);
    const v = (k: string) => String(form.get(k) ?? '').trim();
    const body = { name: v('name'), ...(v('githubAppId') ? { githubAppId: Number(v('githubAppId')) } : {}), ...(v('privateKey') ? { privateKey: `${v('privateKey')}\n` } : {}) };
    await create(formEl, body, (r: GithubAppCreated) => setShown({ app: r.app, webhookSecret: r.webhookSecret, rotated: false }));
  };
  const rotate = async (a: GithubApp) => {
    if (!confirm(`Rotate the webhook secret of ${a.name}? The old one stops working at once.`)) return;
    try {
      const r = await api<GithubAppRotated>(`/api/github-apps/${a.id}/rotate`, { method: 'POST' });
      setShown({ app: r.app, webhookSecret: r.webhookSecret, rotated: true });
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const remove = async (a: GithubApp) => {
    if (!confirm(`Delete ${a.name}? Its webhook URL answers 404 from now on.`)) return;
    await api(`/api/github-apps/${a.id}`, { method: 'DELETE' }).catch((e) => setError(errorText(e)));
    await load();
  };
  return html`<section class="github-apps">
    <h3>GitHub App</h3>
    <p class="muted">A GitHub App's webhooks make runners poll a repository's issues and pull requests at once instead of at their next interval (see docs/github-app.md). The webhook secret and the private key are stored encrypted and never shown again.</p>
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    ${shown && html`<${SecretDialog} shown=${shown} onDone=${() => setShown(null)} />`}
    ${apps &&
    (apps.length === 0
      ? html`<p class="muted">No GitHub App registered.</p>`
      : html`<div class="scroll"><table class="github-apps-list">
          <thead><tr><th>App</th><th>Webhook URL</th><th>Secrets</th><th>Recent deliveries</th><th></th></tr></thead>
          <tbody>${apps.map(
            (a) => html`<tr data-github-app=${a.id}>
              <td>${a.name}${a.githubAppId !== null && html`<div class="muted">App ID ${a.githubAppId}</div>`}</td>
              <td><code>${a.webhookUrl}</code></td>
              <td>${a.webhookSecretProblem ? html`<span class="failed">Secret unavailable — rotate</span>` : html`<span class="ok">Webhook secret set</span>`}
                <div class=${a.privateKeyProblem ? 'failed' : 'muted'}>${a.privateKeyProblem ? 'Private key unavailable — enter it again' : a.privateKeySet ? 'Private key set' : 'No private key'}</div></td>
              <td><${Deliveries} appId=${a.id} /></td>
              <td><button type="button" class="secondary" onClick=${() => rotate(a)}>Rotate secret</button>
                <button type="button" class="secondary" onClick=${() => remove(a)}>Delete</button>
                <${EditApp} app=${a} onSaved=${() => void load()} onError=${(e: unknown) => setError(errorText(e))} /></td>
            </tr>`,
          )}</tbody></table></div>`)}
    <form class="card add-github-app" onSubmit=${add}>
      <label>Name <input name="name" required maxlength="100" /></label><${FieldError} fields=${fields} name="name" />
      <label>App ID <input name="githubAppId" inputmode="numeric" pattern="[0-9]*" /></label><${FieldError} fields=${fields} name="githubAppId" />
      <label>Private key (PEM, optional) <textarea name="privateKey" rows="4" autocomplete="off" spellcheck="false" placeholder="-----BEGIN RSA PRIVATE KEY-----"></textarea></label><${FieldError} fields=${fields} name="privateKey" />
      <button type="submit">Register GitHub App</button>
    </form>
  </section>`;
}
