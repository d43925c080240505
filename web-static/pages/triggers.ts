// The Inbound triggers section of the Integrations page (spec: Admin management of triggers and
// webhooks; docs/triggers.md): per project (only projects where the user is admin), create a trigger —
// its secret shown once with its URL, a signed sample call for the shell and a TypeScript/Node sender,
// all copyable — list with state and last delivery (its outcome in words when it started nothing), edit, enable/disable, rotate (new secret shown once;
// the old one keeps working 24 h), delete, dry run and the delivery log. The list refreshes every 5 s.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { actions, api, errorText, when } from '../api.ts';
import { CopyBlock } from '../components.ts';
import { curlScript, nodeSender, samplePayload } from '../trigger-snippets.ts';
import { DryRun, TriggerForm, TriggerLog, outcomeWords, statusClass } from './trigger-panels.ts';
import type { Trigger } from './trigger-panels.ts';
import type { Me } from '../session.ts';
import type { TriggerList, TriggerWithSecret } from '../../protocol/api/triggers.ts';
import type { ListedProject, ProjectList } from '../../protocol/api/projects.ts';

type Project = ListedProject;
interface Shown {
  trigger: Trigger;
  secret: string;
  rotated: boolean;
}
type Panel = { id: string; kind: 'edit' | 'dry' | 'log' };

/** The secret, once, with everything a caller needs to use it. */
function SecretNotice({ shown, onDone }: { shown: Shown; onDone: () => void }) {
  const { trigger: t, secret, rotated } = shown;
  const payload = samplePayload(t.allowedPaths, t.valuePattern);
  return html`<div class="card notice trigger-secret" role="status">
    <p>${rotated ? 'New signing secret' : 'Signing secret'} for <strong>${t.name}</strong> — copy it now, it is not shown again.
      ${rotated && html` The old secret keeps working for 24 h${t.previousSecretValidUntil ? ` (until ${when(t.previousSecretValidUntil)})` : ''}, then never.`}</p>
    <${CopyBlock} text=${secret} label="Signing secret" />
    <${CopyBlock} text=${t.url} label="Trigger URL" />
    <${CopyBlock} text=${curlScript(t.url, secret, payload)} label="Signed sample call (sh, openssl, curl)" />
    <${CopyBlock} text=${nodeSender(t.url, secret, payload)} label="TypeScript/Node sender (save as send-trigger.ts; npx tsx send-trigger.ts)" />
    <p class="muted">Each call needs a fresh <code>X-Svc-Delivery</code> id and a timestamp within 300 s; see docs/triggers.md.</p>
    <button class="secondary" onClick=${onDone}>I have copied it</button>
  </div>`;
}

const describe = (t: Trigger) =>
  t.action === 'skill' ? html`skill <code>${t.skill}</code> ${t.args.map((a) => html`<code>${a}</code> `)}<span class="muted">→ ${t.output === 'pull_request' ? 'pull request' : 'report'}</span>` : 'next orchestrator round';

function LastDelivery({ t }: { t: Trigger }) {
  const d = t.lastDelivery;
  if (!d) return html`<span class="muted">none yet</span>`;
  const words = outcomeWords(d);
  return html`<span class=${statusClass(d.status)}>${d.status}</span>${d.reason && html` <code>${d.reason}</code>`}${words && html`<div class="outcome-words">${words}</div>`}<div class="muted">${when(d.createdAt)}</div>`;
}

