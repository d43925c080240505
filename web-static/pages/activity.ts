// Activity (#/activity; GET /api/activity): the feed of the projects the caller can see — agent
// sessions started, budget thresholds reached, runs that did not start — newest first, filtered by project, paged with
// `nextBefore`. Each item says what happened in words and links to where to look.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { Alert, hashOf, hashQuery, usd } from '../components.ts';
import type { Me } from '../session.ts';
import type { ActivityItem as Item, ActivityList } from '../../protocol/api/sessions.ts';

function describe(item: Item, project: string) {
  const d = item.data;
  if (item.kind === 'session.started') {
    const where = d.slot ? `slot ${d.slot}` : d.run ? `skill run ${d.run}` : 'a session';
    return html`A ${String(d.runtime ?? 'agent')} session started in ${project} (${where}${d.issue ? `, issue #${d.issue}` : ''}${d.branch ? html`, branch <code>${String(d.branch)}</code>` : ''}). <a href=${hashOf('sessions', { session: String(d.sessionId ?? '') })}>Open the session</a>`;
  }
  if (item.kind === 'budget.threshold') {
    return html`${project} reached ${String(d.threshold)}% of its monthly budget: ${usd(Number(d.costUsd))} of ${usd(Number(d.budgetUsd))}${d.stopped ? ' — new orchestrator rounds are stopped until next month or a higher budget' : ''}. <a href=${hashOf('projects', { project: item.projectId })}>The project's budget</a>`;
  }
  if (item.kind === 'run.start_failed') {
    const what = d.action === 'next_round' ? 'the next orchestrator round' : html`skill <code>${String(d.skill ?? '')}</code>`;
    return html`A run did not start in ${project}: ${d.source === 'schedule' ? 'schedule' : 'trigger'} ${String(d.sourceName ?? '')} (${what}) — ${String(d.words ?? d.reason)}.
      <a href="#/runs">Runs</a>`;
  }
  return html`<code>${item.kind}</code> in ${project}`;
}

export function Activity({ me }: { me: Me }) {
  const q = hashQuery();
  const projectId = q.get('project') ?? '';
  const before = q.get('before') ?? '';
  const [items, setItems] = useState<Item[] | null>(null);
  const [next, setNext] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const params = new URLSearchParams({ limit: '50' });
    if (projectId) params.set('projectId', projectId);
    if (before) params.set('before', before);
    setItems(null);
    api<ActivityList>(`/api/activity?${params}`)
      .then((r) => (setItems(r.items), setNext(r.nextBefore), setError(null)))
      .catch((e) => (setItems([]), setError(errorText(e))));
  }, [projectId, before]);
  const name = (id: string | null) => me.projects.find((p) => p.id === id)?.name ?? 'a project';
  return html`<form class="filters" aria-label="Filter activity" onSubmit=${(e: Event) => e.preventDefault()}>
      <label>Project <select name="project" value=${projectId} onChange=${(e: Event) => (location.hash = hashOf('activity', { project: (e.target as HTMLSelectElement).value }))}>
        <option value="">All projects</option>
        ${me.projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}
      </select></label>
    </form>
    <${Alert} error=${error} />
    ${items === null
      ? html`<p class="muted">Loading…</p>`
      : items.length === 0
        ? html`<div class="card empty" role="note"><p>Nothing has happened here yet. Activity appears when agents start sessions on a project's runner or a budget threshold is reached.</p>
            <p>${me.projects.length ? html`Start a round from the <a href="#/fleet">Fleet</a>.` : me.user.instanceAdmin ? html`Begin with <a href="#/start">Getting started</a>.` : 'Ask an admin to add you to a project.'}</p></div>`
        : html`<ul class="notifications activity">${items.map(
            (i) => html`<li data-kind=${i.kind}><span class="when">${when(i.createdAt)}</span><span class="text">${describe(i, name(i.projectId))}</span></li>`,
          )}</ul>`}
    <nav class="pager" aria-label="Pages of activity">
      ${before && html`<a href=${hashOf('activity', { project: projectId })}>Newest</a>`}
      ${next && html`<a href=${hashOf('activity', { project: projectId, before: String(next) })}>Older</a>`}
    </nav>`;
}
