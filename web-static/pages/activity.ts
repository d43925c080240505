// Activity (#/activity; GET /api/activity): the feed of the projects the caller can see — every fleet
// event (protocol/activity.ts): slots, pull requests, runs, triggers, schedules, agent sessions, budgets,
// and the runners of the projects one administers — newest first, filtered by project and kind (or a
// family such as pr.*), paged with `nextBefore`. Each item says what happened in words and links to where to look.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { Alert, hashOf, hashQuery, usd } from '../components.ts';
import type { Me } from '../session.ts';
import type { ActivityItem as Item, ActivityList } from '../../protocol/api/sessions.ts';
import { ACTIVITY_FAMILIES, ACTIVITY_KINDS } from '../../protocol/activity.ts';
import type { ActivityKind } from '../../protocol/activity.ts';

const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');

/** What each kind is called in the kind filter. */
const LABELS: Record<ActivityKind, string> = {
  'orchestrator.started': 'Orchestrator started',
  'orchestrator.stopped': 'Orchestrator stopped',
  'slot.dispatched': 'Slot started',
  'slot.checkpoint': 'Slot checkpoint',
  'slot.stopped': 'Slot stopped',
  'pr.opened': 'Pull request opened',
  'pr.checks_changed': 'Pull request checks changed',
  'pr.merged': 'Pull request merged',
  'pr.closed': 'Pull request closed',
  'pr.approved': 'Pull request approved',
  'pr.changes_requested': 'Changes requested',
  'issue.blocked': 'Issue blocked',
  'person.needed': 'Person needed',
  'pane.prompt': 'Session prompt',
  'pane.quota_hit': 'Quota hit',
  'session.started': 'Agent session started',
  'budget.threshold': 'Budget threshold',
  'cap.reached': 'Cap reached',
  'run.succeeded': 'Run succeeded',
  'run.failed': 'Run failed',
  'run.start_failed': 'Run did not start',
  'trigger.fired': 'Trigger fired',
  'trigger.refused': 'Trigger refused',
  'schedule.fired': 'Schedule fired',
  'schedule.failed': 'Schedule failed',
  'schedule.disabled': 'Schedule disabled',
  'runner.online': 'Runner online',
  'runner.offline': 'Runner offline',
};

/** The families of the filter: all pull request events, all runs, … */
const FAMILY_LABELS: Record<string, string> = { pr: 'Pull requests', slot: 'Slots', run: 'Runs', trigger: 'Triggers', schedule: 'Schedules', runner: 'Runners', orchestrator: 'Orchestrator', pane: 'Sessions needing a person' };

/** A pull request as a link (its number, to its address when known). */
function prLink(pr: unknown) {
  const p = (pr ?? {}) as { number?: unknown; url?: unknown };
  const label = p.number ? `#${str(p.number)}` : 'a pull request';
  return typeof p.url === 'string' && /^https?:\/\//.test(p.url) ? html`<a href=${p.url} rel="noopener noreferrer" target="_blank">${label}</a>` : label;
}

