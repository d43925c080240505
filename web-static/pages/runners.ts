// The admin Runners page (spec: "shows each runner's status with a remedy when offline").
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, when } from '../api.ts';

interface Runner {
  id: string;
  name: string;
  hostname: string;
  version: string;
  status: 'online' | 'offline' | 'unpaired' | 'revoked';
  lastSeenAt: string | null;
  remedy: string | null;
}

export function Runners() {
  const [runners, setRunners] = useState<Runner[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pairing, setPairing] = useState<{ name: string; code: string; expiresAt: string } | null>(null);
  const load = () =>
    api<{ runners: Runner[] }>('/api/runners')
      .then((r) => setRunners(r.runners))
      .catch((e) => setError(e.message));
  useEffect(() => {
    void load();
    const t = setInterval(load, 10_000);
    return () => clearInterval(t);
  }, []);

  const add = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const name = String(new FormData(form).get('name'));
    try {
      const made = await api<{ code: string; expiresAt: string }>('/api/runners', { method: 'POST', body: { name } });
      setPairing({ name, code: made.code, expiresAt: made.expiresAt });
      form.reset();
      await load();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };
  const revoke = async (r: Runner) => {
    if (!confirm(`Revoke ${r.name}? Its token stops working at once.`)) return;
    await api(`/api/runners/${r.id}`, { method: 'DELETE' }).catch((e) => setError(e.message));
    await load();
  };

  return html`
    <form class="inline" onSubmit=${add}>
      <input name="name" placeholder="Machine name" required maxlength="100" aria-label="Machine name" />
      <button>Add runner</button>
    </form>
    ${pairing &&
    html`<div class="card notice" role="status">
      Pairing code for <strong>${pairing.name}</strong>: <code class="code">${pairing.code}</code>
      (valid until ${when(pairing.expiresAt)}). On the machine (Node.js 20 or newer), install the runner and pair it:
      <pre>curl -fsSL ${location.origin}/svc-runner.mjs -o ~/.local/bin/svc-runner && chmod +x ~/.local/bin/svc-runner
svc-runner pair --server ${location.origin} --code ${pairing.code}
svc-runner install-service</pre>
    </div>`}
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    ${!runners
      ? html`<p class="muted">Loading…</p>`
      : runners.length === 0
        ? html`<p class="muted">No runners yet. Add one, then pair it on the agent machine.</p>`
        : html`<table>
            <thead><tr><th>Runner</th><th>Status</th><th>Last seen</th><th></th></tr></thead>
            <tbody>
              ${runners.map(
                (r) => html`<tr data-runner=${r.name}>
                  <td><strong>${r.name}</strong><div class="muted">${r.hostname} ${r.version}</div></td>
                  <td><span class=${r.status === 'online' ? 'ok' : r.status === 'offline' ? 'failed' : 'muted'}>${r.status}</span>
                    ${r.remedy && html`<div class="muted remedy">${r.remedy}</div>`}</td>
                  <td>${when(r.lastSeenAt)}</td>
                  <td>${r.status !== 'revoked' && html`<button class="secondary" onClick=${() => revoke(r)}>Revoke</button>`}</td>
                </tr>`,
              )}
            </tbody>
          </table>`}`;
}
