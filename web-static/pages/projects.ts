// Projects (#/projects, #/projects?project=<id>): the list of projects the caller can see with their
// role; create (instance admins); one project's settings — name, repository, budget, caps (project admins),
// which runner serves it and its root path on that machine (instance admins only, docs/security.md
// "Runners and project roots"; Check asks the runner with project.inspect whether the path is a
// repository) — its members and their roles, and the commands its runner refuses (runner.json
// `disabledCommands`, read-only here) — and its code-host mode: the GitHub App's tokens ("App installed
// on acme/app") or the runner's own ("runner token: gh auth as @alice"), with a warning when neither
// works (GET /api/projects/:id/codehost-mode). A viewer sees the same facts without a button.
// Live: a `project` notice (a project created, changed or deleted, members changed: functions/live)
// re-reads the list and the open project's members and pool (project-pool.ts), a `runner` notice the runners (instance admins);
// so does a reconnect after a gap. A form being filled in keeps what was typed.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, when } from '../api.ts';
import { Alert, Badge, Dialog, FieldError, hashOf, hashQuery, usd, useAction } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import { can } from '../session.ts';
import { CodehostForm } from './codehost-form.ts';
import { Pool } from './project-pool.ts';
import type { UserList } from '../../protocol/api/auth.ts';
import type { Me, Role } from '../session.ts';
import type { ListedProject, MemberAnswer, MemberList, ProjectAnswer, ProjectList } from '../../protocol/api/projects.ts';
import type { CodehostMode } from '../../protocol/api/codehost-mode.ts';
import type { CommandAnswer, CommandDone, RunnerList, RunnerView } from '../../protocol/api/runners.ts';

/** A project as the pages hold it: with the caller's role when it came from the list (GET /api/projects). */
export type Project = ProjectAnswer & { role?: ListedProject['role'] };
type Runner = RunnerView;
interface Inspected {
  root: string;
  remote: { name: string; url: string } | null;
  branch: string | null;
  defaultBranch: string | null;
  lastCommit: { sha: string; time: string; subject: string } | null;
}

const ROLES: Role[] = ['viewer', 'operator', 'admin'];

/** The root's check as a badge: checked, unchecked (the runner was offline; checked when it connects), or the problem. */
function RootCheckBadge({ project }: { project: Project }) {
  const c = project.rootCheck;
  if (!c) return null;
  if (c.state === 'ok') return html`<span class="root-check" data-state="ok"><${Badge} text="checked" tone="ok" /></span>`;
  if (c.state === 'unchecked') return html`<span class="root-check" data-state="unchecked" title=${c.message ?? ''}><${Badge} text="unchecked" tone="muted" /></span>`;
  return html`<span class="root-check" data-state="failed"><${Badge} text="not a repository" tone="failed" /> <span class="field-error">${c.message}</span></span>`;
}
const runnerLabel = (r: Runner | undefined) => (r ? r.name || r.hostname || r.id : '—');

/** owner/name from a remote URL (https://host/owner/name.git, git@host:owner/name.git), when it has that shape. */
export function repoFromRemote(url: string): string | null {
  const m = /[/:]([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,100}?)(?:\.git)?\/?$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : null;
}

/** The API's conflicts that belong to one field, shown beside it like a 400's field errors. */
function conflictFields(e: unknown): Record<string, string> | null {
  if (!(e instanceof ApiError)) return null;
  if (e.code === 'root_overlaps') return { rootPath: e.message };
  if (e.code === 'name_taken') return { name: e.message };
  return null;
}

/**
 * Create a project, or change one. Runner and root path are editable by instance admins only; others
 * see them read-only. Check sends project.inspect to the chosen runner and shows what it found.
 */
