// Agent sessions (docs/cost.md, "Server"): the sessions of the projects the user can see, newest first,
// filtered by project, runtime, model and time range, with their tokens and cost, a page at a time
// (the API's `before` cursor); one session's LLM requests (model, time, tokens by kind, cost, the
// runtime's reported cost, duration, and whether the transcript, OTel or both reported it).
// Everything is in the hash, so a filtered list and a session are links:
//   #/sessions?projectId=…&runtime=claude&model=…&from=YYYY-MM-DD&to=YYYY-MM-DD   the list
//   #/sessions?session=<id>                                                        one session
// With no sessions at all the page says how they arrive (the runner's transcript ingest and its OTLP
// receiver) or, before any project has a runner, to pair one first.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { count, hashOf, hashQuery, usd } from '../components.ts';
import type { Totals } from '../../protocol/api/cost.ts';
import { RUNTIME_LABELS, RUNTIMES, runtimeLabel } from '../../protocol/runtimes.ts';
import type { SessionAnswer, SessionDetail, SessionList } from '../../protocol/api/sessions.ts';
import type { ListedProject, ProjectList } from '../../protocol/api/projects.ts';

export type Project = ListedProject;
/** Sessions per page. */
const PAGE = 25;
const FILTERS = ['projectId', 'runtime', 'model', 'from', 'to'] as const;
/** The browser's time zone: the day of a YYYY-MM-DD bound is the user's day. */
export const TZ = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** A session's cost: priced requests summed, and the unpriced ones counted, never shown as $0. */
export function costText(t: Pick<Totals, 'costUsd' | 'requests' | 'unpricedRequests'>) {
  if (t.requests > 0 && t.unpricedRequests === t.requests) return html`<span class="running">unpriced</span>`;
  return html`${usd(t.costUsd)}${t.unpricedRequests > 0 && html` <span class="running">+ ${t.unpricedRequests} unpriced</span>`}`;
}

