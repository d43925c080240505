// Fleet (#/fleet = the first project, #/fleet/<projectId>): a project's orchestrator and its worker
// slots. Live state (is the orchestrator there, working, idle, waiting for a person; each slot's
// session) comes from the runner (orchestrator.status); what happened — the issue a slot works on,
// its latest checkpoint, its pull request and that PR's checks — from the events the server recorded
// (GET /api/projects/:id/fleet), so the page still says something when the runner is offline.
// Actions are the runner commands through the project's command route: Next round / Stop
// (orchestrator.*), Stop / Message a slot (slot.*), Approve / Request changes / Void approval on a PR
// (pr.*), each offered only to roles that may send it; Open terminal for project admins; Record (anyone)
// opens the pull request's record (fleet-record.ts).
// A slot whose issue reached its cost cap shows paused_cap with spent / cap, and for admins the two
// action links of its cap.reached notification (Raise the cap … and continue, Stop this issue).
// Below the slots the issue queue (fleet-queue.ts); Approve first shows the PR as GitHub has it and its
// cost so far (fleet-pr.ts).
// Live: the project's fleet notices (every orchestrator, slot, PR and pane event its runner sends), its
// runner going online or offline, and the project's own changes re-fetch both halves (at most once a
// second), as does a reconnect after a gap. Whether a session is working or idle is no event (it is
// the runner's reading of the terminal's output), so that alone is re-read once a minute.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, errorText, when } from '../api.ts';
import { Alert, Badge, Dialog, FieldError, hashOf, useAction } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import { can } from '../session.ts';
import type { Me } from '../session.ts';
import type { ProjectFleet } from '../../protocol/api/projects.ts';
import type { NotificationList } from '../../protocol/api/notifications.ts';
import { projectCommand } from './fleet-command.ts';
import { ApproveDialog } from './fleet-pr.ts';
import { RecordDialog } from './fleet-record.ts';
import { Queue } from './fleet-queue.ts';

interface LiveSession {
  session: string;
  state: string;
  promptKind?: string;
  quota?: { provider: string; resetsAt: string | null };
  startedAt?: string;
  lastOutputAt?: string;
}
interface Status extends Partial<LiveSession> {
  present: boolean;
  state: string;
  slots: (LiveSession & { slot: string; issue?: number })[];
}
/** What the orchestrator's state means for the person looking, and what to do next. */
function nextAction(status: Status | null, canOperate: boolean): string {
  if (!status) return 'The runner did not answer: the live state is unknown. Below is what was recorded.';
  const act = canOperate ? '' : ' (an operator can do this)';
  switch (status.state) {
    case 'absent':
      return `Not running. Next round starts the orchestrator${act}.`;
    case 'exited':
      return `Its session ended. Next round starts it again${act}.`;
    case 'idle':
      return `Idle, waiting for work. Next round nudges it to pick the next issues${act}.`;
    case 'working':
      return 'Working on its round.';
    case 'waiting':
      return `Waiting for a person (${status.promptKind ?? 'a prompt'}): answer in its terminal.`;
    case 'quota':
      return `Stopped by its provider's usage limit${status.quota?.resetsAt ? ` until ${when(status.quota.resetsAt)}` : ''}.`;
    default:
      return 'Starting.';
  }
}

const usd = (n: number | null) => (n === null ? '—' : `$${n.toFixed(2)}`);

type Ask = { kind: 'message'; slot: string } | { kind: 'approve' | 'changes' | 'record'; pr: number } | { kind: 'stop' };

