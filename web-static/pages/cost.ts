// LLM cost (docs/cost.md, "Server"): over a date range (default: the last 30 days, in the browser's
// time zone) and optionally one project, the totals; cost by day (vertical bars), by project and by
// model (horizontal bars) — hand-written SVG, each with its numbers in a table beneath; one more
// breakdown the user picks (issue by default: what an issue cost in agent time; or pull request,
// run, session…). Then, from pages/cost-settings.ts: requests without a price (unknown models), project
// budgets and the price table. The range is in the hash, so a view is a link:
//   #/cost?from=YYYY-MM-DD&to=YYYY-MM-DD&projectId=…&groupBy=issue[&price=<model>]
// (`price` opens the price form for that model; the Sessions page links there).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api.ts';
import { BarChart, ColumnChart, count, hashOf, hashQuery, usd } from '../components.ts';
import type { Bar } from '../components.ts';
import { Budgets, Prices, UnknownModels } from './cost-settings.ts';
import { HowSessionsArrive, TZ, costText } from './sessions.ts';
import type { Project } from './sessions.ts';
import type { CostAnswer, CostGroup as Group, Totals } from '../../protocol/api/cost.ts';
import type { ProjectList } from '../../protocol/api/projects.ts';
import { runtimeLabel } from '../../protocol/runtimes.ts';
import type { MeAnswer } from '../../protocol/api/auth.ts';

interface Range {
  from: string;
  to: string;
  projectId: string;
  groupBy: string;
}

const BREAKDOWNS: Record<string, string> = {
  issue: 'Issue',
  pull_request: 'Pull request',
  run: 'Skill run',
  session: 'Session',
  day: 'Day',
  project: 'Project',
  model: 'Model',
};
/** At most this many bars in a project or model chart (the table lists all). */
const TOP = 10;

const pad = (n: number) => String(n).padStart(2, '0');
/** A date as YYYY-MM-DD in the browser's time zone. */
const localDate = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;

function rangeOf(q: URLSearchParams): Range {
  const now = new Date();
  return {
    from: q.get('from') || localDate(new Date(now.getFullYear(), now.getMonth(), now.getDate() - 29)),
    to: q.get('to') || localDate(now),
    projectId: q.get('projectId') ?? '',
    groupBy: BREAKDOWNS[q.get('groupBy') ?? ''] ? q.get('groupBy')! : 'issue',
  };
}

/** Every day from `from` to `to` (calendar arithmetic on the date strings), or null over 400 days. */
function days(from: string, to: string): string[] | null {
  const out: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end; t += 86_400_000) {
    out.push(new Date(t).toISOString().slice(0, 10));
    if (out.length > 400) return null;
  }
  return out;
}

/** A group's name as people say it; links where there is a page for it. */
function name(groupBy: string, g: Group) {
  if (g.key === null) return html`<span class="muted">${groupBy === 'project' ? 'No project' : 'Not attributed'}</span>`;
  switch (groupBy) {
    case 'project':
      return g.label ?? g.key;
    case 'session':
      return html`<a href=${hashOf('sessions', { session: g.key })}><code>${g.label ?? g.key}</code></a> <span class="muted">${runtimeLabel(g.runtime)}</span>`;
    case 'model':
      return html`${g.key} <span class="muted">${runtimeLabel(g.runtime)}</span>`;
    case 'issue':
      return `#${g.key}`;
    case 'pull_request':
      return `PR #${g.key}`;
    case 'run':
      return html`<a href=${hashOf('runs', { run: g.key })}><code>${g.key}</code></a>`;
    default:
      return g.key;
  }
}
const plainName = (groupBy: string, g: Group) => (g.key === null ? (groupBy === 'project' ? 'No project' : 'Not attributed') : groupBy === 'project' ? (g.label ?? g.key) : g.key);
const requestsText = (g: Totals) => `${g.requests} request${g.requests === 1 ? '' : 's'}${g.unpricedRequests ? `, ${g.unpricedRequests} unpriced` : ''}`;

