// Admin pages: Preact + htm, no build-time JSX. This page lists system jobs (spec: Schedules page).
import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

interface Job {
  name: string;
  description: string;
  cron: string;
  nextRunAt: string | null;
  lastRun: null | { scheduledFor: string; status: string; finishedAt: string | null; error: string | null; result: unknown };
}

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

function Schedules() {
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    fetch('/api/schedules')
      .then(async (r) => (r.ok ? setJobs((await r.json()).jobs) : setError(`the server answered ${r.status}`)))
      .catch((e) => setError(String(e)));
  }, []);
  if (error) return html`<p class="failed" role="alert">Could not load schedules: ${error}</p>`;
  if (!jobs) return html`<p class="muted">Loading…</p>`;
  return html`<table>
    <thead><tr><th>Job</th><th>Schedule</th><th>Next run</th><th>Last run</th></tr></thead>
    <tbody>
      ${jobs.map(
        (j) => html`<tr data-job=${j.name}>
          <td><strong>${j.name}</strong><div class="muted">${j.description}</div></td>
          <td><code>${j.cron}</code></td>
          <td>${when(j.nextRunAt)}</td>
          <td>${j.lastRun
            ? html`<span class=${j.lastRun.status}>${j.lastRun.status}</span> ${when(j.lastRun.finishedAt ?? j.lastRun.scheduledFor)}
                ${j.lastRun.error ? html`<div class="failed">${j.lastRun.error}</div>` : null}`
            : html`<span class="muted">never</span>`}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

function App() {
  return html`<header><h1>svc</h1><span>Schedules</span></header><main><h2>Schedules</h2><${Schedules} /></main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
