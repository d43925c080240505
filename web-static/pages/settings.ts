// The admin Settings page: the encryption key of stored secrets (set or not, where it comes from, its
// fingerprint — never the key — and what to back up). Each secret is entered where it is used (a GitHub
// App, a chat channel, a webhook, a trigger), which also says when it no longer decrypts.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api.ts';
import { CopyBlock } from '../components.ts';
import type { Me } from '../session.ts';
import type { EncryptionKeyStatus } from '../../protocol/api/settings.ts';
import { GithubApps } from './github-app.ts';
import { ChatChannels } from './notifications.ts';
import { Retention, Tokens, Users } from './users.ts';

type KeyStatus = EncryptionKeyStatus;

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

/** Everyone: their own API tokens. Instance admins also: the key, users, prices, retention, chat, GitHub Apps. */
export function Settings({ me }: { me: Me }) {
  return me.user.instanceAdmin ? html`<${InstanceSettings} me=${me} />` : html`<${Tokens} />`;
}

function InstanceSettings({ me }: { me: Me }) {
  const [key, setKey] = useState<KeyStatus | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<KeyStatus>('/api/settings/encryption-key')
      .then((k) => (setKey(k), setError(null)))
      .catch((e) => setError(errorText(e)));
  }, []);
  if (error) return html`<p class="failed" role="alert">Could not load the settings: ${error}</p>`;
  if (!key) return html`<p class="muted">Loading…</p>`;
  return html`<${EncryptionKey} k=${key} />
    <${Users} me=${me} />
    <${Tokens} />
    <section class="card prices-link"><h3>Prices</h3><p>The price table that turns tokens into cost is on <a href="#/cost">Cost</a> (per model, with its history).</p></section>
    <${Retention} />
    <${ChatChannels} />
    <${GithubApps} />`;
}