export function ProjectForm({ me, runners, project, onSaved }: { me: Me; runners: Runner[]; project?: Project; onSaved: (p: Project) => void }) {
  const { error, fields, busy, run } = useAction();
  const [extra, setExtra] = useState<Record<string, string> | null>(null);
  const [runnerId, setRunnerId] = useState(project?.runnerId ?? runners[0]?.id ?? '');
  const [rootPath, setRootPath] = useState(project?.rootPath ?? '');
  const [repo, setRepo] = useState(project?.repo ?? '');
  // Every field is held in state: a re-render (Check's answer) must not reset what was typed.
  const [name, setName] = useState(project?.name ?? '');
  const [budget, setBudget] = useState(project?.budgetUsd === null || project?.budgetUsd === undefined ? '' : String(project.budgetUsd));
  const [budgetAction, setBudgetAction] = useState<string>(project?.budgetAction ?? 'warn');
  const capText = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  const [capIssue, setCapIssue] = useState(capText(project?.caps?.perIssueUSD));
  const [capRun, setCapRun] = useState(capText(project?.caps?.perRunUSD));
  const input = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);
  const [inspected, setInspected] = useState<Inspected | null>(null);
  const [checking, setChecking] = useState(false);
  const placement = me.user.instanceAdmin;
  const shown = { ...(fields ?? {}), ...(extra ?? {}) };

  const check = async () => {
    setInspected(null);
    setExtra(null);
    if (!runnerId) return setExtra({ runnerId: 'choose a runner first' });
    setChecking(true);
    try {
      const out = await api<CommandAnswer<Inspected>>(`/api/runners/${runnerId}/commands`, {
        method: 'POST',
        body: { name: 'project.inspect', args: { path: rootPath } },
      });
      if (!out.ok || !out.data) return setExtra({ rootPath: out.error?.message ?? 'the runner could not read this path' });
      setInspected(out.data);
      setRootPath(out.data.root);
      const fromRemote = out.data.remote && repoFromRemote(out.data.remote.url);
      if (!repo && fromRemote) setRepo(fromRemote);
    } catch (e) {
      const f = e instanceof ApiError && e.fields ? Object.fromEntries(Object.entries(e.fields).map(([k, v]) => [k.replace(/^args\./, ''), v])) : null;
      // project.inspect answers 502 with the runner's reason (not a repository, outside the roots…).
      const reason = e instanceof ApiError && (e.body as { error?: { message?: string } })?.error?.message;
      setExtra(f && f.path ? { rootPath: f.path } : { rootPath: reason || (e instanceof Error ? e.message : String(e)) });
    } finally {
      setChecking(false);
    }
  };

  const submit = (e: Event) => {
    e.preventDefault();
    setExtra(null);
    const capOf = (t: string) => (t.trim() === '' ? null : Number(t));
    const body: Record<string, unknown> = { name, repo, budgetUsd: budget.trim() === '' ? null : Number(budget), budgetAction, caps: { perIssueUSD: capOf(capIssue), perRunUSD: capOf(capRun) } };
    if (placement) {
      body.runnerId = runnerId || null;
      body.rootPath = rootPath.trim() || null;
    }
    return run(async () => {
      try {
        const saved = project
          ? await api<Project>(`/api/projects/${project.id}`, { method: 'PATCH', body })
          : await api<Project>('/api/projects', { method: 'POST', body });
        onSaved(saved);
      } catch (err) {
        const c = conflictFields(err);
        if (c) return setExtra(c);
        throw err;
      }
    });
  };

  return html`<form class="grid project-form" onSubmit=${submit} aria-label=${project ? `Settings of ${project.name}` : 'New project'} novalidate>
    <label>Name <input name="name" required maxlength="100" value=${name} onInput=${input(setName)} /><${FieldError} fields=${shown} name="name" /></label>
    <label>Repository <input name="repo" required placeholder="owner/name" value=${repo} onInput=${input(setRepo)} />
      <span class="hint">On the code host, as owner/name.</span><${FieldError} fields=${shown} name="repo" /></label>
    ${placement
      ? html`<label>Runner <select name="runnerId" value=${runnerId} onChange=${(e: Event) => setRunnerId((e.target as HTMLSelectElement).value)}>
            ${project && html`<option value="">No runner</option>`}
            ${runners.map((r) => html`<option value=${r.id}>${runnerLabel(r)} (${r.status})</option>`)}
          </select><${FieldError} fields=${shown} name="runnerId" /></label>
          <div class="full">
            <label>Root path on the runner's machine
              <input name="rootPath" placeholder="/home/dev/src/repo" value=${rootPath} onInput=${input(setRootPath)} />
              <span class="hint">The top directory of the git checkout; it must not hold or lie inside another project's root on the same runner.</span>
              <${FieldError} fields=${shown} name="rootPath" /></label>
            <button type="button" class="secondary" onClick=${check} disabled=${checking || !rootPath.trim()}>${checking ? 'Checking…' : 'Check'}</button>
            ${inspected &&
            html`<p class="ok inspected" role="status">A git repository: ${inspected.remote ? html`<code>${inspected.remote.url}</code>, ` : 'no remote, '}branch ${inspected.branch ?? inspected.defaultBranch ?? '—'}${inspected.lastCommit && html`, last commit “${inspected.lastCommit.subject}” ${when(inspected.lastCommit.time)}`}.</p>`}
          </div>`
      : html`<div class="full"><dl class="facts"><dt>Runner</dt><dd>${project?.runnerId ? html`<code>${project.runnerId}</code>` : 'none'}</dd><dt>Root path</dt><dd><code>${project?.rootPath ?? '—'}</code></dd></dl>
          <p class="hint">Which runner serves the project and its root path are set by instance admins.</p></div>`}
    <label>Monthly budget (USD) <input name="budgetUsd" type="number" min="0" step="0.01" value=${budget} onInput=${input(setBudget)} placeholder="no budget" />
      <${FieldError} fields=${shown} name="budgetUsd" /></label>
    <label>When it is spent <select name="budgetAction" value=${budgetAction} onChange=${input(setBudgetAction)}>
        <option value="warn">warn</option><option value="stop">stop new orchestrator rounds</option>
      </select><${FieldError} fields=${shown} name="budgetAction" /></label>
    <label>Cap per issue (USD) <input name="perIssueUSD" type="number" min="0" step="0.01" value=${capIssue} onInput=${input(setCapIssue)} placeholder="no cap" />
      <span class="hint">All agent sessions of one issue; at the cap its slot is paused and the admins asked to raise it or stop the issue.</span>
      <${FieldError} fields=${shown} name="caps.perIssueUSD" /></label>
    <label>Cap per run (USD) <input name="perRunUSD" type="number" min="0" step="0.01" value=${capRun} onInput=${input(setCapRun)} placeholder="no cap" />
      <span class="hint">One skill run (a trigger or schedule may set its own); at the cap the run is cancelled.</span>
      <${FieldError} fields=${shown} name="caps.perRunUSD" /></label>
    <div class="full"><${Alert} error=${error} /><button disabled=${busy}>${project ? 'Save' : 'Create project'}</button></div>
  </form>`;
}

