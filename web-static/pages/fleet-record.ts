// A pull request's record on the Fleet page (issue #40 part 3; docs/orchestrator.md, "A record per pull
// request"): the Record button of a slot's pull request opens it — the issue, the sessions and runs with
// their cost and tokens, each approval (who, how) and the merge with the checks at that moment, and each
// step's audit record (seq and hash) — and "Download JSON" saves the answer of
// GET /api/projects/:projectId/pulls/:number/record as it is (the browser sends the session cookie).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { Alert, Badge, Dialog, count, hashOf, usd } from '../components.ts';
import type { PullRecord, PullStep } from '../../protocol/api/pull-record.ts';

const HOW: Record<string, string> = { page: 'on the Fleet page', link: 'with an action link', api: 'through the API', runner: "seen by the runner's poll", app: 'told by the GitHub App' };
const tone = (s: string | null) => (s === 'passed' ? 'ok' : s === 'failed' ? 'failed' : s === 'pending' ? 'warn' : 'muted');

function Step({ s }: { s: PullStep }) {
  return html`<li class="pr-step" data-step=${s.step} data-via=${s.via}>
    <strong>${s.step === 'approved' ? `Approved by ${s.userName ?? s.actorLabel}` : 'Merged'}</strong> ${HOW[s.via] ?? s.via} <span class="muted">${when(s.at)}</span>
    <br />Checks then: <${Badge} text=${s.checks.state ?? 'unknown'} tone=${tone(s.checks.state)} /> ${s.checks.summary ?? ''}${s.checks.sha ? html` <code>${s.checks.sha.slice(0, 10)}</code>` : ''}
    <br /><span class="muted">Audit record <span class="audit-seq">${s.audit.seq}</span>, hash <code class="audit-hash" title=${s.audit.hash}>${s.audit.hash.slice(0, 16)}…</code></span>
  </li>`;
}

export function RecordDialog({ projectId, pr, onClose }: { projectId: string; pr: number; onClose: () => void }) {
  const path = `/api/projects/${projectId}/pulls/${pr}/record`;
  const [rec, setRec] = useState<PullRecord | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<PullRecord>(path).then(setRec, (e) => setError(errorText(e)));
  }, [path]);
  const steps = rec ? [...rec.approvals, ...(rec.merge ? [rec.merge] : [])] : [];
  return html`<${Dialog} title=${`Record of pull request #${pr}`} onClose=${onClose}>
    <${Alert} error=${error} />
    ${!rec && !error && html`<p class="muted">Reading the record…</p>`}
    ${rec &&
    html`<dl class="facts pr-record">
        <dt>Pull request</dt><dd>${rec.url ? html`<a href=${rec.url} rel="noreferrer" target="_blank">#${rec.number}</a>` : `#${rec.number}`} ${rec.title ?? ''} <${Badge} text=${rec.state} tone=${rec.state === 'merged' ? 'ok' : 'muted'} /></dd>
        <dt>Issue</dt><dd>${rec.issue ? html`${rec.issue.url ? html`<a href=${rec.issue.url} rel="noreferrer" target="_blank">#${rec.issue.number}</a>` : `#${rec.issue.number}`} ${rec.issue.title ?? ''}` : '—'}</dd>
        <dt>Cost</dt><dd class="pr-cost">${usd(rec.totals.costUsd)} over ${rec.sessions.length} agent session${rec.sessions.length === 1 ? '' : 's'} and ${rec.runs.length} run${rec.runs.length === 1 ? '' : 's'} (${count(rec.totals.inputTokens)} input, ${count(rec.totals.outputTokens)} output tokens)</dd>
      </dl>
      <table class="pr-sessions">
        <thead><tr><th>Session</th><th>Models</th><th>Requests</th><th>Tokens in / out</th><th>Cost</th></tr></thead>
        <tbody>${rec.sessions.map((s) => html`<tr data-session=${s.sessionId}><td><a href=${hashOf('sessions', { session: s.id })}>${s.sessionId.slice(0, 12)}</a>${s.runId ? html` <span class="muted">run ${s.runId}</span>` : ''}</td><td>${s.models.join(', ')}</td><td>${s.requests}</td><td>${count(s.inputTokens)} / ${count(s.outputTokens)}</td><td>${usd(s.costUsd)}</td></tr>`)}
          ${rec.runs.map((r) => html`<tr data-run=${r.id}><td>Run ${r.id} (${r.skill}, ${r.state})</td><td></td><td>${r.requests}</td><td>${count(r.inputTokens)} / ${count(r.outputTokens)}</td><td>${usd(r.costUsd)}</td></tr>`)}</tbody>
      </table>
      <h4>Approvals and merge</h4>
      ${steps.length ? html`<ol class="pr-steps">${steps.map((s) => html`<${Step} s=${s} />`)}</ol>` : html`<p class="muted">Not approved through svc yet.</p>`}`}
    <div class="actions">
      <a class="button secondary" href=${path} download=${`pull-${pr}-record.json`}>Download JSON</a>
      <button type="button" class="secondary" onClick=${onClose}>Close</button>
    </div>
  </${Dialog}>`;
}