function describe(item: Item, project: string) {
  const d = item.data;
  const slot = d.slot ? `slot ${str(d.slot)}` : 'a slot';
  const inSlot = d.slot ? ` (slot ${str(d.slot)})` : '';
  const issue = d.issue ? ` (issue #${str(d.issue)})` : '';
  const fleet = item.projectId ? html` <a href=${`#/fleet/${encodeURIComponent(item.projectId)}`}>Fleet</a>` : '';
  const run = d.runId ? html` <a href=${hashOf('runs', { run: str(d.runId) })}>Open the run</a>` : '';
  const runner = str(d.name) || str(d.runnerId);
  switch (item.kind) {
    case 'session.started': {
      const where = d.slot ? `slot ${d.slot}` : d.run ? `skill run ${d.run}` : 'a session';
      return html`A ${String(d.runtime ?? 'agent')} session started in ${project} (${where}${d.issue ? `, issue #${d.issue}` : ''}${d.branch ? html`, branch <code>${String(d.branch)}</code>` : ''}). <a href=${hashOf('sessions', { session: String(d.sessionId ?? '') })}>Open the session</a>`;
    }
    case 'budget.threshold':
      return html`${project} reached ${String(d.threshold)}% of its monthly budget: ${usd(Number(d.costUsd))} of ${usd(Number(d.budgetUsd))}${d.stopped ? ' — new orchestrator rounds are stopped until next month or a higher budget' : ''}. <a href=${hashOf('projects', { project: item.projectId })}>The project's budget</a>`;
    case 'run.start_failed': {
      const what = d.action === 'next_round' ? 'the next orchestrator round' : html`skill <code>${String(d.skill ?? '')}</code>`;
      return html`A run did not start in ${project}: ${d.source === 'schedule' ? 'schedule' : 'trigger'} ${String(d.sourceName ?? '')} (${what}) — ${String(d.words ?? d.reason)}.
      <a href="#/runs">Runs</a>`;
    }
    case 'orchestrator.started':
      return html`The orchestrator of ${project} started${d.round ? ` (round ${str(d.round)})` : ''}${d.model ? html`, model <code>${str(d.model)}</code>` : ''}.${fleet}`;
    case 'orchestrator.stopped':
      return html`The orchestrator of ${project} stopped${d.reason ? `: ${str(d.reason)}` : ''}.${fleet}`;
    case 'slot.dispatched':
      return html`In ${project}, ${slot} started${d.issue ? ` on issue #${str(d.issue)}` : ''}${d.title ? ` — ${str(d.title)}` : ''}${d.branch ? html`, branch <code>${str(d.branch)}</code>` : ''}.${fleet}`;
    case 'slot.checkpoint':
      return html`In ${project}, ${slot}${issue} reached ${str(d.checkpoint) || 'a checkpoint'}${d.summary ? ` — ${str(d.summary)}` : ''}${d.pr ? html`, pull request ${prLink(d.pr)}` : ''}.${fleet}`;
    case 'slot.stopped':
      return html`In ${project}, ${slot}${issue} stopped${d.reason ? `: ${str(d.reason)}` : ''}.${fleet}`;
    case 'pr.opened':
      return html`Pull request ${prLink(d.pr)} opened in ${project}${d.title ? ` — ${str(d.title)}` : ''}.`;
    case 'pr.checks_changed':
      return html`The checks of pull request ${prLink(d.pr)} in ${project} are ${str(d.state) || 'changed'}${d.summary ? ` — ${str(d.summary)}` : ''}.`;
    case 'pr.merged':
      return html`Pull request ${prLink(d.pr)} merged in ${project}${d.title ? ` — ${str(d.title)}` : ''}.`;
    case 'pr.closed':
      return html`Pull request ${prLink(d.pr)} closed without merging in ${project}${d.title ? ` — ${str(d.title)}` : ''}.`;
    case 'pr.approved':
      return html`${str(d.byName) || 'Someone'} approved pull request ${prLink(d.pr)} in ${project}.${fleet}`;
    case 'pr.changes_requested':
      return html`${str(d.byName) || 'Someone'} requested changes on pull request ${prLink(d.pr)} in ${project}.${fleet}`;
    case 'issue.blocked':
      return html`In ${project}, ${d.issue ? `issue #${str(d.issue)}` : slot} is blocked${d.reason ? `: ${str(d.reason)}` : ''}.${fleet}`;
    case 'person.needed':
      return html`An agent in ${project}${inSlot} waits for a person${d.question ? `: ${str(d.question)}` : d.summary ? `: ${str(d.summary)}` : ''}.${fleet}`;
    case 'pane.prompt':
      return html`A session in ${project}${inSlot} shows a ${str(d.promptKind) || ''} prompt only a person can answer.${fleet}`;
    case 'pane.quota_hit':
      return html`A session in ${project} hit the usage limit of ${str(d.provider) || 'its provider'}${d.resetsAt ? html`; it resets ${when(str(d.resetsAt))}` : ''}.${fleet}`;
    case 'run.succeeded':
      return html`Skill <code>${str(d.skill)}</code> succeeded in ${project}${d.pr ? html`, pull request ${prLink(d.pr)}` : ''}.${run}`;
    case 'run.failed':
      return html`Skill <code>${str(d.skill)}</code> ${d.state === 'timed_out' ? 'timed out' : d.state === 'cancelled' ? 'was cancelled' : 'failed'} in ${project}${d.error ? `: ${str(d.error)}` : ''}.${run}`;
    case 'trigger.fired':
      return html`Trigger ${str(d.trigger)} fired in ${project}${d.skill ? html` (skill <code>${str(d.skill)}</code>)` : ' (next orchestrator round)'}.${run || html` <a href="#/triggers">Triggers</a>`}`;
    case 'trigger.refused':
      return html`Trigger ${str(d.trigger)} in ${project} started nothing: ${str(d.reason).replaceAll('_', ' ')}. <a href="#/triggers">Triggers</a>`;
    case 'schedule.fired':
      return html`Schedule ${str(d.schedule)} started skill <code>${str(d.skill)}</code> in ${project}.${run || html` <a href="#/schedules">Schedules</a>`}`;
    case 'schedule.failed':
      return html`Schedule ${str(d.schedule)} failed in ${project}${d.error ? `: ${str(d.error)}` : ''}. <a href="#/schedules">Schedules</a>`;
    case 'schedule.disabled':
      return html`Schedule ${str(d.schedule)} in ${project} turned itself off${d.reason ? `: ${str(d.reason)}` : ''}. <a href="#/schedules">Schedules</a>`;
    case 'runner.online':
      return html`Runner ${runner} is online${d.version ? ` (version ${str(d.version)})` : ''}.`;
    case 'runner.offline':
      return html`Runner ${runner} has been offline since ${when(str(d.lastSeenAt))}.`;
  }
}

