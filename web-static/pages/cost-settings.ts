// The Cost page's lists below the figures (pages/cost.ts; docs/cost.md "Cost", "Budgets"):
// - models seen without a price: their requests have no cost (never $0); instance admins get a link
//   that opens the price form for the model, effective from the start so those requests get priced;
// - project budgets: monthly USD and warn|stop, this month's spend (UTC) and its percentage; the
//   project's admins edit theirs, everyone else only sees it;
// - the price table (the version in force per model); instance admins add a version with the date it
//   takes effect — earlier requests keep their cost. Tiered, long-context and fast prices of the
//   current version are carried into the new one (the form edits the five per-token prices).
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, errorText, when } from '../api.ts';
import { FieldError, count, hashQuery, usd } from '../components.ts';
import type { Project } from './sessions.ts';
import type { BudgetAnswer as Budget, PriceAnswer as Price, PriceDetail, PriceList, UnknownModel, UnknownModels } from '../../protocol/api/cost.ts';

export function UnknownModels({ admin, priceLink, version }: { admin: boolean; priceLink: (model: string) => string; version: number }) {
  const [models, setModels] = useState<UnknownModel[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<UnknownModels>('/api/cost/unknown-models')
      .then((r) => (setError(null), setModels(r.models)))
      .catch((e) => setError(errorText(e)));
  }, [version]);
  if (error) return html`<p class="failed" role="alert">Could not load the unpriced models: ${error}</p>`;
  if (!models || models.length === 0) return null;
  return html`<section class="card unknown-models" aria-labelledby="unknown-h">
    <h3 id="unknown-h">Unpriced requests</h3>
    <p>These models have no price, so their requests' cost is unknown — not $0 — and counts toward no budget.
      ${admin ? ' Add a price from the start to count them.' : ' An instance admin can add a price.'}</p>
    <div class="scroll"><table>
      <thead><tr><th>Model</th><th>Requests</th><th>Tokens in / out</th><th>Seen</th>${admin && html`<th></th>`}</tr></thead>
      <tbody>
        ${models.map(
          (m) => html`<tr data-model=${m.model}>
            <td><code>${m.model}</code> <span class="muted">${m.runtime}</span></td>
            <td>${count(m.requests)}</td>
            <td>${count(m.inputTokens)} / ${count(m.outputTokens)}</td>
            <td>${when(m.firstAt)} – ${when(m.lastAt)}</td>
            ${admin && html`<td><a class="set-price" href=${priceLink(m.model)}>Set a price</a></td>`}
          </tr>`,
        )}
      </tbody>
    </table></div>
  </section>`;
}

function BudgetForm({ b, onSaved }: { b: Budget; onSaved: (b: Budget) => void }) {
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    const data = new FormData(e.target as HTMLFormElement);
    const amount = String(data.get('budgetUsd') ?? '').trim();
    setSaved(false);
    try {
      const now = await api<Budget>(`/api/projects/${b.projectId}/budget`, { method: 'PUT', body: { budgetUsd: amount === '' ? null : Number(amount), action: data.get('action') } });
      setFields(null);
      setError(null);
      setSaved(true);
      onSaved(now);
    } catch (err) {
      setFields(err instanceof ApiError ? (err.fields ?? null) : null);
      setError(errorText(err));
    }
  };
  return html`<form class="budget-form" onSubmit=${save}>
    <label>Monthly USD<input type="number" name="budgetUsd" min="0" step="any" defaultValue=${b.budgetUsd ?? ''} placeholder="no budget" /></label>
    <${FieldError} fields=${fields} name="budgetUsd" />
    <label>At 100 %<select name="action" value=${b.action}>
      <option value="warn">warn</option><option value="stop">stop triggers and new rounds</option>
    </select></label>
    <button>Save</button> ${saved && html`<span class="ok" role="status">Saved</span>`}
    ${error && html`<p class="failed" role="alert">${error}</p>`}
  </form>`;
}

