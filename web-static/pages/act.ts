// `#/act/<token>`: an action link from a notification or a chat button (issue #40 part 2;
// docs/notifications.md, "Action links"). The app signs in first when needed and comes back here (the
// hash stays); the page shows what the link will do, read now (GET /api/act/:token), and ONE button;
// after it, the outcome (POST /api/act/:token). A refusal (expired, done already, not yours, your role)
// is said in words, with nothing to press.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, errorText, when } from '../api.ts';
import { Badge, count, usd } from '../components.ts';
import type { ActionDescription, ActionPerformed } from '../../protocol/api/act.ts';

type State = { kind: 'loading' } | { kind: 'ready'; action: ActionDescription } | { kind: 'refused'; title: string; message: string } | { kind: 'done'; done: ActionPerformed };

const REFUSALS: Record<number, string> = { 403: 'Not allowed', 404: 'Unknown link', 409: 'Nothing to do', 410: 'This link has expired' };

function refusal(e: unknown): State {
  const status = e instanceof ApiError ? e.status : 0;
  return { kind: 'refused', title: REFUSALS[status] ?? 'This link cannot be used now', message: errorText(e) };
}

/** The facts a kind reports (a pull request's title, checks, cost, diff size; a run's skill and error). */
function Facts({ a }: { a: ActionDescription }) {
  const f = a.facts as Record<string, unknown>;
  const rows: [string, unknown][] = [];
  if (a.kind === 'pr.approve') {
    rows.push(['Pull request', f.url ? html`<a href=${String(f.url)} rel="noopener noreferrer" target="_blank">#${String(a.target.number)} ${String(f.title ?? '')}</a>` : `#${String(a.target.number)} ${String(f.title ?? '')}`]);
    rows.push(['Checks', html`<${Badge} text=${String(f.checks ?? 'unknown')} tone=${f.checks === 'passed' ? 'ok' : f.checks === 'failed' ? 'failed' : 'muted'} /> ${String(f.checksSummary ?? '')}`]);
    rows.push(['Cost so far', usd(Number(f.costUsd ?? 0))]);
    if (f.additions != null) rows.push(['Diff', `+${count(Number(f.additions))} −${count(Number(f.deletions))} in ${count(Number(f.files))} file(s)`]);
  } else {
    for (const [k, v] of Object.entries(f)) if (v !== null && v !== undefined && v !== '') rows.push([k, Array.isArray(v) ? v.join(' ') : String(v)]);
  }
  return html`<dl class="facts">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}

export function Act({ param }: { param: string | null }) {
  const token = param ?? '';
  const [state, setState] = useState<State>({ kind: 'loading' });
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api<ActionDescription>(`/api/act/${encodeURIComponent(token)}`).then((action) => setState({ kind: 'ready', action }), (e) => setState(refusal(e)));
  }, [token]);
  const perform = async () => {
    setBusy(true);
    try {
      setState({ kind: 'done', done: await api<ActionPerformed>(`/api/act/${encodeURIComponent(token)}`, { method: 'POST' }) });
    } catch (e) {
      setState(refusal(e));
    } finally {
      setBusy(false);
    }
  };
  if (state.kind === 'loading') return html`<p class="muted">Reading what this link does…</p>`;
  if (state.kind === 'refused') return html`<div class="card act" role="alert"><h3>${state.title}</h3><p>${state.message}</p></div>`;
  if (state.kind === 'done') return html`<div class="card act" role="status"><h3>Done</h3><p class="outcome">${state.done.outcome}</p><p class="muted">at ${when(state.done.usedAt)}</p></div>`;
  const a = state.action;
  return html`<div class="card act">
    <h3>${a.title}</h3>
    <p>${a.summary}${a.projectName ? html` Project <strong>${a.projectName}</strong>.` : ''}</p>
    ${a.note && html`<p class="banner warn">${a.note}</p>`}
    <${Facts} a=${a} />
    <p class="muted">${a.personal ? 'This link was made for you' : "This is a channel's link: it acts as you, with your role"}; it works once, until ${when(a.expiresAt)}.</p>
    <button class="primary" disabled=${busy} onClick=${perform}>${busy ? 'Working…' : a.label}</button>
  </div>`;
}