export function Activity({ me }: { me: Me }) {
  const q = hashQuery();
  const projectId = q.get('project') ?? '';
  const kind = q.get('kind') ?? '';
  const before = q.get('before') ?? '';
  const go = (over: Record<string, string>) => (location.hash = hashOf('activity', { project: projectId, kind, ...over }));
  const [items, setItems] = useState<Item[] | null>(null);
  const [next, setNext] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const params = new URLSearchParams({ limit: '50' });
    if (projectId) params.set('projectId', projectId);
    if (kind) params.set('kind', kind);
    if (before) params.set('before', before);
    setItems(null);
    api<ActivityList>(`/api/activity?${params}`)
      .then((r) => (setItems(r.items), setNext(r.nextBefore), setError(null)))
      .catch((e) => (setItems([]), setError(errorText(e))));
  }, [projectId, kind, before]);
  const name = (id: string | null) => me.projects.find((p) => p.id === id)?.name ?? 'a project';
  return html`<form class="filters" aria-label="Filter activity" onSubmit=${(e: Event) => e.preventDefault()}>
      <label>Project <select name="project" value=${projectId} onChange=${(e: Event) => go({ project: (e.target as HTMLSelectElement).value })}>
        <option value="">All projects</option>
        ${me.projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}
      </select></label>
      <label>Kind <select name="kind" value=${kind} onChange=${(e: Event) => go({ kind: (e.target as HTMLSelectElement).value })}>
        <option value="">All kinds</option>
        <optgroup label="Families">${ACTIVITY_FAMILIES.filter((f) => FAMILY_LABELS[f]).map((f) => html`<option value=${`${f}.*`}>${FAMILY_LABELS[f]}</option>`)}</optgroup>
        <optgroup label="Kinds">${ACTIVITY_KINDS.map((k) => html`<option value=${k}>${LABELS[k]}</option>`)}</optgroup>
      </select></label>
    </form>
    <${Alert} error=${error} />
    ${items === null
      ? html`<p class="muted">Loading…</p>`
      : items.length === 0
        ? html`<div class="card empty" role="note"><p>${kind ? 'Nothing of this kind has happened here yet.' : 'Nothing has happened here yet.'} Activity appears when the fleet does something: a slot starts, a pull request opens, a run ends, a trigger or schedule fires, a runner comes or goes.</p>
            <p>${me.projects.length ? html`Start a round from the <a href="#/fleet">Fleet</a>.` : me.user.instanceAdmin ? html`Begin with <a href="#/start">Getting started</a>.` : 'Ask an admin to add you to a project.'}</p></div>`
        : html`<ul class="notifications activity">${items.map(
            (i) => html`<li data-kind=${i.kind}><span class="when">${when(i.createdAt)}</span><span class="text">${describe(i, name(i.projectId))}</span></li>`,
          )}</ul>`}
    <nav class="pager" aria-label="Pages of activity">
      ${before && html`<a href=${hashOf('activity', { project: projectId, kind })}>Newest</a>`}
      ${next && html`<a href=${hashOf('activity', { project: projectId, kind, before: String(next) })}>Older</a>`}
    </nav>`;
}