function Members({ me, project }: { me: Me; project: Project }) {
  const [members, setMembers] = useState<MemberAnswer[] | null>(null);
  const [users, setUsers] = useState<{ email: string }[]>([]);
  const { error, fields, busy, run } = useAction();
  const admin = can(me, project.id, 'admin');
  const load = () => api<MemberList>(`/api/projects/${project.id}/members`).then((m) => setMembers(m.members));
  useEffect(() => {
    void load().catch(() => setMembers([]));
    if (me.user.instanceAdmin) void api<UserList>('/api/users').then((u) => setUsers(u.users), () => {});
  }, [project.id]);
  useLiveRefetch((n) => n.type === 'project' && n.projectId === project.id && n.change === 'members', () => load().catch(() => {}), [project.id]);
  const add = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    return run(async () => {
      await api(`/api/projects/${project.id}/members`, { method: 'POST', body: { email: String(f.get('email') ?? '').trim(), role: f.get('role') } });
      form.reset();
      await load();
    });
  };
  const setRole = (m: MemberAnswer, role: string) => run(async () => (await api(`/api/projects/${project.id}/members/${m.userId}`, { method: 'PUT', body: { role } }), await load()));
  const remove = (m: MemberAnswer) => run(async () => (await api(`/api/projects/${project.id}/members/${m.userId}`, { method: 'DELETE' }), await load()));
  return html`<section class="card members" aria-labelledby="members-h">
    <h3 id="members-h">Members</h3>
    ${members === null
      ? html`<p class="muted">Loading…</p>`
      : members.length === 0
        ? html`<p class="empty">No members yet.${admin ? ' Add someone below: viewers read, operators run agents, admins change the project.' : ''}${me.user.instanceAdmin ? html` New people are invited on <a href="#/settings">Settings</a>.` : ''}</p>`
        : html`<div class="scroll"><table><thead><tr><th>User</th><th>Role</th>${admin && html`<th><span class="muted">Actions</span></th>`}</tr></thead><tbody>
            ${members.map(
              (m) => html`<tr data-member=${m.email}><td>${m.name} <div class="muted">${m.email}</div></td>
                <td>${admin
                  ? html`<select aria-label=${`Role of ${m.email}`} value=${m.role} onChange=${(e: Event) => setRole(m, (e.target as HTMLSelectElement).value)} disabled=${busy}>${ROLES.map((r) => html`<option value=${r}>${r}</option>`)}</select>`
                  : m.role}</td>
                ${admin && html`<td class="actions"><button type="button" class="secondary danger" onClick=${() => remove(m)} disabled=${busy}>Remove</button></td>`}</tr>`,
            )}</tbody></table></div>`}
    ${admin &&
    html`<form class="inline add-member" onSubmit=${add}>
      <label>E-mail <input name="email" type="email" required list="known-users" maxlength="254" /><${FieldError} fields=${fields} name="email" /></label>
      <datalist id="known-users">${users.map((u) => html`<option value=${u.email} />`)}</datalist>
      <label>Role <select name="role">${ROLES.map((r) => html`<option value=${r}>${r}</option>`)}</select></label>
      <button disabled=${busy}>Add member</button>
    </form>`}
    <${Alert} error=${error} />
  </section>`;
}