function CostTable({ groupBy, groups, caption }: { groupBy: string; groups: Group[]; caption: string }) {
  if (groups.length === 0) return html`<p class="muted">No requests in this range.</p>`;
  return html`<div class="scroll"><table class="cost-table" data-group=${groupBy}>
    <caption>${caption}</caption>
    <thead><tr><th>${BREAKDOWNS[groupBy]}</th><th>Requests</th><th>Input</th><th>Output</th><th>Cache write</th><th>Cache read</th><th>Cost</th></tr></thead>
    <tbody>
      ${groups.map(
        (g) => html`<tr data-key=${g.key ?? ''}>
          <td>${name(groupBy, g)}</td>
          <td>${count(g.requests)}</td>
          <td>${count(g.inputTokens)}</td>
          <td>${count(g.outputTokens)}</td>
          <td>${count(g.cacheWrite5mTokens + g.cacheWrite1hTokens)}</td>
          <td>${count(g.cacheReadTokens)}</td>
          <td class="cost" data-cost=${g.costUsd}>${costText(g)}</td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

function ByDay({ range, answer }: { range: Range; answer: CostAnswer }) {
  const byKey = new Map(answer.groups.map((g) => [g.key, g]));
  const keys = days(range.from, range.to) ?? answer.groups.map((g) => g.key!);
  const bars: Bar[] = keys.map((k) => {
    const g = byKey.get(k);
    return { key: k, label: k.slice(5), value: g?.costUsd ?? 0, title: `${k}: ${usd(g?.costUsd ?? 0)}, ${requestsText(g ?? { requests: 0, unpricedRequests: 0 } as Totals)}` };
  });
  const top = answer.groups.reduce<Group | null>((m, g) => (!m || g.costUsd > m.costUsd ? g : m), null);
  const desc = `Cost per day from ${range.from} to ${range.to}: ${usd(answer.totals.costUsd)} in all, on ${answer.groups.length} day${answer.groups.length === 1 ? '' : 's'} with requests${top ? `; the most was ${usd(top.costUsd)} on ${top.key}` : ''}.`;
  return html`<section class="card chart-card" aria-labelledby="by-day-h">
    <h3 id="by-day-h">Cost by day</h3>
    <${ColumnChart} id="chart-day" title="Cost by day" desc=${desc} bars=${bars} format=${usd} />
    <${CostTable} groupBy="day" groups=${answer.groups} caption="Cost by day" />
  </section>`;
}

function Ranked({ groupBy, title, answer }: { groupBy: 'project' | 'model'; title: string; answer: CostAnswer }) {
  const shown = answer.groups.slice(0, TOP);
  const bars: Bar[] = shown.map((g) => ({
    key: g.key ?? '',
    label: plainName(groupBy, g),
    value: g.costUsd,
    title: `${plainName(groupBy, g)}: ${usd(g.costUsd)}, ${requestsText(g)}`,
    ...(g.unpricedRequests === g.requests ? { text: 'unpriced' } : {}),
  }));
  const n = answer.groups.length;
  const desc = `${title}: ${n} ${groupBy === 'project' ? 'project' : 'model'} group${n === 1 ? '' : 's'}${shown[0] ? `; the largest is ${plainName(groupBy, shown[0])} at ${usd(shown[0].costUsd)}` : ''}${n > TOP ? `; the ${TOP} largest are drawn, the table lists all` : ''}.`;
  const id = `chart-${groupBy}`;
  return html`<section class="card chart-card" aria-labelledby=${`${id}-h`}>
    <h3 id=${`${id}-h`}>${title}</h3>
    ${n > 0 && html`<${BarChart} id=${id} title=${title} desc=${desc} bars=${bars} format=${usd} />`}
    <${CostTable} groupBy=${groupBy} groups=${answer.groups} caption=${title} />
  </section>`;
}

function TotalsView({ t }: { t: Totals }) {
  const tile = (label: string, value: unknown, cls = '') => html`<div class=${`tile ${cls}`}><dt>${label}</dt><dd>${value}</dd></div>`;
  return html`<dl class="totals" aria-label="Totals">
    ${tile('Cost', usd(t.costUsd), 'total-cost')}
    ${tile('Requests', count(t.requests), 'total-requests')}
    ${tile('Unpriced requests', count(t.unpricedRequests), t.unpricedRequests ? 'total-unpriced running' : 'total-unpriced')}
    ${tile('Input tokens', count(t.inputTokens))}
    ${tile('Output tokens', count(t.outputTokens))}
    ${tile('Cache write tokens', count(t.cacheWrite5mTokens + t.cacheWrite1hTokens))}
    ${tile('Cache read tokens', count(t.cacheReadTokens))}
    ${tile('Reported by the runtimes', usd(t.reportedCostUsd))}
  </dl>`;
}

function RangeForm({ range, projects }: { range: Range; projects: Project[] }) {
  const apply = (e: Event) => {
    e.preventDefault();
    const data = Object.fromEntries(new FormData(e.target as HTMLFormElement)) as Record<string, string>;
    location.hash = hashOf('cost', { from: data.from, to: data.to, projectId: data.projectId, groupBy: data.groupBy });
  };
  return html`<form class="filters" onSubmit=${apply} aria-label="Cost range">
    <label>From<input type="date" name="from" defaultValue=${range.from} required /></label>
    <label>To<input type="date" name="to" defaultValue=${range.to} required /></label>
    <label>Project<select name="projectId" value=${range.projectId}>
      <option value="">All projects</option>
      ${projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}
    </select></label>
    <label>Breakdown<select name="groupBy" value=${range.groupBy}>
      ${Object.entries(BREAKDOWNS).map(([k, v]) => html`<option value=${k}>${v}</option>`)}
    </select></label>
    <div class="buttons"><button>Show</button> <span class="muted">Days in ${TZ}</span></div>
  </form>`;
}

/** Keyed by the range and a version, so a new range or a saved price loads afresh. */
function Figures({ range, projects }: { range: Range; projects: Project[] }) {
  const [data, setData] = useState<Record<string, CostAnswer> | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const groups = [...new Set(['day', 'project', 'model', range.groupBy])];
    const query = (g: string) => new URLSearchParams({ groupBy: g, from: range.from, to: range.to, tz: TZ, ...(range.projectId ? { projectId: range.projectId } : {}) });
    Promise.all(groups.map((g) => api<CostAnswer>(`/api/cost?${query(g)}`)))
      .then((answers) => (setError(null), setData(Object.fromEntries(groups.map((g, i) => [g, answers[i]])))))
      .catch((e) => setError(errorText(e)));
  }, []);
  if (error) return html`<p class="failed" role="alert">Could not load the cost: ${error}</p>`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  const total = data.day.totals;
  return html`<${TotalsView} t=${total} />
    ${total.requests === 0 && !range.projectId && html`<p class="muted" role="note">No LLM requests between ${range.from} and ${range.to}.</p><${HowSessionsArrive} projects=${projects} />`}
    <${ByDay} range=${range} answer=${data.day} />
    <div class="chart-pair">
      <${Ranked} groupBy="project" title="Cost by project" answer=${data.project} />
      <${Ranked} groupBy="model" title="Cost by model" answer=${data.model} />
    </div>
    <section class="card breakdown">
      <h3>Cost by ${BREAKDOWNS[range.groupBy].toLowerCase()}</h3>
      ${range.groupBy === 'issue' && html`<p class="muted">A request counts for an issue named by its <code>svc.issue</code> attribute, else its session's worker slot issue.</p>`}
      ${range.groupBy === 'pull_request' && html`<p class="muted">A request counts for the pull request opened from the branch it worked on (its skill run's, else its session's).</p>`}
      <${CostTable} groupBy=${range.groupBy} groups=${data[range.groupBy].groups} caption=${`Cost by ${BREAKDOWNS[range.groupBy].toLowerCase()}`} />
    </section>`;
}

export function Cost() {
  const q = hashQuery();
  const range = rangeOf(q);
  const [ctx, setCtx] = useState<{ admin: boolean; projects: Project[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    Promise.all([api<MeAnswer>('/api/me'), api<ProjectList>('/api/projects')])
      .then(([me, p]) => setCtx({ admin: me.user.instanceAdmin, projects: p.projects }))
      .catch((e) => setError(errorText(e)));
  }, []);
  if (error) return html`<p class="failed" role="alert">Could not load the cost page: ${error}</p>`;
  if (!ctx) return html`<p class="muted">Loading…</p>`;
  const key = `${range.from}|${range.to}|${range.projectId}|${range.groupBy}`;
  const changed = () => setVersion((v) => v + 1); // a price saved: costs, unpriced models and spend may have changed
  const priceLink = (model: string) => hashOf('cost', { ...range, groupBy: q.get('groupBy'), from: q.get('from'), to: q.get('to'), price: model });
  return html`<${RangeForm} key=${key} range=${range} projects=${ctx.projects} />
    <${Figures} key=${`${key}|${version}`} range=${range} projects=${ctx.projects} />
    <${UnknownModels} admin=${ctx.admin} priceLink=${priceLink} version=${version} />
    <${Budgets} projects=${ctx.projects} version=${version} />
    <${Prices} admin=${ctx.admin} open=${q.get('price')} onChanged=${changed} />`;
}
