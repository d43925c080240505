// The admin Runners page (spec: "shows each runner's status with a remedy when offline"): add a runner
// (the name is optional: it takes the machine's hostname when it pairs) with the commands to run on the
// machine, pair a revoked one again, revoke, remove a never-paired or revoked one, and a detail view per
// runner (id, version, capabilities, projects, last events, and its profiles when it is online).
// A paired runner that reported no usable agent runtime (docs/runner.md, "Agent runtimes reported") is
// marked "no agent runtime" (amber) with the remedy; one that does not report them (older) says so.
// A runner older than the bundle this server serves (GET /svc-runner.mjs) is marked "update available",
// and its detail says how to update it. Tags (a pool target's targetTags pick runners by them) are edited
// in place, and a runner that reports its capacity shows "1 of 2 runs" (docs/runner.md "Runner pools").
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { NO_RUNTIME_REMEDY } from '../../protocol/start-reasons.ts';
import { Badge, CopyBlock, FieldError, PairingCommands, RichText, useAction } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import type { CommandDone, PairingCode, RunnerCreated, RunnerDetail as Detail, RunnerList, RunnerView } from '../../protocol/api/runners.ts';

type Runner = RunnerView;
interface CodeHostState {
  state: 'idle' | 'ok' | 'rate_limited' | 'backoff' | 'no_token';
  until: string | null;
  remaining: number | null;
  limit: number | null;
  lastError: string | null;
  apiUrl: string;
  lastPollAt: string | null;
}
interface Described {
  profiles: { id: string; runtime: string; found: boolean; authenticated: boolean }[];
  node: string;
  os: string;
  /** Runners with the code-host client (docs/runner.md, Code host). */
  codehost?: CodeHostState;
}

/** One line for the runner's code-host client: ok with its rate limit left, or why it waits. */
function codeHostText(c: CodeHostState): string {
  const left = c.remaining !== null && c.limit !== null ? `, ${c.remaining}/${c.limit} requests left` : '';
  switch (c.state) {
    case 'ok':
      return `ok (${c.apiUrl}${left}; last poll ${when(c.lastPollAt)})`;
    case 'rate_limited':
      return `rate limited until ${when(c.until)}`;
    case 'backoff':
      return `failing, retrying after ${when(c.until)}: ${c.lastError ?? ''}`;
    case 'no_token':
      return `no token: ${c.lastError ?? ''}`;
    default:
      return `idle (${c.apiUrl})`;
  }
}

const label = (r: Pick<Runner, 'name'>) => r.name || '(named after its hostname when it pairs)';
const paired = (r: Runner) => r.status === 'online' || r.status === 'offline';

/** "no agent runtime" with its remedy, or "agent runtime not reported" for an older runner; nothing when ready. */
function Runtime({ r }: { r: Runner }) {
  if (!paired(r) || r.agentRuntime === 'ready') return null;
  if (r.agentRuntime === 'unknown') return html`<div class="muted agent-runtime" data-runtime="unknown">agent runtime not reported (runner older than this server)</div>`;
  const found = r.profiles?.length ? `found but not signed in: ${r.profiles.map((p) => `${p.name} (${p.runtime})`).join(', ')}. ` : '';
  return html`<div class="agent-runtime" data-runtime="none"><${Badge} text="no agent runtime" tone="warn" />
    <div class="muted remedy">No run can start here. ${found}<${RichText} text=${NO_RUNTIME_REMEDY} /></div></div>`;
}

/** How to bring a runner up to the bundle this server serves (docs/runner.md: install again, restart). */
function UpdateHint({ version, bundleVersion }: { version: string; bundleVersion: string }) {
  const base = location.origin + location.pathname.replace(/\/[^/]*$/, '');
  return html`<div class="card notice update-hint" role="note">
    <p><strong>Update available:</strong> this server serves runner ${bundleVersion}; this one runs ${version}. On its machine, install it
      again, then restart its service (a Homebrew install: a formula made from the new bundle, then <code>brew upgrade</code>).</p>
    <${CopyBlock} label="Install the runner this server serves" text=${`curl -fsSL ${base}/install-runner.sh | sh`} />
  </div>`;
}

