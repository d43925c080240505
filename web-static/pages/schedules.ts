// System jobs next to their next run and last result (spec: the admin Schedules page).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, when } from '../api.ts';

interface Job {
  name: string;
  description: string;
  cron: string;
  nextRunAt: string | null;
  lastRun: null | { scheduledFor: string; status: string; finishedAt: string | null; error: string | null };
}

export function Schedules() {
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<{ jobs: Job[] }>('/api/schedules')
      .then((r) => setJobs(r.jobs))
      .catch((e) => setError(e.message));
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
