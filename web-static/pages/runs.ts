// Skill runs (docs/skill-runs.md): the runs of every project the user can see, newest first, with
// state and last progress line; one run's report, progress, error and patch (the server keeps at most
// 128 KiB and says when it cut); Cancel for a run that has not ended (operator or more).
// `#/runs?run=<id>` opens that run's details (the trigger delivery log links here). Above them, runs that
// did not start (GET /api/failed-starts: a trigger call or a schedule that started nothing), each with
// its reason in words and what to do. A pool run waiting for a runner (docs/runner.md "Runner pools")
// shows its place in the project's queue and why it waits; a run the server ended shows its reason
// (runner_lost, no_runner_available…), and a retry links to the run it tries again.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { useLiveRefetch } from '../live.ts';
import { RichText } from '../components.ts';
import type { FailedStart, FailedStartList, RunDetail, RunList, RunSummary } from '../../protocol/api/runs.ts';

type Run = RunSummary;

/** The newest runs that did not start; nothing when there are none. */
function FailedStarts({ rows }: { rows: FailedStart[] }) {
  if (rows.length === 0) return null;
  return html`<h3>Did not start</h3>
    <div class="scroll"><table class="failed-starts">
      <thead><tr><th>What</th><th>Project</th><th>Why</th><th>When</th></tr></thead>
      <tbody>${rows.map(
        (f) => html`<tr data-failed-start=${f.id} data-reason=${f.reason}>
          <td><strong>${f.action === 'skill' ? f.skill : 'next orchestrator round'}</strong>
            <div class="muted">${f.source} ${f.sourceName}</div></td>
          <td>${f.projectId}</td>
          <td><span class="failed">Did not start</span>: ${f.words} <span class="muted">(<code>${f.reason}</code>)</span>
            ${f.remedy && html`<div class="remedy"><${RichText} text=${f.remedy} /></div>`}
            ${f.detail && html`<div class="muted">${f.detail}</div>`}</td>
          <td>${when(f.createdAt)}</td>
        </tr>`,
      )}</tbody>
    </table></div>
    <h3>Runs</h3>`;
}

const ENDED = new Set(['succeeded', 'failed', 'timed_out', 'cancelled']);
const stateClass = (s: string) => (s === 'succeeded' ? 'ok' : ENDED.has(s) ? 'failed' : 'running');
const message = errorText;
/** The run a link names: `#/runs?run=<id>`. */
const runInHash = (hash: string) => /^#\/runs\?(?:.*&)?run=([^&]+)/.exec(hash)?.[1] ?? null;

function Detail({ id, onError }: { id: string; onError: (m: string) => void }) {
  const [run, setRun] = useState<RunDetail | null>(null);
  const load = () =>
    api<RunDetail>(`/api/runs/${id}`)
      .then(setRun)
      .catch((e) => onError(message(e)));
  useEffect(() => void load(), [id]);
  useLiveRefetch((n) => (n.type === 'run' || n.type === 'run.progress') && n.id === id, load, [id]);
  if (!run) return html`<p class="muted">Loading…</p>`;
  return html`<div class="run-detail">
    ${run.error && html`<p class="failed">${run.error}</p>`}
    ${run.pullRequest?.url &&
    html`<p>Pull request: <a href=${run.pullRequest.url} target="_blank" rel="noopener noreferrer">#${run.pullRequest.number} ${run.pullRequest.url}</a></p>`}
    ${run.pullRequest?.openError && html`<p class="failed">The pull request could not be opened: ${run.pullRequest.openError}</p>`}
    ${run.report !== null &&
    html`<h4>Report${run.reportTruncated ? ' (cut)' : ''}</h4>
      <pre class="report">${run.report}</pre>`}
    ${run.patch !== null &&
    html`<h4>Patch${run.branch ? html` on <code>${run.branch}</code>` : ''}</h4>
      ${run.patchTruncated && html`<p class="muted">Cut to 128 KiB of ${run.patchBytes} bytes; the full patch is in the run directory on the runner.</p>`}
      <pre class="patch">${run.patch}</pre>`}
    ${run.progress.length > 0 &&
    html`<h4>Progress</h4>
      <pre class="progress">${run.progress.map((p) => p.text).join('\n')}</pre>`}
  </div>`;
}

export function Runs() {
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [failed, setFailed] = useState<FailedStart[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(() => {
    const id = runInHash(location.hash);
    return id && decodeURIComponent(id);
  });
  const load = () =>
    Promise.all([
      api<RunList>('/api/runs?limit=100').then((r) => setRuns(r.runs)),
      api<FailedStartList>('/api/failed-starts?limit=20').then((r) => setFailed(r.failedStarts)),
    ]).catch((e) => setError(message(e)));
  useEffect(() => {
    void load();
    const timer = setInterval(load, 60_000); // a safety net: state changes and progress arrive live
    return () => clearInterval(timer);
  }, []);
  useLiveRefetch(['run', 'run.progress'], load);
  const cancel = async (r: Run) => {
    if (!confirm(`Cancel the ${r.skill} run?`)) return;
    setError(null);
    await api(`/api/projects/${r.projectId}/commands`, { method: 'POST', body: { name: 'skill.cancel', args: { runId: r.id } } }).catch((e) => setError(message(e)));
    await load();
  };

  if (!runs) return error ? html`<p class="failed" role="alert">${error}</p>` : html`<p class="muted">Loading…</p>`;
  return html`
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    <${FailedStarts} rows=${failed} />
    ${open && !runs.some((r) => r.id === open) && html`<div class="card" data-run=${open}><h4>Run <code>${open}</code></h4><${Detail} id=${open} onError=${setError} /></div>`}
    ${runs.length === 0
      ? html`<p class="muted">No skill runs yet.</p>`
      : html`<div class="scroll"><table class="runs">
          <thead><tr><th>Skill</th><th>Project</th><th>State</th><th>Started</th><th>Ended</th><th>Cost</th><th></th></tr></thead>
          <tbody>
            ${runs.map(
              (r) => html`<tr data-run=${r.id}>
                  <td><strong>${r.skill}</strong> <span class="muted">${r.args.join(' ')}</span>
                    ${r.lastProgress && html`<div class="muted">${r.lastProgress}</div>`}</td>
                  <td>${r.projectId}</td>
                  <td><span class=${stateClass(r.state)}>${r.state}</span>
                    ${r.queue && html`<div class="muted queue-place">#${r.queue.position} in the queue: ${r.queue.reason}</div>`}
                    ${r.reason && html`<div class="muted run-reason"><code>${r.reason}</code></div>`}
                    ${r.retryOf && html`<div class="muted">retry of <a href=${`#/runs?run=${encodeURIComponent(r.retryOf)}`} onClick=${() => setOpen(r.retryOf)}><code>${r.retryOf}</code></a></div>`}</td>
                  <td>${when(r.startedAt ?? r.createdAt)}</td>
                  <td>${when(r.finishedAt)}</td>
                  <td>${r.costUsd === null ? '—' : `$${r.costUsd.toFixed(4)}`}</td>
                  <td class="actions">
                    <button class="secondary" onClick=${() => setOpen(open === r.id ? null : r.id)}>${open === r.id ? 'Hide' : 'Details'}</button>
                    ${!ENDED.has(r.state) && html`<button class="secondary" onClick=${() => cancel(r)}>Cancel</button>`}
                  </td>
                </tr>
                ${open === r.id && html`<tr><td colspan="7"><${Detail} id=${r.id} onError=${setError} /></td></tr>`}`,
            )}
          </tbody>
        </table></div>`}
  `;
}
