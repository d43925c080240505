// Getting started (#/start, issue 16): the way from "signed in" to "my agents are working" on an empty
// instance, in order — pair a runner, create a project on it, add members, connect a trigger or a
// webhook. Each step is ticked from what the API says (a paired runner, a project with a runner, a
// project member, a webhook or a trigger), never from what was clicked here. "Pair a runner" is ticked
// only once a paired runner can run an agent: it reported a signed-in runtime profile (or it is older and
// does not report them: unknown is not "none"; docs/runner.md, "Agent runtimes reported"). The page re-reads while a
// runner is waiting to pair, so the tick appears when the machine pairs.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { NO_RUNTIME_REMEDY } from '../../protocol/start-reasons.ts';
import { Alert, Badge, CopyBlock, PairingCommands, RichText, useAction } from '../components.ts';
import type { Me } from '../session.ts';
import type { WebhookList } from '../../protocol/api/webhooks.ts';
import type { TriggerList } from '../../protocol/api/triggers.ts';
import { ProjectForm } from './projects.ts';
import type { Project } from './projects.ts';
import type { MemberList, ProjectList } from '../../protocol/api/projects.ts';
import type { RunnerCreated, RunnerList, RunnerView } from '../../protocol/api/runners.ts';

type Runner = RunnerView;

const isPaired = (r: Runner) => r.status === 'online' || r.status === 'offline';
/** A paired runner that can run an agent (or does not say: an older runner). */
const canRun = (r: Runner) => isPaired(r) && r.agentRuntime !== 'none';
interface State {
  runners: Runner[];
  projects: Project[];
  members: number;
  webhooks: number;
  triggers: number;
}

async function readState(): Promise<State> {
  const [r, p, w] = await Promise.all([
    api<RunnerList>('/api/runners'),
    api<ProjectList>('/api/projects'),
    api<WebhookList>('/api/webhooks'),
  ]);
  const per = await Promise.all(
    p.projects.map((x) =>
      Promise.all([
        api<MemberList>(`/api/projects/${x.id}/members`).then((m) => m.members.length),
        api<TriggerList>(`/api/projects/${x.id}/triggers`).then((t) => t.triggers.length),
      ]),
    ),
  );
  return {
    runners: r.runners,
    projects: p.projects,
    members: per.reduce((n, [m]) => n + m, 0),
    webhooks: w.webhooks.length,
    triggers: per.reduce((n, [, t]) => n + t, 0),
  };
}

const POLL_MS = 3000;

function Step({ done, title, id, children }: { done: boolean; title: string; id: string; children: unknown }) {
  return html`<li class=${done ? 'done' : ''} data-step=${id} data-done=${String(done)} aria-label=${`${title}${done ? ' (done)' : ''}`}>
    <h3>${title}${done && html` <span class="badge ok">Done</span>`}</h3>
    ${children}
  </li>`;
}

function PairStep({ runners, onChange }: { runners: Runner[]; onChange: () => void }) {
  const [pairing, setPairing] = useState<{ name: string; code: string; expiresAt: string } | null>(null);
  const { error, busy, run } = useAction();
  const paired = runners.filter(isPaired);
  const add = (e: Event) => {
    e.preventDefault();
    const name = String(new FormData(e.target as HTMLFormElement).get('name') ?? '').trim();
    return run(async () => {
      const made = await api<RunnerCreated>('/api/runners', { method: 'POST', body: { name } });
      setPairing({ name: name || 'a new runner', code: made.code, expiresAt: made.expiresAt });
      onChange();
    });
  };
  if (paired.length && !paired.some(canRun)) {
    return html`<p>${paired.map((r, i) => html`${i ? ', ' : ''}<strong>${r.name || r.hostname}</strong> (${r.status})`)} ${paired.length === 1 ? 'is' : 'are'} paired,
        but <${Badge} text="no agent runtime" tone="warn" />: no run can start there yet.</p>
      <p class="remedy"><${RichText} text=${NO_RUNTIME_REMEDY} /></p>
      <${CopyBlock} label="On the runner machine, once the CLI is installed and signed in" text="svc-runner profiles --detect --write" />
      <p class="muted" role="note">This step is ticked when the runner reports a signed-in agent runtime.</p>`;
  }
  if (paired.length) {
    return html`<p>${paired.map((r, i) => html`${i ? ', ' : ''}<strong>${r.name || r.hostname}</strong> (${r.status})`)} ${paired.length === 1 ? 'is' : 'are'} paired. More machines: <a href="#/runners">Runners</a>.</p>`;
  }
  return html`<p>A runner is the small program on the machine where your agents work. Make a pairing code, then paste the commands on that machine.</p>
    <form class="inline" onSubmit=${add}>
      <label>Machine name <input name="name" placeholder="optional: its hostname" maxlength="100" /></label>
      <button disabled=${busy}>Make a pairing code</button>
    </form>
    <${Alert} error=${error} />
    ${pairing && html`<${PairingCommands} ...${pairing} /><p class="muted" role="note">Waiting for the machine to pair… this step is ticked when it does.</p>`}`;
}