const duration = (ms: number | null) => (ms === null ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

/** What to do when there is nothing to show: pair a runner first, or how sessions reach the server. */
export function HowSessionsArrive({ projects }: { projects: Project[] }) {
  if (!projects.some((p) => p.runnerId)) {
    return html`<div class="card empty" role="note" data-empty="no-runner">
      <p><strong>No runner yet.</strong> Sessions and their cost come from the runners on the agent machines.</p>
      <p class="muted">Pair a runner on the <a href="#/runners">Runners</a> page (instance admins) and give a project that runner and
        a root path; the runner then reports the agent sessions it finds under that root.</p>
    </div>`;
  }
  return html`<div class="card empty" role="note" data-empty="no-sessions">
    <p><strong>No sessions yet.</strong> A runner reports two sources, and either is enough:</p>
    <ul>
      <li><strong>Transcripts</strong>: the runner reads Claude Code transcripts (<code>~/.claude/projects/</code>) and Codex rollout files (<code>~/.codex/sessions/</code>) as they grow and sends their token counts — never prompts or responses. Files older than <code>sessions.ingestSince</code> (set when the runner was paired) are skipped; an admin can read them with the <code>session.backfill</code> command. <code>svc-runner status</code> shows what it reads.</li>
      <li><strong>OpenTelemetry</strong>: the runner listens on <code>http://127.0.0.1:4318</code>. Sessions svc launches are pointed at it;
        for your own Claude Code set <code>CLAUDE_CODE_ENABLE_TELEMETRY=1</code>, <code>OTEL_LOGS_EXPORTER=otlp</code> and <code>OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318</code>.</li>
    </ul>
    <p class="muted">A session counts for a project when its working directory is under the project's root on that project's runner.
      Details: docs/runner.md ("Sessions ingest", "OTLP receiver") and docs/cost.md.</p>
  </div>`;
}

function Filters({ projects, q }: { projects: Project[]; q: URLSearchParams }) {
  const apply = (e: Event) => {
    e.preventDefault();
    const data = new FormData(e.target as HTMLFormElement);
    location.hash = hashOf('sessions', Object.fromEntries(FILTERS.map((k) => [k, String(data.get(k) ?? '').trim()])));
  };
  return html`<form class="filters" onSubmit=${apply} aria-label="Filter sessions">
    <label>Project<select name="projectId" value=${q.get('projectId') ?? ''}>
      <option value="">All projects</option>
      ${projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}
    </select></label>
    <label>Runtime<select name="runtime" value=${q.get('runtime') ?? ''}>
      <option value="">Any</option>${RUNTIMES.map((r) => html`<option value=${r}>${RUNTIME_LABELS[r]}</option>`)}
    </select></label>
    <label>Model<input name="model" defaultValue=${q.get('model') ?? ''} placeholder="e.g. claude-sonnet-4-5" maxlength="256" /></label>
    <label>From<input type="date" name="from" defaultValue=${q.get('from') ?? ''} /></label>
    <label>To<input type="date" name="to" defaultValue=${q.get('to') ?? ''} /></label>
    <div class="buttons"><button>Filter</button> <a href="#/sessions">Clear</a></div>
  </form>`;
}

const tokensText = (t: Totals) =>
  `${count(t.inputTokens)} in · ${count(t.outputTokens)} out · ${count(t.cacheWrite5mTokens + t.cacheWrite1hTokens)} cache write · ${count(t.cacheReadTokens)} cache read`;

function List({ projects, q, filtered }: { projects: Project[]; q: URLSearchParams; filtered: boolean }) {
  const [cursors, setCursors] = useState<string[]>([]); // the `before` of each page shown before this one
  const [page, setPage] = useState<SessionList | null>(null);
  const [error, setError] = useState<string | null>(null);
  const before = cursors[cursors.length - 1];
  useEffect(() => {
    const params = new URLSearchParams({ limit: String(PAGE), tz: TZ });
    for (const k of FILTERS) if (q.get(k)) params.set(k, q.get(k)!);
    if (before) params.set('before', before);
    setError(null);
    api<SessionList>(`/api/sessions?${params}`)
      .then(setPage)
      .catch((e) => setError(errorText(e)));
  }, [before]);
  if (error) return html`<p class="failed" role="alert">Could not load the sessions: ${error}</p>`;
  if (!page) return html`<p class="muted">Loading…</p>`;
  if (page.sessions.length === 0 && cursors.length === 0) {
    return filtered ? html`<p class="muted" role="note">No sessions match these filters. <a href="#/sessions">Show all sessions</a>.</p>` : html`<${HowSessionsArrive} projects=${projects} />`;
  }
  const link = (s: SessionAnswer) => hashOf('sessions', { ...Object.fromEntries(q), session: s.id });
  return html`<div class="scroll"><table class="sessions">
      <thead><tr><th>Session</th><th>Project</th><th>Started</th><th>Last</th><th>Requests</th><th>Tokens</th><th>Cost</th></tr></thead>
      <tbody>
        ${page.sessions.map(
          (s) => html`<tr data-session=${s.sessionId} data-id=${s.id}>
            <td><a href=${link(s)}><code>${s.sessionId}</code></a><div class="muted">${runtimeLabel(s.runtime)} · ${s.models.join(', ') || 'no model yet'}</div></td>
            <td>${s.projectName ?? html`<span class="muted">none</span>`}${s.issue && html`<div class="muted">issue ${s.issue}</div>`}</td>
            <td>${when(s.firstAt)}</td>
            <td>${when(s.lastAt)}</td>
            <td>${count(s.requests)}</td>
            <td class="tokens">${tokensText(s)}</td>
            <td class="cost">${costText(s)}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>
    <div class="pager">
      <button type="button" class="secondary" disabled=${cursors.length === 0} onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
      <span class="muted">Page ${cursors.length + 1}</span>
      <button type="button" class="secondary" disabled=${!page.nextBefore} onClick=${() => setCursors([...cursors, page.nextBefore!])}>Older</button>
    </div>`;
}

function Detail({ id, back }: { id: string; back: string }) {
  const [s, setS] = useState<SessionDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setS(null);
    api<SessionDetail>(`/api/sessions/${encodeURIComponent(id)}`)
      .then(setS)
      .catch((e) => setError(errorText(e)));
  }, [id]);
  const header = html`<p><a href=${back}>← All sessions</a></p>`;
  if (error) return html`${header}<p class="failed" role="alert">Could not load the session: ${error}</p>`;
  if (!s) return html`${header}<p class="muted">Loading…</p>`;
  const t = { ...s, requests: s.requests.length };
  return html`${header}<section class="card session-detail" aria-label=${`Session ${s.sessionId}`} data-id=${s.id}>
    <h3><code>${s.sessionId}</code></h3>
    <dl>
      <dt>Runtime</dt><dd>${runtimeLabel(s.runtime)}</dd>
      <dt>Project</dt><dd>${s.projectName ?? html`<span class="muted">none (visible to instance admins only)</span>`}</dd>
      <dt>Runner</dt><dd><code>${s.runnerId}</code></dd>
      ${s.slot && html`<dt>Slot</dt><dd>${s.slot}</dd>`}
      ${s.issue && html`<dt>Issue</dt><dd>${s.issue}</dd>`}
      ${s.runId && html`<dt>Skill run</dt><dd><a href=${`#/runs?run=${encodeURIComponent(s.runId)}`}><code>${s.runId}</code></a></dd>`}
      ${s.branch && html`<dt>Branch</dt><dd><code>${s.branch}</code></dd>`}
      <dt>Models</dt><dd>${s.models.join(', ') || '—'}</dd>
      <dt>Time</dt><dd>${when(s.firstAt)} – ${when(s.lastAt)}</dd>
      <dt>Requests</dt><dd>${s.requestsTruncated ? `more than ${count(t.requests)}` : count(t.requests)}</dd>
      <dt>Tokens</dt><dd>${tokensText(t)}</dd>
      <dt>Cost</dt><dd class="cost">${costText(t)}${s.reportedCostUsd !== null && html` <span class="muted">(reported by the runtime: ${usd(s.reportedCostUsd)})</span>`}</dd>
    </dl>
    ${s.unpricedRequests > 0 && html`<p class="running">Some requests use a model without a price; their cost is unknown, not $0. See <a href="#/cost">Cost</a> to add a price (instance admins).</p>`}
    <h4>Requests</h4>
    ${s.requestsTruncated && html`<p class="muted">Showing the first ${s.requests.length} requests.</p>`}
    ${s.requests.length === 0
      ? html`<p class="muted">No requests yet.</p>`
      : html`<div class="scroll"><table class="requests">
        <thead><tr><th>Time</th><th>Model</th><th>Input</th><th>Output</th><th>Cache write 5 m</th><th>Cache write 1 h</th><th>Cache read</th><th>Cost</th><th>Reported cost</th><th>Duration</th><th>Source</th></tr></thead>
        <tbody>
          ${s.requests.map(
            (r) => html`<tr data-request=${r.requestId ?? r.id}>
              <td>${when(r.at)}</td>
              <td class="model">${r.model}${r.speed === 'fast' && html` <span class="muted">fast</span>`}${r.sidechain && html` <span class="muted">sidechain</span>`}</td>
              <td>${count(r.inputTokens)}</td>
              <td>${count(r.outputTokens)}</td>
              <td>${count(r.cacheWrite5mTokens)}</td>
              <td>${count(r.cacheWrite1hTokens)}</td>
              <td>${count(r.cacheReadTokens)}</td>
              <td class="cost">${r.priced ? usd(r.costUsd) : html`<span class="running">unpriced</span>`}</td>
              <td class="reported">${usd(r.reportedCostUsd)}</td>
              <td class="duration">${duration(r.durationMs)}</td>
              <td class="source">${r.sources.join(' + ')}</td>
            </tr>`,
          )}
        </tbody>
      </table></div>`}
  </section>`;
}

export function Sessions() {
  const q = hashQuery();
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<ProjectList>('/api/projects')
      .then((r) => setProjects(r.projects))
      .catch((e) => setError(errorText(e)));
  }, []);
  const open = q.get('session');
  const filters = new URLSearchParams(FILTERS.flatMap((k) => (q.get(k) ? [[k, q.get(k)!]] : [])));
  if (open) return html`<${Detail} id=${open} back=${hashOf('sessions', Object.fromEntries(filters))} />`;
  if (error) return html`<p class="failed" role="alert">Could not load the projects: ${error}</p>`;
  if (!projects) return html`<p class="muted">Loading…</p>`;
  const key = filters.toString();
  return html`<${Filters} key=${key} projects=${projects} q=${filters} />
    <${List} key=${key} projects=${projects} q=${filters} filtered=${key !== ''} />`;
}
