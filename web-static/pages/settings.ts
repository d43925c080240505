// The admin Settings page: the encryption key of stored secrets (set or not, where it comes from, its
// fingerprint — never the key — and what to back up) and whether each instance secret decrypts with it.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { CopyBlock } from '../components.ts';
import type { Me } from '../session.ts';
import type { EncryptionKeyStatus, SecretList, SecretStatusAnswer } from '../../protocol/api/settings.ts';
import { GithubApps } from './github-app.ts';
import { ChatChannels } from './notifications.ts';
import { Retention, Tokens, Users } from './users.ts';

type KeyStatus = EncryptionKeyStatus;
type SecretStatus = SecretStatusAnswer;

function EncryptionKey({ k }: { k: KeyStatus }) {
  if (!k.set) {
    return html`<div class="card encryption-key" data-key-source="none">
      <h3>Encryption key</h3>
      <p class="failed">Not set: secrets cannot be stored. Set <code>APP_ENCRYPTION_KEY</code> (generate one with <code>openssl rand -base64 32</code>) and restart.</p>
    </div>`;
  }
  return html`<div class="card encryption-key" data-key-source=${k.source}>
    <h3>Encryption key</h3>
    <p><span class="ok">Set</span> — ${k.source === 'file' ? html`generated on first start, read from the file:` : html`from the <code>APP_ENCRYPTION_KEY</code> environment variable.`}</p>
    ${k.path && html`<${CopyBlock} text=${k.path} label="Key file" />`}
    <p>Fingerprint: <code class="fingerprint">${k.fingerprint}</code> <span class="muted">(stored secrets carry it; the key itself is never shown)</span></p>
    ${k.backup && html`<p class="notice backup"><strong>${k.backup[0].toUpperCase()}${k.backup.slice(1)}.</strong></p>`}
  </div>`;
}

/** Everyone: their own API tokens. Instance admins also: the key, instance secrets, users, prices, retention, chat. */
export function Settings({ me }: { me: Me }) {
  return me.user.instanceAdmin ? html`<${InstanceSettings} me=${me} />` : html`<${Tokens} />`;
}

function InstanceSettings({ me }: { me: Me }) {
  const [key, setKey] = useState<KeyStatus | null>(null);
  const [secrets, setSecrets] = useState<SecretStatus[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    Promise.all([api<KeyStatus>('/api/settings/encryption-key'), api<SecretList>('/api/secrets')])
      .then(([k, s]) => (setKey(k), setSecrets(s.secrets), setError(null)))
      .catch((e) => setError(errorText(e)));
  }, []);
  if (error) return html`<p class="failed" role="alert">Could not load the settings: ${error}</p>`;
  if (!key || !secrets) return html`<p class="muted">Loading…</p>`;
  return html`<${EncryptionKey} k=${key} />
    <h3>Instance secrets</h3>
    <div class="scroll"><table class="secrets">
      <thead><tr><th>Secret</th><th>Status</th><th>Updated</th></tr></thead>
      <tbody>
        ${secrets.map(
          (s) => html`<tr data-secret=${s.name}>
            <td><code>${s.name}</code><div class="muted">${s.description}</div></td>
            <td>${!s.configured
              ? html`<span class="muted">Not set</span>`
              : s.decryptable
                ? html`<span class="ok">Set</span>`
                : html`<span class="failed">Secret unavailable — enter it again</span><div class="muted">${s.problem}</div>`}</td>
            <td>${when(s.updatedAt)}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>
    <${Users} me=${me} />
    <${Tokens} />
    <section class="card prices-link"><h3>Prices</h3><p>The price table that turns tokens into cost is on <a href="#/cost">Cost</a> (per model, with its history).</p></section>
    <${Retention} />
    <${ChatChannels} />
    <${GithubApps} />`;
}