function spend(b: Budget) {
  return html`${usd(b.monthToDateUsd)}${b.percent !== null && html` <span class=${`percent ${b.exceeded ? 'failed' : b.percent >= 80 ? 'running' : ''}`}>${b.percent.toFixed(1)} %</span>
    <meter min="0" max="100" low="80" high="99.99" optimum="0" value=${Math.min(100, b.percent)} aria-label="Share of the budget spent"></meter>`}
    ${b.stopped && html`<div class="failed">Stopped: triggers are skipped and no new orchestrator round starts this month.</div>`}
    ${b.unpricedRequests > 0 && html`<div class="running">+ ${b.unpricedRequests} unpriced requests</div>`}
    ${b.notices.length > 0 && html`<div class="muted">Admins told at ${b.notices.map((n) => `${n.threshold} %`).join(', ')}</div>`}`;
}

export function Budgets({ projects, version }: { projects: Project[]; version: number }) {
  const [budgets, setBudgets] = useState<Budget[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    Promise.all(projects.map((p) => api<Budget>(`/api/projects/${p.id}/budget`)))
      .then((b) => (setError(null), setBudgets(b)))
      .catch((e) => setError(errorText(e)));
  }, [version]);
  if (projects.length === 0) return null;
  return html`<section class="card budgets" aria-labelledby="budgets-h">
    <h3 id="budgets-h">Budgets${budgets?.[0] && html` <span class="muted">(${budgets[0].month}, UTC)</span>`}</h3>
    <p class="muted">A monthly amount per project: its admins are told at 80 % and 100 %; with <em>stop</em>, inbound triggers are skipped and
      no new orchestrator round starts from 100 % until the month ends or the budget is raised.</p>
    ${error && html`<p class="failed" role="alert">Could not load the budgets: ${error}</p>`}
    ${budgets &&
    html`<div class="scroll"><table>
      <thead><tr><th>Project</th><th>This month</th><th>Budget</th></tr></thead>
      <tbody>
        ${projects.map((p, i) => {
          const b = budgets[i];
          return html`<tr data-project=${p.id} data-role=${p.role}>
            <td><strong>${p.name}</strong><div class="muted">your role: ${p.role}</div></td>
            <td class="spend">${spend(b)}</td>
            <td class="budget">${p.role === 'admin'
              ? html`<${BudgetForm} b=${b} onSaved=${(now: Budget) => setBudgets((list) => list && list.map((x) => (x.projectId === now.projectId ? now : x)))} />`
              : html`${b.budgetUsd === null ? 'No budget' : html`${usd(b.budgetUsd)} a month, ${b.action}`}
                <div class="muted">Set by the project's admins.</div>`}</td>
          </tr>`;
        })}
      </tbody>
    </table></div>`}
  </section>`;
}

const TERMS = [
  ['inputUsdPerMTok', 'Input'],
  ['outputUsdPerMTok', 'Output'],
  ['cacheWrite5mUsdPerMTok', 'Cache write 5 m'],
  ['cacheWrite1hUsdPerMTok', 'Cache write 1 h'],
  ['cacheReadUsdPerMTok', 'Cache read'],
] as const;
const pad = (n: number) => String(n).padStart(2, '0');
const localInput = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;

function PriceForm({ model, onDone }: { model: string; onDone: (saved: string | null) => void }) {
  const [versions, setVersions] = useState<Price[] | null>(null);
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const box = useRef<HTMLFormElement>(null);
  useEffect(() => {
    box.current?.scrollIntoView({ block: 'nearest' });
    if (!model) return setVersions([]);
    api<PriceDetail>(`/api/prices/${encodeURIComponent(model)}`)
      .then((r) => setVersions(r.versions))
      .catch((e) => (e instanceof ApiError && e.status === 404 ? setVersions([]) : setError(errorText(e))));
  }, [model]);
  const now = versions?.filter((v) => Date.parse(v.effectiveFrom) <= Date.now()).pop() ?? versions?.[0];
  const save = async (e: Event) => {
    e.preventDefault();
    const data = Object.fromEntries(new FormData(e.target as HTMLFormElement)) as Record<string, string>;
    const body: Record<string, unknown> = {
      above200k: now?.above200k ?? null,
      longContext: now?.longContext ?? null,
      fastMultiplier: now?.fastMultiplier ?? null,
      effectiveFrom: new Date(data.effectiveFrom).toISOString(),
    };
    for (const [k] of TERMS) if (data[k] !== '') body[k] = Number(data[k]);
    try {
      await api(`/api/prices/${encodeURIComponent(data.model.trim())}`, { method: 'PUT', body });
      onDone(data.model.trim());
    } catch (err) {
      setFields(err instanceof ApiError ? (err.fields ?? null) : null);
      setError(errorText(err));
    }
  };
  if (!versions) return html`<p class="muted">Loading…</p>`;
  // A model without a price yet: from the start, so the requests already seen get priced.
  const from = versions.length ? localInput(new Date()) : '1970-01-01T00:00';
  return html`<form class="card price-form" ref=${box} onSubmit=${save} aria-label=${`Price of ${model || 'a model'}`}>
    <h4>${versions.length ? html`New price version for <code>${model}</code>` : 'Add a price'}</h4>
    <label>Model<input name="model" defaultValue=${model} required readonly=${versions.length > 0} pattern="[A-Za-z0-9._:@\\-]{1,100}" /></label>
    <div class="terms">
      ${TERMS.map(
        ([k, label]) => html`<label>${label} <span class="muted">USD / M tokens</span>
          <input type="number" name=${k} min="0" step="any" required=${k === 'inputUsdPerMTok' || k === 'outputUsdPerMTok'} defaultValue=${now ? String(now[k]) : ''} />
          <${FieldError} fields=${fields} name=${k} /></label>`,
      )}
    </div>
    <label>Effective from<input type="datetime-local" name="effectiveFrom" defaultValue=${from} required /></label>
    <p class="muted">Requests before this time keep the price they had.${versions.length === 0 ? ' From the start, requests already seen without a price get this one.' : ''}
      ${now && (now.above200k || now.longContext || now.fastMultiplier) ? ' Long-context and fast-mode prices are kept from the current version.' : ''}</p>
    ${versions.length > 0 &&
    html`<div class="muted versions">Versions: ${versions.map((v) => html`<div>from ${when(v.effectiveFrom)}: ${usd(v.inputUsdPerMTok)} in, ${usd(v.outputUsdPerMTok)} out</div>`)}</div>`}
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    <button>Add version</button> <button type="button" class="secondary" onClick=${() => onDone(null)}>Cancel</button>
  </form>`;
}

export function Prices({ admin, open, onChanged }: { admin: boolean; open: string | null; onChanged: () => void }) {
  const [prices, setPrices] = useState<PriceList['prices'] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(admin ? open : null);
  const [notice, setNotice] = useState<string | null>(null);
  const load = () =>
    api<PriceList>('/api/prices')
      .then((r) => setPrices(r.prices))
      .catch((e) => setError(errorText(e)));
  useEffect(() => void load(), []);
  useEffect(() => setEditing(admin ? open : null), [open]);
  const done = (saved: string | null) => {
    setEditing(null);
    if (hashQuery().has('price')) location.hash = location.hash.replace(/[?&]price=[^&]*/, '').replace(/^(#\/cost)&/, '$1?');
    if (!saved) return;
    setNotice(`Price version saved for ${saved}.`);
    void load();
    onChanged();
  };
  return html`<section class="card prices" aria-labelledby="prices-h">
    <h3 id="prices-h">Prices <span class="muted">(USD per million tokens, the version in force now)</span></h3>
    ${admin && editing === null && html`<p><button type="button" class="secondary" onClick=${() => (setNotice(null), setEditing(''))}>Add a price</button></p>`}
    ${notice && html`<p class="ok" role="status">${notice}</p>`}
    ${editing !== null && html`<${PriceForm} key=${editing} model=${editing} onDone=${done} />`}
    ${error && html`<p class="failed" role="alert">Could not load the prices: ${error}</p>`}
    ${prices &&
    html`<div class="scroll"><table class="price-table">
      <thead><tr><th>Model</th>${TERMS.map(([, l]) => html`<th>${l}</th>`)}<th>Since</th>${admin && html`<th></th>`}</tr></thead>
      <tbody>
        ${prices.map(
          (p) => html`<tr data-model=${p.model}>
            <td><code>${p.model}</code></td>
            ${TERMS.map(([k]) => html`<td>${p[k]}</td>`)}
            <td>${Date.parse(p.effectiveFrom) < 86_400_000 ? 'always' : when(p.effectiveFrom)}${p.versions > 1 && html`<div class="muted">${p.versions} versions</div>`}</td>
            ${admin && html`<td><button type="button" class="secondary" onClick=${() => (setNotice(null), setEditing(p.model))}>Add a version</button></td>`}
          </tr>`,
        )}
      </tbody>
    </table></div>`}
  </section>`;
}
