// System jobs next to their next run and last result (spec: the admin Schedules page).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, when } from '../api.ts';

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
  const [actionError, setActionError] = useState<string | null>(null);
  const [started, setStarted] = useState<string | null>(null);
  const load = () =>
    api<{ jobs: Job[] }>('/api/schedules')
      .then((r) => setJobs(r.jobs))
      .catch((e) => setError(e.message));
  useEffect(() => {
    void load();
    const t = setInterval(load, 5000); // a job started with Run now shows its result without a reload
    return () => clearInterval(t);
  }, []);
  const runNow = async (j: Job) => {
    try {
      await api(`/api/schedules/${encodeURIComponent(j.name)}/run`, { method: 'POST' });
      setActionError(null);
      setStarted(j.name);
    } catch (e) {
      setActionError(e instanceof ApiError ? e.message : String(e));
    }
    await load();
  };
  if (error) return html`<p class="failed" role="alert">Could not load schedules: ${error}</p>`;
  if (!jobs) return html`<p class="muted">Loading…</p>`;
  return html`${actionError && html`<p class="failed" role="alert">${actionError}</p>`}
  ${started && html`<p class="ok" role="status">${started} started; its result appears under Last run.</p>`}
  <div class="scroll"><table>
    <thead><tr><th>Job</th><th>Schedule</th><th>Next run</th><th>Last run</th><th></th></tr></thead>
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
          <td><button class="secondary" onClick=${() => runNow(j)}>Run now</button></td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}
