// The Fleet page's issue queue (issue #36 item 3): the project's open issues as the server keeps them
// (GET /api/projects/:projectId/queue, fed by App deliveries, the runner's `codehost.queue` events and
// `issues.refresh` answers), each with its labels and the slot working on it, and when the whole open
// set was last read. Re-read on the project's fleet notices (and after a reconnect), like the rest of
// the page. Operators also get Refresh (issues.refresh: the runner reads GitHub now) and New issue
// (issue.create); a viewer sees the queue only (the server refuses the commands to a viewer anyway).
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { Alert, Badge, FieldError, useAction } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import { projectCommand } from './fleet-command.ts';
import type { ProjectQueue } from '../../protocol/api/queue.ts';

/** "just now", "12 min ago", "3 h ago", "4 days ago": how old a reading is, said the way a person would. */
export function ago(iso: string, now = Date.now()): string {
  const min = Math.floor((now - new Date(iso).getTime()) / 60_000);
  if (min < 1) return 'just now';
  if (min < 60) return `${min} min ago`;
  const h = Math.floor(min / 60);
  return h < 48 ? `${h} h ago` : `${Math.floor(h / 24)} days ago`;
}

const labelsOf = (text: string) =>
  text
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean);

export function Queue({ projectId, operator }: { projectId: string; operator: boolean }) {
  const [queue, setQueue] = useState<ProjectQueue | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [created, setCreated] = useState<{ number: number; url: string } | null>(null);
  const [form, setForm] = useState(false);
  const [, setTick] = useState(0);
  const refresh = useAction();
  const create = useAction();
  /** Only the newest read's answer is shown (an older one can come back later). */
  const reads = useRef(0);
  const load = async () => {
    const read = ++reads.current;
    try {
      const q = await api<ProjectQueue>(`/api/projects/${projectId}/queue`);
      if (read === reads.current) (setQueue(q), setError(null));
    } catch (e) {
      if (read === reads.current) setError(errorText(e));
    }
  };
  useEffect(() => {
    setQueue(null);
    setNote(null);
    setCreated(null);
    setForm(false);
    void load();
    const t = setInterval(() => setTick((n) => n + 1), 60_000); // "refreshed N min ago" moves on by itself
    return () => clearInterval(t);
  }, [projectId]);
  useLiveRefetch((n) => n.type === 'fleet' && n.projectId === projectId, load, [projectId]);

  /** issues.refresh: the runner reads the open issues now; its answer says how many and whether they changed. */
  const readNow = () =>
    projectCommand(projectId, 'issues.refresh').then((out) => {
      const d = out.data as { count: number; changed: boolean };
      return `${d.count} open issue${d.count === 1 ? '' : 's'} on GitHub${d.changed ? '' : ', nothing new'}`;
    });
  const onRefresh = () =>
    refresh.run(async () => {
      setNote(null);
      setNote(`Refreshed: ${await readNow()}.`);
      await load();
    });
  const onCreate = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const labels = labelsOf(String(f.get('labels') ?? ''));
    void create.run(async () => {
      setCreated(null);
      const out = await projectCommand(projectId, 'issue.create', { title: String(f.get('title') ?? ''), body: String(f.get('body') ?? ''), ...(labels.length ? { labels } : {}) });
      setCreated(out.data as { number: number; url: string });
      setForm(false);
      // With an App installed its `issues` delivery adds the issue at once; without one the queue learns it
      // at the runner's next poll, which can be minutes away: read the queue now so it shows up here.
      // A failed read changes nothing (the issue exists): the next poll or delivery brings it.
      await readNow().catch(() => undefined);
      await load();
    });
  };

  const issues = queue?.issues ?? [];
  return html`<section class="card queue" aria-labelledby="queue-h">
    <div class="page-head">
      <h3 id="queue-h">Issue queue</h3>
      <span class="muted refreshed">${queue ? (queue.refreshedAt ? html`refreshed <time datetime=${queue.refreshedAt} title=${when(queue.refreshedAt)}>${ago(queue.refreshedAt)}</time>` : 'not read from GitHub yet') : ''}</span>
    </div>
    ${operator &&
    html`<div class="actions">
      <button type="button" class="secondary" onClick=${onRefresh} disabled=${refresh.busy} aria-busy=${refresh.busy}>${refresh.busy ? 'Refreshing…' : 'Refresh'}</button>
      <button type="button" class="secondary" onClick=${() => (setForm(!form), create.reset())} aria-expanded=${form}>New issue</button>
    </div>`}
    ${note && html`<p class="banner ok" role="status">${note}</p>`}
    <${Alert} error=${refresh.error} />
    ${created && html`<p class="banner ok created" role="status">Created <a href=${created.url} rel="noreferrer" target="_blank">#${created.number}</a>.</p>`}
    ${operator && form &&
    html`<form class="new-issue" aria-label="New issue" onSubmit=${onCreate}>
      <label>Title <input name="title" required maxlength="256" /></label>
      <${FieldError} fields=${create.fields} name="title" />
      <label>Body <textarea name="body" rows="5" maxlength="65536"></textarea></label>
      <${FieldError} fields=${create.fields} name="body" />
      <label>Labels <input name="labels" placeholder="bug, svc" aria-describedby="labels-hint" /></label>
      <p id="labels-hint" class="muted">Comma-separated; labels the repository does not have yet are created by GitHub.</p>
      <${FieldError} fields=${create.fields} name="labels" />
      <${Alert} error=${create.error} />
      <div class="actions"><button type="button" class="secondary" onClick=${() => (setForm(false), create.reset())}>Cancel</button><button disabled=${create.busy}>${create.busy ? 'Creating…' : 'Create issue'}</button></div>
    </form>`}
    <${Alert} error=${error && `The queue could not be read: ${error}`} />
    ${!queue
      ? !error && html`<p class="muted">Loading…</p>`
      : issues.length === 0
        ? html`<p class="empty" role="note">No open issues${queue.refreshedAt ? '' : ' known yet: the runner reads them at its next poll'}.${operator ? ' New issue adds one.' : ''}</p>`
        : html`<div class="scroll"><table class="queue">
            <thead><tr><th>#</th><th>Title</th><th>Labels</th><th>Slot</th><th>Updated</th></tr></thead>
            <tbody>${issues.map(
              (i) => html`<tr data-issue=${i.number} data-state=${i.state}>
                <td>${i.number}</td>
                <td><a href=${i.url} rel="noreferrer" target="_blank">${i.title}</a>${i.state === 'closed' ? html` <${Badge} text="closed" tone="muted" />` : ''}</td>
                <td class="labels">${i.labels.map((l) => html`<span class="label">${l}</span>`)}</td>
                <td class="slot">${i.slot ? `slot ${i.slot}` : html`<span class="muted">none</span>`}</td>
                <td><time datetime=${i.updatedAt} title=${when(i.updatedAt)}>${ago(i.updatedAt)}</time></td>
              </tr>`,
            )}</tbody></table></div>`}
  </section>`;
}
