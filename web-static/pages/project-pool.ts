// A project's pool on the Projects page (issue #37; docs/runner.md "Runner pools"): its primary runner and
// the other runners that take its pool-target skill runs, each with its own clone (root path and whether
// the runner confirmed it), status, tags, capacity and whether it takes pool runs at all (an older
// svc-runner does not). Instance admins add a runner with the root of its clone, change that root
// (the same form) and remove one; everyone who sees the project reads the list.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Alert, Badge, FieldError, useAction } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import type { Me } from '../session.ts';
import type { PoolRunnerList, PoolRunnerView } from '../../protocol/api/projects.ts';
import type { RunnerView } from '../../protocol/api/runners.ts';

const capacity = (r: PoolRunnerView) => (r.maxConcurrentRuns === null ? '—' : `${r.runningRuns ?? 0} of ${r.maxConcurrentRuns} runs`);
const rootTone = (s: PoolRunnerView['rootState']) => (s === 'ok' ? 'ok' : s === 'failed' ? 'failed' : 'warn');

export function Pool({ me, projectId, runners }: { me: Me; projectId: string; runners: RunnerView[] }) {
  const [pool, setPool] = useState<PoolRunnerView[] | null>(null);
  const { error, fields, busy, run } = useAction();
  const load = () => api<PoolRunnerList>(`/api/projects/${projectId}/runners`).then((p) => setPool(p.runners));
  useEffect(() => void load().catch(() => setPool([])), [projectId]);
  // Only on a change of the pool itself: a refetch after any project notice could land after the project
  // was deleted (its section still open for a moment) and ask for a pool that is gone (a 404).
  useLiveRefetch((n) => n.type === 'project' && n.projectId === projectId && n.change === 'pool', () => load().catch(() => {}), [projectId]);
  const admin = me.user.instanceAdmin;
  const inPool = new Set((pool ?? []).map((r) => r.runnerId));
  const candidates = runners.filter((r) => !inPool.has(r.id) && r.status !== 'revoked' && r.status !== 'unpaired');
  const put = (runnerId: string, rootPath: string) =>
    run(async () => {
      await api(`/api/projects/${projectId}/runners/${runnerId}`, { method: 'PUT', body: { rootPath } });
      await load();
      return true;
    });
  const add = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    return put(String(f.get('runnerId') ?? ''), String(f.get('rootPath') ?? '').trim()).then((ok) => ok && form.reset());
  };
  const change = (r: PoolRunnerView) => {
    const rootPath = prompt(`Root of the clone on ${r.name}`, r.rootPath ?? '');
    if (rootPath !== null) void put(r.runnerId, rootPath.trim());
  };
  const remove = (r: PoolRunnerView) => {
    if (!confirm(`Remove ${r.name} from the pool? It gets no new runs of this project; the runs it holds go on.`)) return;
    return run(async () => (await api(`/api/projects/${projectId}/runners/${r.runnerId}`, { method: 'DELETE' }), await load()));
  };
  return html`<section class="card pool" aria-labelledby="pool-h">
    <h3 id="pool-h">Runner pool</h3>
    <p class="muted">Skill runs of a trigger or schedule whose target is <em>pool</em> go to any online runner here with a free place and the tags they ask for,
      least loaded first. Each runner needs its own clone of the repository.</p>
    ${pool === null
      ? html`<p class="muted">Loading…</p>`
      : html`<div class="scroll"><table><thead><tr><th>Runner</th><th>Status</th><th>Tags</th><th>Root</th><th>Capacity</th>${admin && html`<th><span class="muted">Actions</span></th>`}</tr></thead><tbody>
          ${pool.map(
            (r) => html`<tr data-pool-runner=${r.name}>
              <td><strong>${r.name}</strong>${r.primary && html` <${Badge} text="primary" tone="muted" />`}
                ${!r.takesPoolRuns && html`<div class="muted">takes no pool runs (update svc-runner)</div>`}</td>
              <td><span class=${r.status === 'online' ? 'ok' : 'failed'}>${r.status}</span></td>
              <td>${r.tags.length ? r.tags.map((t) => html`<${Badge} text=${t} tone="muted" />`) : html`<span class="muted">none</span>`}</td>
              <td><code>${r.rootPath ?? '—'}</code> <${Badge} text=${r.rootState} tone=${rootTone(r.rootState)} />${r.rootMessage && html`<div class="muted">${r.rootMessage}</div>`}</td>
              <td>${capacity(r)}</td>
              ${admin &&
              html`<td class="actions">${!r.primary &&
                html`<button type="button" class="secondary" onClick=${() => change(r)} disabled=${busy}>Change root</button>
                  <button type="button" class="secondary danger" onClick=${() => remove(r)} disabled=${busy} aria-label=${`Remove ${r.name} from the pool`}>Remove</button>`}</td>`}
            </tr>`,
          )}</tbody></table></div>`}
    ${admin &&
    (candidates.length
      ? html`<form class="inline add-pool-runner" onSubmit=${add}>
          <label>Runner <select name="runnerId">${candidates.map((r) => html`<option value=${r.id}>${r.name || r.hostname || r.id} (${r.status})</option>`)}</select></label>
          <label>Root of its clone <input name="rootPath" required placeholder="/home/ci/app" /><${FieldError} fields=${fields} name="rootPath" /></label>
          <button disabled=${busy}>Add to pool</button>
        </form>`
      : html`<p class="muted">Every paired runner is in the pool already. Add one on <a href="#/runners">Runners</a>.</p>`)}
    <${Alert} error=${error} />
  </section>`;
}