function RunnerDetail({ id, onClose }: { id: string; onClose: () => void }) {
  const [d, setD] = useState<Detail | null>(null);
  const [described, setDescribed] = useState<Described | string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<Detail>(`/api/runners/${id}`)
      .then((r) => {
        setD(r);
        if (r.status !== 'online') return setDescribed('Profiles are shown while the runner is online.');
        api<CommandDone<Described>>(`/api/runners/${id}/commands`, { method: 'POST', body: { name: 'runner.describe' } })
          .then((x) => setDescribed(x.data))
          .catch((e) => setDescribed(`Could not ask the runner: ${e.message}`));
      })
      .catch((e) => setError(e.message));
  }, [id]);
  if (error) return html`<p class="failed" role="alert">${error}</p>`;
  if (!d) return html`<p class="muted">Loading…</p>`;
  return html`<section class="card runner-detail" aria-label=${`Runner ${label(d)}`}>
    <h3>${label(d)} <button type="button" class="secondary" onClick=${onClose}>Close</button></h3>
    <dl>
      <dt>Id</dt><dd><code>${d.id}</code></dd>
      <dt>Status</dt><dd>${d.status}</dd>
      <dt>Machine</dt><dd>${d.hostname || '—'} ${d.target}</dd>
      <dt>Version</dt><dd>${d.version || '—'} ${d.updateAvailable && html`<${Badge} text="update available" tone="warn" />`}</dd>
      <dt>Capabilities</dt><dd>${d.capabilities.length ? d.capabilities.join(', ') : 'none'}</dd>
      <dt>Paired</dt><dd>${when(d.pairedAt)}</dd>
      <dt>Projects</dt><dd>${d.projects.length ? d.projects.map((p) => html`<div>${p.name} <code>${p.rootPath ?? ''}</code></div>`) : 'none'}</dd>
      ${d.poolProjects.length ? html`<dt>Pool member of</dt><dd>${d.poolProjects.map((p) => html`<div>${p.name} <code>${p.rootPath}</code></div>`)}</dd>` : null}
      <dt>Agent runtime</dt><dd class="reported-profiles">${
        d.profiles === null
          ? html`<span class="muted">not reported (runner older than this server)</span>`
          : d.profiles.length
            ? d.profiles.map((p) => html`<div>${p.name} (${p.runtime}) ${p.authenticated ? 'signed in' : html`<${Badge} text="not signed in" tone="warn" />`}</div>`)
            : html`<${Badge} text="no agent runtime" tone="warn" />`
      }${d.agentRuntime === 'none' && html`<div class="muted remedy"><${RichText} text=${NO_RUNTIME_REMEDY} /></div>`}</dd>
      <dt>Profiles</dt><dd class="profiles">${
        typeof described === 'string' || described === null
          ? html`<span class="muted">${described ?? 'Asking the runner…'}</span>`
          : described.profiles.length
            ? described.profiles.map((p) => html`<div>${p.id} (${p.runtime}) ${p.found ? '' : 'binary not found'} ${p.authenticated ? 'signed in' : 'not signed in'}</div>`)
            : 'none configured'
      }</dd>
      ${typeof described === 'object' && described?.codehost
        ? html`<dt>Code host</dt><dd class=${`codehost ${described.codehost.state}`}>${codeHostText(described.codehost)}</dd>`
        : null}
    </dl>
    ${d.updateAvailable && d.bundleVersion && html`<${UpdateHint} version=${d.version} bundleVersion=${d.bundleVersion} />`}
    <h4>Last events</h4>
    ${d.lastEvents.length
      ? html`<div class="scroll"><table class="events"><thead><tr><th>Kind</th><th>Source</th><th>Time</th></tr></thead><tbody>
          ${d.lastEvents.map((e) => html`<tr><td>${e.kind}</td><td>${e.source}</td><td>${when(e.ts)}</td></tr>`)}
        </tbody></table></div>`
      : html`<p class="muted">No events yet.</p>`}
  </section>`;
}

/** Its capacity as reported: "1 of 2 runs" (null until the runner reports it: an older svc-runner). */
export const capacityText = (r: Pick<Runner, 'maxConcurrentRuns' | 'runningRuns'>): string | null =>
  r.maxConcurrentRuns === null ? null : `${r.runningRuns ?? 0} of ${r.maxConcurrentRuns} run${r.maxConcurrentRuns === 1 ? '' : 's'}`;

/** The runner's tags, and a small form to replace them (comma- or space-separated; the API says which is wrong). */
function Tags({ r, onSaved }: { r: Runner; onSaved: () => void }) {
  const [editing, setEditing] = useState(false);
  const { fields, error, busy, run } = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    const text = String(new FormData(e.target as HTMLFormElement).get('tags') ?? '');
    const tags = text.split(/[\s,]+/).filter(Boolean);
    return run(async () => {
      await api(`/api/runners/${r.id}`, { method: 'PATCH', body: { tags } });
      setEditing(false);
      onSaved();
    });
  };
  if (!editing) {
    return html`<div class="tags">${r.tags.map((t) => html`<${Badge} text=${t} tone="muted" />`)}
      <button type="button" class="link" onClick=${() => setEditing(true)} aria-label=${`Edit tags of ${label(r)}`}>${r.tags.length ? 'edit' : 'add tags'}</button></div>`;
  }
  return html`<form class="inline tags-form" onSubmit=${save}>
    <input name="tags" defaultValue=${r.tags.join(', ')} aria-label=${`Tags of ${label(r)}`} placeholder="gpu, linux" />
    <button disabled=${busy}>Save tags</button> <button type="button" class="secondary" onClick=${() => setEditing(false)}>Cancel</button>
    <${FieldError} fields=${fields} name="tags" />${error && html`<div class="failed">${error}</div>`}
  </form>`;
}