export function Fleet({ me, param }: { me: Me; param: string | null }) {
  const projectId = param ?? me.projects[0]?.id ?? null;
  const project = me.projects.find((p) => p.id === projectId);
  const [status, setStatus] = useState<Status | null>(null);
  const [live, setLive] = useState<string | null>(null);
  const [recorded, setRecorded] = useState<ProjectFleet | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [ask, setAsk] = useState<Ask | null>(null);
  /** The action links of the cap.reached notifications (admins: Raise / Stop on a slot paused at its cap). */
  const [capLinks, setCapLinks] = useState<NotificationList['notifications']>([]);
  const action = useAction();
  const operator = projectId ? can(me, projectId, 'operator') : false;
  const admin = projectId ? can(me, projectId, 'admin') : false;

  const command = (name: string, args: Record<string, unknown> = {}) => projectCommand(projectId!, name, args);
  /** The project's runner as last read: its online/offline notices concern this page too. */
  const runnerId = useRef<string | null>(null);
  /** Reads started: only the newest one's answers are shown (an older one can come back later). */
  const reads = useRef(0);
  const load = async () => {
    if (!projectId || !project) return;
    const read = ++reads.current;
    const [s, r] = await Promise.allSettled([command('orchestrator.status'), api<ProjectFleet>(`/api/projects/${projectId}/fleet`)]);
    if (read !== reads.current) return;
    if (r.status === 'fulfilled') runnerId.current = r.value.runnerId;
    if (s.status === 'fulfilled') (setStatus(s.value.data as Status), setLive(null));
    else {
      setStatus(null);
      const e = s.reason;
      setLive(e instanceof ApiError && e.code === 'no_runner' ? 'no_runner' : errorText(e));
    }
    if (r.status === 'fulfilled') (setRecorded(r.value), setError(null));
    else setError(errorText(r.reason));
    if (r.status === 'fulfilled' && r.value.slots.some((x) => x.cap?.state === 'paused_cap') && can(me, projectId, 'admin')) {
      const n = await api<NotificationList>('/api/notifications?limit=500').catch(() => null);
      if (read === reads.current) setCapLinks((n?.notifications ?? []).filter((x) => x.kind === 'cap.reached' && x.projectId === projectId));
    }
    setLoaded(true);
  };
  useEffect(() => {
    setStatus(null);
    setRecorded(null);
    setLoaded(false);
    void load();
    const t = setInterval(load, 60_000); // working / idle / last output: no event says so (see above)
    return () => clearInterval(t);
  }, [projectId]);
  useLiveRefetch(
    (n) => ((n.type === 'fleet' || n.type === 'project') && n.projectId === projectId) || (n.type === 'runner' && n.id === runnerId.current),
    load,
    [projectId],
  );

  if (me.projects.length === 0) {
    return html`<div class="card empty" role="note"><p>No project yet, so no fleet.</p>
      <p>${me.user.instanceAdmin ? html`Create one on <a href="#/projects">Projects</a> or follow <a href="#/start">Getting started</a>.` : 'Ask an admin to add you to a project.'}</p></div>`;
  }
  if (!project) return html`<div class="card" role="alert"><p>No project with id <code>${projectId}</code> here. <a href="#/fleet">Open the first project's fleet</a>.</p></div>`;
  if (!loaded) return html`<p class="muted">Loading…</p>`;

  const send = (label: string, name: string, args: Record<string, unknown> = {}) =>
    action.run(async () => {
      const out = await command(name, args);
      setDone(`${label}: done.`);
      setAsk(null);
      await load();
      return out;
    });
  const submitAsk = (e: Event) => {
    e.preventDefault();
    const text = String(new FormData(e.target as HTMLFormElement).get('text') ?? '');
    if (!ask) return;
    if (ask.kind === 'message') return send(`Message to slot ${ask.slot}`, 'slot.message', { slot: ask.slot, message: text });
    if (ask.kind === 'changes') return send(`Changes requested on #${ask.pr}`, 'pr.requestChanges', { number: ask.pr, comment: text });
  };

  const liveBySlot = new Map((status?.slots ?? []).map((s) => [s.slot, s]));
  const recordedBySlot = new Map((recorded?.slots ?? []).map((s) => [s.slot, s]));
  const labels = [...new Set([...liveBySlot.keys(), ...recordedBySlot.keys()])].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const terminal = (session: string) => hashOf('terminal', { project: projectId, session });
  const orchSession = status?.session ?? `svc-${projectId}-orch`;

  return html`
    ${me.projects.length > 1 &&
    html`<form class="filters" aria-label="Choose a project" onSubmit=${(e: Event) => e.preventDefault()}>
      <label>Project <select value=${projectId} onChange=${(e: Event) => (location.hash = `#/fleet/${(e.target as HTMLSelectElement).value}`)}>
        ${me.projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}</select></label></form>`}
    <${Alert} error=${error} />
    ${live === 'no_runner'
      ? html`<div class="card empty" role="note"><p>${project.name} has no runner yet: ${me.user.instanceAdmin ? html`give it one on <a href=${hashOf('projects', { project: projectId })}>its project page</a>.` : 'an instance admin gives it one.'}</p></div>`
      : html`<section class="card orchestrator" aria-labelledby="orch-h" data-state=${status?.state ?? 'unknown'}>
          <div class="page-head"><h3 id="orch-h">Orchestrator of ${project.name}</h3>${status ? html`<${Badge} text=${status.state} tone=${status.state === 'working' || status.state === 'idle' ? 'ok' : status.state === 'waiting' || status.state === 'quota' ? 'warn' : 'muted'} />` : html`<${Badge} text="unknown" tone="failed" />`}</div>
          <p class="next-action">${nextAction(status, operator)}</p>
          ${live && html`<p class="muted" role="note">Live state unavailable: ${live}</p>`}
          ${recorded?.orchestrator && html`<p class="muted">Last ${recorded.orchestrator.state} ${when(recorded.orchestrator.at)}${recorded.orchestrator.reason ? ` (${recorded.orchestrator.reason})` : ''}.</p>`}
          <div class="actions">
            ${operator && html`<button type="button" onClick=${() => send('Next round', 'orchestrator.start', { next: true })} disabled=${action.busy}>Next round</button>`}
            ${operator && status?.present && html`<button type="button" class="secondary danger" onClick=${() => setAsk({ kind: 'stop' })} disabled=${action.busy}>Stop</button>`}
            ${admin && status?.present && html`<a class="button secondary" href=${terminal(orchSession)}>Open terminal</a>`}
          </div>
        </section>`}
    ${done && html`<p class="banner ok" role="status">${done}</p>`}
    <${Alert} error=${action.error} />
    <h3>Slots</h3>
    ${labels.length === 0
      ? html`<p class="empty" role="note">No worker slots yet. ${operator ? 'Start a round with Next round: the orchestrator hands issues to workers, each in its own slot.' : 'They appear when the orchestrator hands issues to workers.'}</p>`
      : html`<div class="slots">${labels.map((label) => {
          const l = liveBySlot.get(label);
          const r = recordedBySlot.get(label);
          const issue = l?.issue ?? r?.issue ?? null;
          return html`<section class="card slot" data-slot=${label} aria-label=${`Slot ${label}`}>
            <div class="page-head"><h4>Slot ${label}</h4>${l ? html`<${Badge} text=${l.state} tone=${l.state === 'waiting' || l.state === 'quota' ? 'warn' : l.state === 'exited' ? 'muted' : 'ok'} />` : html`<${Badge} text=${r?.stopped ? 'stopped' : 'no session'} tone="muted" />`}</div>
            <dl class="facts">
              <dt>Issue</dt><dd>${issue ? `#${issue}` : '—'}${r?.title ? ` ${r.title}` : ''}</dd>
              <dt>Checkpoint</dt><dd>${r?.checkpoint ? html`${r.checkpoint.name}${r.checkpoint.summary ? `: ${r.checkpoint.summary}` : ''} <span class="muted">${when(r.checkpoint.at)}</span>` : '—'}</dd>
              <dt>Pull request</dt><dd>${r?.pr ? html`${r.pr.url ? html`<a href=${r.pr.url} rel="noreferrer" target="_blank">#${r.pr.number}</a>` : `#${r.pr.number}`} ${r.pr.title ?? ''} <${Badge} text=${r.pr.state} tone=${r.pr.state === 'merged' ? 'ok' : 'muted'} />` : '—'}</dd>
              <dt>Checks</dt><dd>${r?.checks ? html`<${Badge} text=${r.checks.state} tone=${/pass|success/.test(r.checks.state) ? 'ok' : /fail|error/.test(r.checks.state) ? 'failed' : 'warn'} /> ${r.checks.summary ?? ''}` : '—'}</dd>
              ${l?.lastOutputAt && html`<dt>Last output</dt><dd>${when(l.lastOutputAt)}</dd>`}
              ${r?.stopped && html`<dt>Stopped</dt><dd>${r.stopped.reason ?? ''} <span class="muted">${when(r.stopped.at)}</span></dd>`}
              ${r?.cap && html`<dt>Cost cap</dt><dd class="cap" data-cap-state=${r.cap.state}><${Badge} text=${r.cap.state === 'paused_cap' ? 'paused at its cap' : 'stopped at its cap'} tone=${r.cap.state === 'paused_cap' ? 'warn' : 'muted'} />
                ${usd(r.cap.costUsd)} spent of a ${usd(r.cap.capUsd)} cap${r.cap.at ? html` <span class="muted">${when(r.cap.at)}</span>` : ''}</dd>`}
            </dl>
            <div class="actions">
              ${operator && l && l.state !== 'exited' && html`<button type="button" class="secondary" onClick=${() => setAsk({ kind: 'message', slot: label })}>Message</button>`}
              ${operator && l && html`<button type="button" class="secondary danger" onClick=${() => send(`Slot ${label} stopped`, 'slot.stop', { slot: label })} disabled=${action.busy}>Stop slot</button>`}
              ${operator && r?.pr && r.pr.state === 'open' &&
              html`<button type="button" class="secondary" onClick=${() => setAsk({ kind: 'approve', pr: r.pr!.number })}>Approve</button>
                <button type="button" class="secondary" onClick=${() => setAsk({ kind: 'changes', pr: r.pr!.number })}>Request changes</button>
                <button type="button" class="secondary" onClick=${() => send(`Approval voided on #${r.pr!.number}`, 'pr.voidApproval', { number: r.pr!.number })} disabled=${action.busy}>Void approval</button>`}
              ${r?.pr && html`<button type="button" class="secondary" onClick=${() => setAsk({ kind: 'record', pr: r.pr!.number })}>Record</button>`}
              ${admin && l && html`<a class="button secondary" href=${terminal(l.session)}>Open terminal</a>`}
              ${admin && r?.cap?.state === 'paused_cap' &&
              (capLinks.find((n) => n.data.issue === r.issue && n.data.pause === r.cap!.pause)?.actions ?? []).map((a) => html`<a class="button secondary cap-action" href=${a.url} data-kind=${a.kind}>${a.label}</a>`)}
            </div>
          </section>`;
        })}</div>`}
    <${Queue} projectId=${projectId} operator=${operator} />
    ${ask?.kind === 'stop' &&
    html`<${Dialog} title="Stop the orchestrator?" onClose=${() => setAsk(null)}>
      <p>Its session ends; worker slots keep running. Next round starts it again.</p>
      <div class="actions"><button type="button" class="secondary" onClick=${() => setAsk(null)}>Cancel</button><button type="button" class="danger" onClick=${() => send('Orchestrator stopped', 'orchestrator.stop')}>Stop</button></div>
    </${Dialog}>`}
    ${ask?.kind === 'approve' &&
    html`<${ApproveDialog} projectId=${projectId} pr=${ask.pr} busy=${action.busy} error=${action.error} fields=${action.fields} onClose=${() => (setAsk(null), action.reset())}
      onApprove=${(text: string) => send(`Approved #${ask.pr}`, 'pr.approve', { number: ask.pr, ...(text ? { comment: text } : {}) })} />`}
    ${ask?.kind === 'record' && html`<${RecordDialog} projectId=${projectId} pr=${ask.pr} onClose=${() => setAsk(null)} />`}
    ${ask && ask.kind !== 'stop' && ask.kind !== 'approve' && ask.kind !== 'record' &&
    html`<${Dialog} title=${ask.kind === 'message' ? `Message to slot ${ask.slot}` : `Request changes on #${ask.pr}`} onClose=${() => (setAsk(null), action.reset())}>
      <form onSubmit=${submitAsk}>
        <label>${ask.kind === 'message' ? 'Message (typed into the session)' : 'What to change'}
          <textarea name="text" rows="5" maxlength=${ask.kind === 'message' ? 20000 : 10000} required></textarea></label>
        <${FieldError} fields=${action.fields} name=${ask.kind === 'message' ? 'message' : 'comment'} />
        <div class="actions"><button type="button" class="secondary" onClick=${() => (setAsk(null), action.reset())}>Cancel</button><button disabled=${action.busy}>Send</button></div>
      </form>
    </${Dialog}>`}`;
}