/** The commands the project's runner refuses (its runner.json), read with runner.describe while it is online. */
function DisabledCommands({ me, project }: { me: Me; project: Project }) {
  const [text, setText] = useState<unknown>(null);
  useEffect(() => {
    if (!project.runnerId) return setText('This project has no runner yet.');
    if (!me.user.instanceAdmin) return setText('Instance admins see what the runner refuses (runner.describe acts on the whole runner).');
    api<CommandDone<{ disabledCommands: string[] }>>(`/api/runners/${project.runnerId}/commands`, { method: 'POST', body: { name: 'runner.describe' } })
      .then((d) => setText(d.data.disabledCommands))
      .catch((e) => setText(e instanceof ApiError && e.code === 'runner_offline' ? 'Shown while the runner is online.' : `Could not ask the runner: ${e.message}`));
  }, [project.runnerId]);
  return html`<section class="card disabled-commands" aria-labelledby="disabled-h">
    <h3 id="disabled-h">Commands the runner refuses</h3>
    ${text === null
      ? html`<p class="muted">Asking the runner…</p>`
      : typeof text === 'string'
        ? html`<p class="muted">${text}</p>`
        : (text as string[]).length === 0
          ? html`<p>None: the runner accepts every command. <span class="muted">Set <code>disabledCommands</code> in its <code>runner.json</code> to refuse some.</span></p>`
          : html`<ul>${(text as string[]).map((c) => html`<li><code>${c}</code></li>`)}</ul><p class="muted">Read-only: set in the runner's <code>runner.json</code> (<code>disabledCommands</code>).</p>`}
  </section>`;
}

/** Which token the project's code-host work runs on and why (GET …/codehost-mode), with a warning when neither works. */
function CodehostModeCard({ project, admin }: { project: Project; admin: boolean }) {
  const [mode, setMode] = useState<CodehostMode | string | null>(null);
  const [edits, setEdits] = useState(0);
  // The form reads the GitLab settings (404 for a project on GitHub) only once it is opened.
  const [editing, setEditing] = useState(false);
  useEffect(() => {
    setMode(null);
    api<CodehostMode>(`/api/projects/${project.id}/codehost-mode`)
      .then(setMode)
      .catch((e) => setMode(`Could not tell: ${e.message}`));
  }, [project.id, project.repo, project.runnerId, edits]);
  const label = { app: 'App mode', runner: 'runner token', none: 'no token', gitlab: 'GitLab token' } as const;
  return html`<section class="card codehost-mode" aria-labelledby="codehost-h">
    <h3 id="codehost-h">Code host</h3>
    ${mode === null
      ? html`<p class="muted">Asking…</p>`
      : typeof mode === 'string'
        ? html`<p class="muted">${mode}</p>`
        : html`<p data-mode=${mode.mode}><${Badge} text=${label[mode.mode]} tone=${mode.mode === 'none' || mode.warning ? 'failed' : 'ok'} /> <span class="codehost-reason">${mode.reason}</span></p>
            ${mode.warning && html`<p class="field-error" role="alert">${mode.warning}</p>`}
            ${mode.mode === 'runner' && mode.appError && mode.appError.code !== 'no_app' && html`<p class="muted">GitHub App: ${mode.appError.message}</p>`}`}
    ${admin &&
    html`<details class="codehost-edit" onToggle=${(e: Event) => setEditing((e.currentTarget as HTMLDetailsElement).open)}><summary>Set the code host (GitLab)</summary>
      ${editing && html`<${CodehostForm} projectId=${project.id} onSaved=${() => setEdits((n) => n + 1)} />`}</details>`}
  </section>`;
}

function ProjectDetail({ me, project, runners, onChanged }: { me: Me; project: Project; runners: Runner[]; onChanged: () => void }) {
  const { error, run } = useAction();
  const [confirming, setConfirming] = useState(false);
  const admin = can(me, project.id, 'admin');
  const runner = runners.find((r) => r.id === project.runnerId);
  const del = () =>
    run(async () => {
      await api(`/api/projects/${project.id}`, { method: 'DELETE' });
      location.hash = '#/projects';
      onChanged();
    });
  return html`<section class="project-detail" aria-label=${`Project ${project.name}`}>
    <div class="page-head"><h3>${project.name}</h3><a href=${`#/fleet/${project.id}`}>Open its fleet</a></div>
    ${admin
      ? html`<div class="card"><${ProjectForm} key=${project.id} me=${me} runners=${runners} project=${project} onSaved=${onChanged} /></div>`
      : html`<div class="card"><dl class="facts">
          <dt>Repository</dt><dd>${project.repo}</dd>
          <dt>Runner</dt><dd>${project.runnerId ? (runner ? runnerLabel(runner) : html`<code>${project.runnerId}</code>`) : 'none'}</dd>
          <dt>Root path</dt><dd><code>${project.rootPath ?? '—'}</code> <${RootCheckBadge} project=${project} /></dd>
          <dt>Budget</dt><dd>${project.budgetUsd === null ? 'none' : `${usd(project.budgetUsd)} a month, then ${project.budgetAction}`}</dd>
          <dt>Caps</dt><dd class="caps">per issue ${project.caps.perIssueUSD === null ? 'none' : usd(project.caps.perIssueUSD)}, per run ${project.caps.perRunUSD === null ? 'none' : usd(project.caps.perRunUSD)}</dd>
          <dt>Your role</dt><dd>${project.role ?? '—'}</dd></dl></div>`}
    <${CodehostModeCard} project=${project} admin=${admin} />
    <${Members} me=${me} project=${project} />
    <${Pool} me=${me} projectId=${project.id} runners=${runners} />
    <${DisabledCommands} me=${me} project=${project} />
    ${me.user.instanceAdmin &&
    html`<div class="card"><h3>Delete</h3><p>Deletes the project and its memberships; the repository on the runner is left as it is.</p>
      <button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete project</button><${Alert} error=${error} /></div>`}
    ${confirming &&
    html`<${Dialog} title=${`Delete ${project.name}?`} onClose=${() => setConfirming(false)}>
      <p>Its members lose access at once. This cannot be undone.</p>
      <div class="actions"><button type="button" class="secondary" onClick=${() => setConfirming(false)}>Cancel</button><button type="button" class="danger" onClick=${() => (setConfirming(false), del())}>Delete</button></div>
    </${Dialog}>`}
  </section>`;
}

export function Projects({ me, reload }: { me: Me; reload: () => void }) {
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [runners, setRunners] = useState<Runner[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const open = hashQuery().get('project');
  const load = () =>
    Promise.all([api<ProjectList>('/api/projects'), me.user.instanceAdmin ? api<RunnerList>('/api/runners') : Promise.resolve({ runners: [] })])
      .then(([p, r]) => (setProjects(p.projects), setRunners(r.runners), setError(null)))
      .catch((e) => setError(e.message));
  useEffect(() => void load(), []);
  useLiveRefetch(me.user.instanceAdmin ? ['project', 'runner'] : 'project', load);
  const changed = () => (void load(), reload());
  if (error) return html`<${Alert} error=${`Could not load the projects: ${error}`} />`;
  if (!projects) return html`<p class="muted">Loading…</p>`;
  const usable = runners.filter((r) => r.status !== 'revoked' && r.status !== 'unpaired');
  const current = open ? projects.find((p) => p.id === open) : undefined;
  return html`
    ${me.user.instanceAdmin &&
    html`<div class="row"><button type="button" onClick=${() => setCreating(true)}>New project</button></div>`}
    ${creating &&
    html`<${Dialog} title="New project" onClose=${() => setCreating(false)}>
      ${usable.length === 0 ? html`<p role="note">Pair a runner first (<a href="#/start">Getting started</a>): a project lives in a repository on a runner's machine.</p>` : null}
      <${ProjectForm} me=${me} runners=${usable} onSaved=${(p: Project) => (setCreating(false), changed(), (location.hash = hashOf('projects', { project: p.id })))} />
      <div class="actions"><button type="button" class="secondary" onClick=${() => setCreating(false)}>Close</button></div>
    </${Dialog}>`}
    ${projects.length === 0
      ? html`<div class="card empty" role="note">${me.user.instanceAdmin
          ? html`<p>No projects yet. Create one with <strong>New project</strong>, or follow <a href="#/start">Getting started</a>.</p>`
          : html`<p>You are not a member of any project yet. Ask an admin to add you.</p>`}</div>`
      : html`<div class="scroll"><table class="projects"><thead><tr><th>Project</th><th>Repository</th><th>Runner</th><th>Budget</th><th>Your role</th></tr></thead><tbody>
          ${projects.map(
            (p) => html`<tr data-project=${p.name} aria-current=${p.id === open ? 'true' : undefined}>
              <td><a href=${hashOf('projects', { project: p.id })}><strong>${p.name}</strong></a></td><td>${p.repo}</td>
              <td>${p.runnerId ? runnerLabel(runners.find((r) => r.id === p.runnerId)) : html`<span class="muted">none</span>`}${p.rootPath && html`<div class="muted"><code>${p.rootPath}</code> <${RootCheckBadge} project=${p} /></div>`}</td>
              <td>${p.budgetUsd === null ? html`<span class="muted">none</span>` : `${usd(p.budgetUsd)} (${p.budgetAction})`}</td><td>${p.role}</td></tr>`,
          )}</tbody></table></div>`}
    ${open && !current && html`<p class="banner warn" role="alert">No project with id <code>${open}</code> here.</p>`}
    ${current && html`<${ProjectDetail} key=${current.id} me=${me} project=${current} runners=${runners} onChanged=${changed} />`}`;
}
