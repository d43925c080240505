// Project schedules and system jobs, each with its next run and last result (spec: the admin Schedules
// page lists system jobs next to project schedules; docs/schedules.md). Members see their projects'
// schedules; project admins run them now and turn them on or off; system jobs are for instance admins.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, when } from '../api.ts';
import type { Me } from '../session.ts';
import type { ScheduleRunAnswer, SchedulesOverview } from '../../protocol/api/schedules.ts';
import { ScheduleForm } from './schedule-form.ts';

type Job = SchedulesOverview['jobs'][number];
type ProjectSchedule = SchedulesOverview['schedules'][number];

const RESULT_CLASS: Record<string, string> = { started: 'running', succeeded: 'ok', failed: 'failed', skipped: 'muted', cancelled: 'muted' };

export function Schedules({ me }: { me: Me }) {
  const [data, setData] = useState<{ jobs: Job[]; schedules: ProjectSchedule[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [started, setStarted] = useState<string | null>(null);
  const load = () =>
    api<SchedulesOverview>('/api/schedules')
      .then((r) => setData({ jobs: r.jobs, schedules: r.schedules }))
      .catch((e) => setError(e.message));
  useEffect(() => {
    void load();
    const t = setInterval(load, 5000); // a job started with Run now shows its result without a reload
    return () => clearInterval(t);
  }, []);
  const act = async (what: () => Promise<string | null>) => {
    try {
      const message = await what();
      setActionError(null);
      setStarted(message);
    } catch (e) {
      setActionError(e instanceof ApiError ? e.message : String(e));
    }
    await load();
  };
  const runJob = (j: Job) =>
    act(async () => {
      await api(`/api/schedules/${encodeURIComponent(j.name)}/run`, { method: 'POST' });
      return `${j.name} started; its result appears under Last run.`;
    });
  const path = (s: ProjectSchedule) => `/api/projects/${encodeURIComponent(s.projectId)}/schedules/${encodeURIComponent(s.id)}`;
  const runSchedule = (s: ProjectSchedule) =>
    act(async () => {
      const r = await api<ScheduleRunAnswer>(`${path(s)}/run`, { method: 'POST' });
      return r.result === 'started' ? `${s.name} started run ${r.runId ?? ''}.` : `${s.name}: ${r.result} (${r.reason}${r.detail ? `: ${r.detail}` : ''}).`;
    });
  const toggle = (s: ProjectSchedule) =>
    act(async () => {
      await api(path(s), { method: 'PATCH', body: { enabled: !s.enabled } });
      return `${s.name} ${s.enabled ? 'disabled' : 'enabled'}.`;
    });
  if (error) return html`<p class="failed" role="alert">Could not load schedules: ${error}</p>`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  const { jobs, schedules } = data;
  return html`${actionError && html`<p class="failed" role="alert">${actionError}</p>`}
  ${started && html`<p class="ok" role="status">${started}</p>`}
  <h3>Project schedules</h3>
  ${schedules.length === 0
    ? html`<p class="muted">No project schedules${jobs.length ? '' : ' in your projects'}. Project admins create them below (or with <code>POST /api/projects/{projectId}/schedules</code>, docs/schedules.md).</p>`
    : html`<div class="scroll"><table>
    <thead><tr><th>Schedule</th><th>When</th><th>Next run</th><th>Last run</th><th></th></tr></thead>
    <tbody>
      ${schedules.map(
        (s) => html`<tr data-schedule=${s.id}>
          <td><strong>${s.name}</strong><div class="muted">${s.projectName} · skill <code>${s.skill}</code>${s.args.length ? html` <code>${s.args.join(' ')}</code>` : null} · ${s.output === 'pull_request' ? 'pull request' : 'report'}</div></td>
          <td><code>${s.cron}</code><div class="muted">${s.timezone}</div></td>
          <td>${s.enabled ? when(s.nextRunAt) : html`<span class="muted">disabled${s.disabledReason ? ` (${s.disabledReason.replace(/_/g, ' ')})` : ''}</span>`}</td>
          <td>${s.lastRun
            ? html`<span class=${RESULT_CLASS[s.lastRun.result ?? ''] ?? ''}>${s.lastRun.result}</span> ${when(s.lastRun.scheduledFor)}
                ${s.lastRun.runId ? html` <a href=${`#/runs?run=${encodeURIComponent(s.lastRun.runId)}`}>${s.lastRun.runId}</a>` : null}
                ${s.lastRun.reason ? html`<div class=${s.lastRun.result === 'failed' ? 'failed' : 'muted'}>${s.lastRun.reason}${s.lastRun.detail ? `: ${s.lastRun.detail}` : ''}</div>` : null}
                ${s.consecutiveFailures ? html`<div class="muted">${s.consecutiveFailures} failed in a row</div>` : null}`
            : html`<span class="muted">never</span>`}</td>
          <td><button class="secondary" onClick=${() => runSchedule(s)}>Run now</button>
            <button class="secondary" onClick=${() => toggle(s)}>${s.enabled ? 'Disable' : 'Enable'}</button></td>
        </tr>`,
      )}
    </tbody>
  </table></div>`}
  <section class="card new-schedule" aria-labelledby="new-schedule-h"><h4 id="new-schedule-h">New schedule</h4>
    <${ScheduleForm} me=${me} onCreated=${(m: string) => (setStarted(m), void load())} /></section>
  ${jobs.length > 0 &&
  html`<h3>System jobs</h3>
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
          <td><button class="secondary" onClick=${() => runJob(j)}>Run now</button></td>
        </tr>`,
      )}
    </tbody>
  </table></div>`}`;
}
