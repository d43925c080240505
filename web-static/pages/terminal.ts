// Terminal (spec: terminal.attach, admin): choose a project and one of its tmux sessions (the
// orchestrator `svc-<projectId>-orch`, a slot `svc-<projectId>-slot-<slot>` or a skill run
// `svc-run-<runId>`), attach, type, detach. Not offered when the runner has the terminal turned off.
// The session keeps running after Detach. Every attach is in the audit log.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api } from '../api.ts';
import { hashQuery } from '../components.ts';
import type { Mounted } from '../terminal-view.ts';
import type { ListedProject, ProjectList } from '../../protocol/api/projects.ts';
import type { CommandDone, RunnerList } from '../../protocol/api/runners.ts';

export function TerminalPage() {
  const [projects, setProjects] = useState<ListedProject[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [projectId, setProjectId] = useState('');
  const [session, setSession] = useState('');
  const [status, setStatus] = useState<string | null>(null);
  const [attached, setAttached] = useState(false);
  // Runners' capabilities when this user may list runners (instance admins): a runner with
  // terminal.attach disabled has no `terminal` capability, and then Attach is not offered.
  const [capabilities, setCapabilities] = useState<Map<string, string[]>>(new Map());
  // What runs in the chosen project (orchestrator.status): the session names, or why it is not known.
  const [running, setRunning] = useState<{ projectId: string; sessions: string[] | null; note: string | null } | null>(null);
  const box = useRef<HTMLDivElement>(null);
  const mounted = useRef<Mounted | null>(null);
  useEffect(() => {
    api<ProjectList>('/api/projects')
      .then((r) => {
        // terminal.attach needs the admin role on the project (instance admins have it everywhere).
        const mine = r.projects.filter((p) => p.runnerId && p.role === 'admin');
        setProjects(mine);
        setLoaded(true);
        // `#/terminal?project=<id>&session=<name>` (the Fleet page's Open terminal) preselects both.
        const q = hashQuery();
        const asked = mine.find((p) => p.id === q.get('project')) ?? mine[0];
        if (asked) {
          setProjectId(asked.id);
          setSession(asked.id === q.get('project') && q.get('session') ? q.get('session')! : `svc-${asked.id}-orch`);
        }
      })
      .catch((e) => setStatus(e.message));
    api<RunnerList>('/api/runners')
      .then((r) => setCapabilities(new Map(r.runners.map((x) => [x.id, x.capabilities]))))
      .catch(() => {}); // not an instance admin: the runner answers `disabled` if it is off
    return () => mounted.current?.detach();
  }, []);

  const attach = async (ev: Event) => {
    ev.preventDefault();
    setStatus(null);
    const view = await import('../terminal-view.ts'); // its own chunk: xterm.js is loaded only now
    const ws = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/terminal?projectId=${encodeURIComponent(projectId)}&session=${encodeURIComponent(session)}`;
    setAttached(true);
    await new Promise((r) => setTimeout(r, 0)); // the box is shown (rendered) before xterm measures it
    mounted.current = view.mountTerminal(box.current!, ws, (why) => {
      setStatus(why);
      setAttached(false);
      mounted.current?.detach();
      mounted.current = null;
    });
  };
  const detach = () => {
    mounted.current?.detach();
    mounted.current = null;
    setAttached(false);
    setStatus('Detached; the session keeps running.');
  };

  // Say before Attach whether anything runs there: attaching to a session that does not exist shows nothing.
  useEffect(() => {
    if (!projectId) return;
    setRunning(null);
    api<CommandDone<{ present: boolean; session: string; slots: { session: string; state: string }[] }>>(`/api/projects/${encodeURIComponent(projectId)}/commands`, {
      method: 'POST',
      body: { name: 'orchestrator.status' },
    })
      .then((r) => {
        const live = [...(r.data.present ? [r.data.session] : []), ...r.data.slots.map((x) => x.session)];
        setRunning({ projectId, sessions: live, note: null });
        if (live.length && !live.includes(session) && !hashQuery().get('session')) setSession(live[0]);
      })
      .catch((e) =>
        setRunning({ projectId, sessions: null, note: e instanceof ApiError && e.code === 'runner_offline' ? "The project's runner is offline: no session can be attached until it is back." : null }),
      );
  }, [projectId]);

  const runnerId = projects.find((p) => p.id === projectId)?.runnerId;
  const off = runnerId ? capabilities.get(runnerId)?.includes('terminal') === false : false;

  if (loaded && projects.length === 0) {
    return html`<div class="card" role="note">
      <p>No project has a runner yet, so there is no session to attach to.</p>
      <p class="muted">A terminal opens on a project's tmux sessions (its orchestrator, a worker slot or a skill run) on the
        machine of the project's runner. Pair a runner on the <a href="#/runners">Runners</a> page and give a project that
        runner and a root path; then come back here.</p>
    </div>`;
  }
  return html`
    <form class="inline terminal-form" onSubmit=${attach}>
      <select name="project" aria-label="Project" value=${projectId} disabled=${attached}
        onChange=${(e: Event) => {
          const id = (e.target as HTMLSelectElement).value;
          setProjectId(id);
          setSession(`svc-${id}-orch`);
        }}>
        ${projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}
      </select>
      <input name="session" aria-label="tmux session" value=${session} disabled=${attached} onInput=${(e: Event) => setSession((e.target as HTMLInputElement).value)} />
      <button type="submit" disabled=${!projectId || attached || off}>Attach</button>
      <button type="button" class="secondary" disabled=${!attached} onClick=${detach}>Detach</button>
    </form>
    ${off && html`<p class="muted" role="note">The terminal is turned off on this project's runner (<code>disabledCommands</code>).</p>`}
    ${!attached && running?.projectId === projectId && (running.note || running.sessions?.length === 0)
      ? html`<p class="muted nothing-runs" role="note">${running.note ??
          html`Nothing runs in this project now: no orchestrator round and no worker slot. Start a round on <a href=${`#/fleet/${projectId}`}>Fleet</a> (or a skill run), then attach to its session.`}</p>`
      : null}
    ${!attached && running?.sessions?.length ? html`<p class="muted" role="note">Running now: ${running.sessions.map((n, i) => html`${i ? ', ' : ''}<code>${n}</code>`)}.</p>` : null}
    ${status && html`<p class="muted" role="status">${status}</p>`}
    <div class="terminal" ref=${box} hidden=${!attached}></div>
  `;
}