export function Triggers({ me }: { me?: Me }) {
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [projectId, setProjectId] = useState('');
  const [triggers, setTriggers] = useState<Trigger[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<Shown | null>(null);
  const [panel, setPanel] = useState<Panel | null>(null);
  const base = `/api/projects/${encodeURIComponent(projectId)}/triggers`;

  useEffect(() => {
    api<ProjectList>('/api/projects')
      .then((r) => {
        const mine = r.projects.filter((p) => p.role === 'admin');
        setProjects(mine);
        if (mine.length) setProjectId(mine[0].id);
      })
      .catch((e) => setError(errorText(e)));
  }, []);
  const load = () =>
    projectId
      ? api<TriggerList>(base)
          .then((r) => setTriggers(r.triggers))
          .catch((e) => setError(errorText(e)))
      : Promise.resolve();
  useEffect(() => {
    setTriggers(null);
    setPanel(null);
    void load();
    const t = setInterval(load, 5000); // deliveries change the last-delivery column by themselves
    return () => clearInterval(t);
  }, [projectId]);

  /** Run one action: an older banner goes once it succeeded; the list is reloaded either way. */
  const act = actions(setError, load);
  const create = async (body: Record<string, unknown>) => {
    const r = await api<TriggerWithSecret>(base, { method: 'POST', body });
    setError(null);
    setShown({ trigger: r.trigger, secret: r.secret, rotated: false });
    await load();
  };
  const edit = (t: Trigger) => async (body: Record<string, unknown>) => {
    await api(`${base}/${t.id}`, { method: 'PATCH', body });
    setError(null);
    setPanel(null);
    await load();
  };
  const toggle = (t: Trigger) => act(() => api(`${base}/${t.id}/${t.enabled ? 'disable' : 'enable'}`, { method: 'POST' }));
  const rotate = (t: Trigger) =>
    act(async () => {
      if (!confirm(`Rotate the secret of ${t.name}? The old secret keeps working for 24 hours, then never.`)) return;
      const r = await api<TriggerWithSecret>(`${base}/${t.id}/rotate`, { method: 'POST' });
      setShown({ trigger: r.trigger, secret: r.secret, rotated: true });
    });
  const remove = (t: Trigger) =>
    act(async () => {
      if (!confirm(`Delete the trigger ${t.name} and its delivery log? Its URL answers 404 from now on.`)) return;
      await api(`${base}/${t.id}`, { method: 'DELETE' });
      if (panel?.id === t.id) setPanel(null);
    });
  const open = (t: Trigger, kind: Panel['kind']) => setPanel(panel?.id === t.id && panel.kind === kind ? null : { id: t.id, kind });

  if (projects && projects.length === 0) {
    // An instance admin is admin of every project: no project here means none exists yet.
    return html`<p class="muted" role="note">${me?.user.instanceAdmin
        ? html`Triggers belong to a project, and there is no project yet. Create one on <a href="#/projects">Projects</a>.`
        : 'Triggers belong to a project, and you are not an admin of any project. An instance admin can make you one.'}</p>
      ${error && html`<p class="failed" role="alert">${error}</p>`}`;
  }
  const current = panel && triggers?.find((t) => t.id === panel.id);
  return html`<div class="triggers">
    <p class="muted">Other systems (CI, issue trackers, cron services) start a skill run or the next orchestrator round with a signed POST to a trigger's URL.</p>
    ${projects &&
    html`<label class="project-pick">Project
      <select name="trigger-project" value=${projectId} onChange=${(e: Event) => setProjectId((e.target as HTMLSelectElement).value)}>
        ${projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}
      </select></label>`}
    ${shown && html`<${SecretNotice} shown=${shown} onDone=${() => setShown(null)} />`}
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    ${!triggers
      ? html`<p class="muted">Loading…</p>`
      : triggers.length === 0
        ? html`<p class="muted">No triggers in this project yet.</p>`
        : html`<div class="scroll"><table class="triggers">
            <thead><tr><th>Trigger</th><th>State</th><th>Last delivery</th><th></th></tr></thead>
            <tbody>${triggers.map(
              (t) => html`<tr data-trigger=${t.name}>
                <td><strong>${t.name}</strong><div>${describe(t)}</div><code class="trigger-url">${t.url}</code></td>
                <td><span class=${t.enabled ? 'ok' : 'failed'}>${t.enabled ? 'Enabled' : 'Disabled'}</span>
                  ${t.disabledReason && html`<div class="muted">${t.disabledReason}</div>`}
                  ${t.previousSecretValidUntil && html`<div class="muted">old secret works until ${when(t.previousSecretValidUntil)}</div>`}
                  ${t.secretProblem && html`<div class="failed secret-problem" title=${t.secretProblem}>Secret unavailable — rotate</div>`}</td>
                <td><${LastDelivery} t=${t} /></td>
                <td class="actions">
                  <button class="secondary" onClick=${() => open(t, 'edit')}>Edit</button>
                  <button class="secondary" onClick=${() => open(t, 'dry')}>Dry run</button>
                  <button class="secondary" onClick=${() => open(t, 'log')}>Deliveries</button>
                  <button class="secondary" onClick=${() => toggle(t)}>${t.enabled ? 'Disable' : 'Enable'}</button>
                  <button class="secondary" onClick=${() => rotate(t)}>Rotate secret</button>
                  <button class="secondary" onClick=${() => remove(t)}>Delete</button>
                </td>
              </tr>`,
            )}</tbody>
          </table></div>`}
    ${current &&
    html`<div class="card trigger-panel" data-panel=${panel!.kind}>
      ${panel!.kind === 'edit' && html`<${TriggerForm} key=${current.id} trigger=${current} save=${edit(current)} onCancel=${() => setPanel(null)} />`}
      ${panel!.kind === 'dry' && html`<h4>Dry run of ${current.name}</h4><${DryRun} key=${current.id} base=${base} trigger=${current} />`}
      ${panel!.kind === 'log' && html`<h4>Deliveries of ${current.name}</h4><${TriggerLog} key=${current.id} base=${base} trigger=${current} onError=${setError} />`}
    </div>`}
    ${projectId && html`<h4>New trigger</h4><${TriggerForm} key=${projectId} save=${create} />`}
  </div>`;
}
