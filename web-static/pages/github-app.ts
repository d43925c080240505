// Settings → GitHub App (docs/github-app.md): register a GitHub App (name, App ID, private key), its
// webhook URL and secret shown once in a dialog to paste into the app's settings on GitHub; the list
// with each app's webhook URL, whether its secrets decrypt, its last deliveries; edit (App ID, private
// key, API URL), Check (does the key work: the App's installations, and with a repository whether a token
// for it can be had — its installation and expiry, never the token), rotate and delete.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { CopyBlock, FieldError } from '../components.ts';
import { useManagedList } from '../managed-list.ts';
import type { DeliveryAnswer, DeliveryList, GithubAppAnswer, GithubAppCreated, GithubAppList, GithubAppRotated } from '../../protocol/api/codehost.ts';
import type { GithubAppCheck } from '../../protocol/api/github-app-check.ts';

type GithubApp = GithubAppAnswer;
/** GitHub's REST API, the server's default when an app's API URL is left empty. */
const DEFAULT_API_URL = 'https://api.github.com';
const GHES_API_URL = 'https://<host>/api/v3';
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

/** The check's answer: the key works and where the App is installed, the repository's token, or GitHub's error. */
function CheckResult({ result }: { result: GithubAppCheck }) {
  const accounts = result.installations.map((i) => i.account ?? `installation ${i.id}`);
  const repo = result.repository;
  return html`<div class="github-app-check" data-ok=${String(result.ok)} role="status">
    ${result.error
      ? html`<div class="failed">${result.error.message}</div>`
      : html`<div class="ok">Key works</div>`}
    ${(result.ok || accounts.length > 0) && html`<div class="muted">${accounts.length ? `Installed on: ${accounts.join(', ')}` : 'Not installed anywhere yet'}</div>`}
    ${repo && html`<div class="github-app-check-repo">Token for ${repo.repo}: installation ${repo.installationId}, expires ${when(repo.tokenExpiresAt)}${repo.minted ? '' : ' (cached)'}</div>`}
  </div>`;
}

/** Check: signs a JWT and lists the App's installations; with a repository, also gets and tries its token. */
function CheckApp({ appId }: { appId: string }) {
  const [result, setResult] = useState<GithubAppCheck | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const check = async (ev: Event) => {
    ev.preventDefault();
    const repo = String(new FormData(ev.target as HTMLFormElement).get('repo') ?? '').trim();
    setBusy(true);
    setFailed(null);
    setResult(null);
    try {
      setResult(await api<GithubAppCheck>(`/api/github-apps/${appId}/check${repo ? `?repo=${encodeURIComponent(repo)}` : ''}`));
    } catch (e) {
      setFailed(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="check-github-app" onSubmit=${check}>
    <input name="repo" placeholder="owner/name (optional)" aria-label="Repository to try a token on (optional)" autocomplete="off" />
    <button type="submit" class="secondary" disabled=${busy}>${busy ? 'Checking…' : 'Check'}</button>
    ${failed && html`<div class="failed github-app-check">${failed}</div>`}
    ${result && html`<${CheckResult} result=${result} />`}
  </form>`;
}

/** Name, App ID, private key and API URL of a registered app; an empty key field keeps the stored key. */
function EditApp({ app, onSaved, onError }: { app: GithubApp; onSaved: () => void; onError: (e: unknown) => void }) {
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const save = async (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.target as HTMLFormElement);
    const v = (k: string) => String(form.get(k) ?? '').trim();
    const body: Record<string, unknown> = { name: v('name'), githubAppId: v('githubAppId') ? Number(v('githubAppId')) : null };
    if (v('apiUrl')) body.apiUrl = v('apiUrl');
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
      <label>API URL (GitHub Enterprise Server: ${GHES_API_URL}) <input name="apiUrl" inputmode="url" spellcheck="false" placeholder=${DEFAULT_API_URL} value=${app.apiUrl} /></label><${FieldError} fields=${fields} name="apiUrl" />
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
    const body = { name: v('name'), ...(v('githubAppId') ? { githubAppId: Number(v('githubAppId')) } : {}), ...(v('privateKey') ? { privateKey: `${v('privateKey')}\n` } : {}), ...(v('apiUrl') ? { apiUrl: v('apiUrl') } : {}) };
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
              <td>${a.name}${a.githubAppId !== null && html`<div class="muted">App ID ${a.githubAppId}</div>`}${a.apiUrl !== DEFAULT_API_URL && html`<div class="muted">API ${a.apiUrl}</div>`}</td>
              <td><code>${a.webhookUrl}</code></td>
              <td>${a.webhookSecretProblem ? html`<span class="failed">Secret unavailable — rotate</span>` : html`<span class="ok">Webhook secret set</span>`}
                <div class=${a.privateKeyProblem ? 'failed' : 'muted'}>${a.privateKeyProblem ? 'Private key unavailable — enter it again' : a.privateKeySet ? 'Private key set' : 'No private key'}</div></td>
              <td><${Deliveries} appId=${a.id} /></td>
              <td><button type="button" class="secondary" onClick=${() => rotate(a)}>Rotate secret</button>
                <button type="button" class="secondary" onClick=${() => remove(a)}>Delete</button>
                <${CheckApp} appId=${a.id} />
                <${EditApp} app=${a} onSaved=${() => void load()} onError=${(e: unknown) => setError(errorText(e))} /></td>
            </tr>`,
          )}</tbody></table></div>`)}
    <form class="card add-github-app" onSubmit=${add}>
      <label>Name <input name="name" required maxlength="100" /></label><${FieldError} fields=${fields} name="name" />
      <label>App ID <input name="githubAppId" inputmode="numeric" pattern="[0-9]*" /></label><${FieldError} fields=${fields} name="githubAppId" />
      <label>Private key (PEM, optional) <textarea name="privateKey" rows="4" autocomplete="off" spellcheck="false" placeholder="-----BEGIN RSA PRIVATE KEY-----"></textarea></label><${FieldError} fields=${fields} name="privateKey" />
      <label>API URL (empty: ${DEFAULT_API_URL}; GitHub Enterprise Server: ${GHES_API_URL}) <input name="apiUrl" inputmode="url" spellcheck="false" placeholder=${DEFAULT_API_URL} /></label><${FieldError} fields=${fields} name="apiUrl" />
      <button type="submit">Register GitHub App</button>
    </form>
  </section>`;
}
