// New project schedule (Schedules page; docs/schedules.md): the fields of POST
// /api/projects/<projectId>/schedules for the projects the caller administers (every project for an
// instance admin). The API validates every field; its 400 comes back beside the field it names.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Alert, FieldError, useAction } from '../components.ts';
import type { Me } from '../session.ts';
import { BLANK_TARGET, TargetFields, targetBody } from './pool-target.ts';
import type { TargetDraft } from './pool-target.ts';
import type { ProjectList } from '../../protocol/api/projects.ts';

/** Arguments typed on one line, split on white space (the API takes a list of strings). */
export const splitArgs = (text: string): string[] => text.split(/\s+/).filter(Boolean);

export function ScheduleForm({ me, onCreated }: { me: Me; onCreated: (message: string) => void }) {
  const { error, fields, busy, run } = useAction();
  const [projects, setProjects] = useState<{ id: string; name: string }[] | null>(null);
  const [target, setTarget] = useState<TargetDraft>(BLANK_TARGET);
  const setT = (k: keyof TargetDraft) => (e: Event) => {
    const el = e.target as HTMLInputElement;
    setTarget({ ...target, [k]: el.type === 'checkbox' ? el.checked : el.value });
  };
  useEffect(() => {
    // The API's list gives an instance admin every project with role admin.
    api<ProjectList>('/api/projects').then((r) => setProjects(r.projects.filter((p) => p.role === 'admin')), () => setProjects([]));
  }, []);
  if (projects === null) return null;
  if (projects.length === 0) {
    return html`<p class="muted" role="note">${me.user.instanceAdmin
      ? html`A schedule belongs to a project, and there is no project yet. Create one on <a href="#/projects">Projects</a>.`
      : 'Project admins create schedules; you are not an admin of any project.'}</p>`;
  }
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const submit = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const text = (k: string) => String(f.get(k) ?? '').trim();
    const body = {
      name: text('name'),
      cron: text('cron'),
      timezone: text('timezone') || 'UTC',
      skill: text('skill'),
      args: splitArgs(text('args')),
      profile: text('profile') || null,
      model: text('model') || null,
      output: text('output'),
      enabled: f.get('enabled') === 'on',
      capUSD: text('capUSD') ? Number(text('capUSD')) : null,
      ...targetBody(target),
    };
    const projectId = text('projectId');
    return run(async () => {
      await api(`/api/projects/${encodeURIComponent(projectId)}/schedules`, { method: 'POST', body });
      form.reset();
      setTarget(BLANK_TARGET);
      onCreated(`Schedule ${body.name} created.`);
    });
  };
  return html`<form class="grid schedule-form" onSubmit=${submit} aria-label="New schedule" novalidate>
    <label>Project <select name="projectId">${projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}</select></label>
    <label>Name <input name="name" required maxlength="100" placeholder="nightly triage" /><${FieldError} fields=${fields} name="name" /></label>
    <label>When (cron) <input name="cron" required placeholder="0 3 * * 1-5" />
      <span class="hint">5 fields (minute hour day month weekday), or 6 with seconds first; <code>@daily</code> works too.</span><${FieldError} fields=${fields} name="cron" /></label>
    <label>Time zone <input name="timezone" defaultValue=${zone} placeholder="UTC" /><${FieldError} fields=${fields} name="timezone" /></label>
    <label>Skill <input name="skill" required placeholder="triage" /><${FieldError} fields=${fields} name="skill" /></label>
    <label>Arguments <input name="args" placeholder="--label bug" /><span class="hint">Separated by spaces.</span><${FieldError} fields=${fields} name="args" /></label>
    <label>Profile <input name="profile" placeholder="the runner's default" /><${FieldError} fields=${fields} name="profile" /></label>
    <label>Model <input name="model" placeholder="the profile's default" /><${FieldError} fields=${fields} name="model" /></label>
    <label>Cap per run, USD <input name="capUSD" inputmode="decimal" placeholder="the project's" /><${FieldError} fields=${fields} name="capUSD" /></label>
    <label>Output <select name="output"><option value="report">report</option><option value="pull_request">pull request</option></select></label>
    <label class="check"><input type="checkbox" name="enabled" defaultChecked /> Enabled</label>
    <div class="full"><${TargetFields} d=${target} set=${setT} fields=${fields} /></div>
    <div class="full"><${Alert} error=${error} /><button disabled=${busy}>Create schedule</button></div>
  </form>`;
}