export function GettingStarted({ me, reload }: { me: Me; reload: () => void }) {
  const [state, setState] = useState<State | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    readState()
      .then((s) => (setState(s), setError(null)))
      .catch((e) => setError(e.message));
  useEffect(() => {
    void load();
    const t = setInterval(load, POLL_MS);
    return () => clearInterval(t);
  }, []);
  if (error) return html`<${Alert} error=${`Could not read the instance: ${error}`} />`;
  if (!state) return html`<p class="muted">Loading…</p>`;
  const paired = state.runners.filter(isPaired);
  const onRunner = state.projects.filter((p) => p.runnerId);
  const steps = [paired.some(canRun), onRunner.length > 0, state.members > 0, state.webhooks + state.triggers > 0];
  const left = steps.filter((d) => !d).length;
  const created = () => (void load(), reload()); // reload: /api/me lists the new project (navigation, landing page)
  return html`<p class="muted">${left === 0 ? html`All set: <a href="#/fleet">open the Fleet</a> to start your agents.` : `${left} of 4 steps to go. Each is ticked when it is done.`}</p>
    <ol class="steps">
      <${Step} id="runner" done=${steps[0]} title="Pair a runner"><${PairStep} runners=${state.runners} onChange=${load} /></${Step}>
      <${Step} id="project" done=${steps[1]} title="Create a project on it">
        ${steps[1]
          ? html`<p>${onRunner.map((p, i) => html`${i ? ', ' : ''}<a href=${`#/projects?project=${p.id}`}>${p.name}</a>`)}. More: <a href="#/projects">Projects</a>.</p>`
          : paired.length === 0
            ? html`<p class="muted">Pair a runner first: a project lives in a repository on a runner's machine.</p>`
            : html`<p>Name the project, its repository, and where the repository is on the runner's machine; Check reads it there first.</p>
                <${ProjectForm} me=${me} runners=${paired} onSaved=${created} />`}
      </${Step}>
      <${Step} id="members" done=${steps[2]} title="Add members">
        ${steps[2]
          ? html`<p>Members are set. Change roles on <a href="#/projects">Projects</a>.</p>`
          : state.projects.length === 0
            ? html`<p class="muted">Create a project first.</p>`
            : html`<p>Give people a role on a project: viewers read, operators run agents, admins change the project. Invite new people on <a href="#/settings">Settings</a>, then add them on <a href=${`#/projects?project=${state.projects[0].id}`}>the project</a>.</p>`}
      </${Step}>
      <${Step} id="connect" done=${steps[3]} title="Connect a trigger or a webhook">
        ${steps[3]
          ? html`<p>${state.triggers} trigger(s), ${state.webhooks} webhook(s). See <a href="#/integrations">Integrations</a>.</p>`
          : html`<p>A trigger lets your code host or CI start work here; a webhook tells another system what happened. Set either up on <a href="#/integrations">Integrations</a>.</p>`}
      </${Step}>
    </ol>`;
}