export function Runners() {
  const [runners, setRunners] = useState<Runner[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pairing, setPairing] = useState<{ name: string; code: string; expiresAt: string } | null>(null);
  const [warnings, setWarnings] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const load = () =>
    api<RunnerList>('/api/runners')
      .then((r) => setRunners(r.runners))
      .catch((e) => setError(e.message));
  useEffect(() => {
    void load();
    const t = setInterval(load, 60_000); // a safety net: online/offline flips arrive live
    return () => clearInterval(t);
  }, []);
  useLiveRefetch('runner', load);

  const act = async (work: () => Promise<unknown>) => {
    try {
      await work();
      setError(null); // an old error must not stay on the page after a success
    } catch (err) {
      setError(errorText(err));
    }
    await load();
  };
  const add = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const name = String(new FormData(form).get('name')).trim();
    return act(async () => {
      const made = await api<RunnerCreated>('/api/runners', { method: 'POST', body: { name } });
      setPairing({ name: name || 'a new runner', code: made.code, expiresAt: made.expiresAt });
      setWarnings(made.warnings);
      form.reset();
    });
  };
  const pairAgain = (r: Runner) =>
    act(async () => {
      const made = await api<PairingCode>(`/api/runners/${r.id}/pairing-code`, { method: 'POST' });
      setPairing({ name: r.name, code: made.code, expiresAt: made.expiresAt });
    });
  const revoke = (r: Runner) => {
    if (!confirm(`Revoke ${label(r)}? Its token stops working at once.`)) return;
    return act(() => api(`/api/runners/${r.id}`, { method: 'DELETE' }));
  };
  const remove = (r: Runner) => {
    if (!confirm(`Remove ${label(r)} from the list? Its pairing codes stop working.`)) return;
    return act(async () => {
      await api(`/api/runners/${r.id}`, { method: 'DELETE' });
      if (open === r.id) setOpen(null);
    });
  };

  return html`
    <form class="inline" onSubmit=${add}>
      <input name="name" placeholder="Machine name (optional: its hostname)" maxlength="100" aria-label="Machine name" />
      <button>Add runner</button>
    </form>
    ${pairing && html`<${PairingCommands} ...${pairing} />`}
    ${warnings.map((w) => html`<p class="running" role="note">${w}</p>`)}
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    ${open && html`<${RunnerDetail} id=${open} onClose=${() => setOpen(null)} />`}
    ${!runners
      ? html`<p class="muted">Loading…</p>`
      : runners.length === 0
        ? html`<p class="muted">No runners yet. Add one, then pair it on the agent machine.</p>`
        : html`<div class="scroll"><table>
            <thead><tr><th>Runner</th><th>Status</th><th>Tags</th><th>Last seen</th><th></th></tr></thead>
            <tbody>
              ${runners.map(
                (r) => html`<tr data-runner=${r.name}>
                  <td><button type="button" class="link-dark" onClick=${() => setOpen(r.id)} aria-label=${`Details of ${label(r)}`}><strong>${label(r)}</strong></button><div class="muted">${r.hostname} ${r.version}</div>
                    ${r.updateAvailable && html`<${Badge} text="update available" tone="warn" />`}</td>
                  <td><span class=${r.status === 'online' ? 'ok' : r.status === 'offline' ? 'failed' : 'muted'}>${r.status}</span>
                    ${r.remedy && html`<div class="muted remedy"><${RichText} text=${r.remedy} /></div>`}
                    <${Runtime} r=${r} />
                    ${capacityText(r) && html`<div class="muted capacity">${capacityText(r)}</div>`}</td>
                  <td><${Tags} r=${r} onSaved=${load} /></td>
                  <td>${when(r.lastSeenAt)}</td>
                  <td class="actions">${r.status === 'revoked'
                    ? html`<button class="secondary" onClick=${() => pairAgain(r)}>Pair again</button>`
                    : r.status === 'unpaired'
                    ? html`<button class="secondary" onClick=${() => pairAgain(r)}>New pairing code</button>`
                    : html`<button class="secondary" onClick=${() => revoke(r)}>Revoke</button>`}
                    ${(r.status === 'revoked' || r.status === 'unpaired') && html`<button class="secondary" onClick=${() => remove(r)}>Remove</button>`}</td>
                </tr>`,
              )}
            </tbody>
          </table></div>`}
    <p class="muted doctor-hint">A runner that does not come online or misbehaves: run <code>svc-runner doctor</code> on its machine. It checks the
      configuration, the pairing, the server and its token, tmux, git and the agent CLIs, and names what is wrong (docs/runner.md).</p>`;
}
