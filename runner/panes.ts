// The pane watcher (docs/orchestrator.md "Pane watcher"): every fleet.pollSeconds it lists the tmux
// sessions of the watched projects' orchestrators and slots, captures their panes (one tmux client for
// all of them, and only panes with output since the last capture), and spools
//   pane.prompt     when a prompt only a person can answer appears (once per occurrence),
//   pane.quota_hit  when a provider usage-limit message appears (once per occurrence),
//   pane.cleared    (internal) when such a prompt or message is gone again,
//   orchestrator.stopped / slot.stopped  when a session ended without a stop command; an orchestrator's
//     session keeps its pane when the agent exits (remain-on-exit), so the report carries the agent's
//     exit code (`reason: "exited"`, `exitCode`), and then the watcher ends the session,
//   orchestrator.started  when an orchestrator session appeared that no command started.
// Commands that start or stop sessions tell the watcher (expectSession), so nothing is reported twice.
import type { ProjectEntry } from './config.ts';
import { errorText, log } from './log.ts';
import { RUNTIMES } from './runtimes/index.ts';
import { readPane } from './pane-text.ts';
import type { PaneReading } from './pane-text.ts';
import type { Env } from './paths.ts';
import { capturePanes, clearRecordedEnd, killSession, listSessions, paneEnd, sessionName } from './tmux.ts';
import type { PaneEnd, SessionInfo } from './tmux.ts';

export interface FleetEvent {
  projectId: string;
  type: string;
  slot?: string;
  issue?: number;
  data: Record<string, unknown>;
}
export type Report = (e: FleetEvent) => void;

/** A session of ours: which project, orchestrator or which slot. */
export interface Owned {
  projectId: string;
  role: 'orchestrator' | 'slot';
  slot?: string;
}

/** Map a session name to its project (the longest project id that fits wins). */
export function ownerOf(name: string, projects: readonly ProjectEntry[]): Owned | null {
  let best: Owned | null = null;
  let bestLen = -1;
  for (const p of projects) {
    if (p.id.length <= bestLen) continue;
    if (name === sessionName.orchestrator(p.id)) (best = { projectId: p.id, role: 'orchestrator' }), (bestLen = p.id.length);
    const prefix = sessionName.slot(p.id, '');
    if (name.startsWith(prefix) && /^[A-Za-z0-9_-]{1,32}$/.test(name.slice(prefix.length))) {
      (best = { projectId: p.id, role: 'slot', slot: name.slice(prefix.length) }), (bestLen = p.id.length);
    }
  }
  return best;
}

/** Sessions a command just started or stopped: the watcher adopts or forgets them silently. */
const expected = new Map<string, 'started' | 'stopped'>();
export const expectSession = (name: string, what: 'started' | 'stopped') => void expected.set(name, what);

/** tmux options of an orchestrator's session: its pane stays after the agent exits, so its exit code can be read. */
export const ORCHESTRATOR_OPTIONS = { 'remain-on-exit': 'on' } as const;

/**
 * End a session whose pane is dead and say how its agent ended; null when the pane is alive or the
 * session is gone, or when someone else ended it first (then they report it, never both).
 */
export async function reapDead(env: Env, name: string, waitMs?: number): Promise<PaneEnd | null> {
  const end = await paneEnd(env, name, waitMs);
  if (!end) return null;
  const mine = await killSession(env, name);
  if (mine) clearRecordedEnd(env, name);
  return mine ? end : null;
}

/** The data of `orchestrator.stopped` for an agent that exited: the exit code (or signal) when known. */
export const exitedData = (session: string, end: PaneEnd): Record<string, unknown> => ({
  reason: 'exited',
  session,
  ...(end.exitCode !== null ? { exitCode: end.exitCode } : {}),
  ...(end.signal !== null ? { signal: end.signal } : {}),
});

interface Tracked extends Owned {
  runtime: string;
  issue?: number;
  promptKey: string | null;
  quotaKey: string | null;
  /** Unix seconds when the last capture began; 0 before the first one. */
  capturedAt: number;
}

/** Recapture a quiet pane at least this often (a resize redraws without output). */
const RECAPTURE_S = 60;

export class PaneWatcher {
  private readonly tracked = new Map<string, Tracked>();
  private first = true;
  private timer?: NodeJS.Timeout;
  private busy: Promise<void> | null = null;
  polls = 0;

  constructor(
    private readonly env: Env,
    private readonly pollMs: number,
    private readonly projects: () => readonly ProjectEntry[],
    private readonly report: Report,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    void this.poll();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One poll; a poll already running is awaited instead of overlapping. */
  poll(): Promise<void> {
    if (!this.busy) {
      this.busy = this.pollOnce()
        .catch((e) => log.warn('pane watcher poll failed', { error: errorText(e) }))
        .finally(() => (this.busy = null));
    }
    return this.busy;
  }

  private async pollOnce(): Promise<void> {
    const projects = this.projects();
    if (projects.length === 0 && this.tracked.size === 0) return;
    let sessions: SessionInfo[];
    try {
      sessions = await listSessions(this.env);
    } catch (e) {
      if (this.first) log.warn('pane watcher: tmux cannot be used; retrying every poll', { error: errorText(e) });
      this.first = false;
      return;
    }
    this.polls++;
    const present = new Map<string, { info: SessionInfo; owner: Owned }>();
    for (const info of sessions) {
      const owner = ownerOf(info.name, projects);
      if (owner) present.set(info.name, { info, owner });
    }
    this.noticeGone(present);
    const now = Math.floor(Date.now() / 1000);
    const toCapture: string[] = [];
    for (const [name, { info, owner }] of present) {
      if (info.paneDead && owner.role === 'orchestrator') {
        // The agent exited and remain-on-exit kept its pane: report how, then end the session.
        this.tracked.delete(name);
        expected.delete(name);
        const end = await reapDead(this.env, name);
        if (end) this.report({ projectId: owner.projectId, type: 'orchestrator.stopped', data: exitedData(name, end) });
        continue;
      }
      let t = this.tracked.get(name);
      if (!t) {
        t = { ...owner, runtime: info.runtime, issue: Number(info.issue) || undefined, promptKey: null, quotaKey: null, capturedAt: 0 };
        this.tracked.set(name, t);
        const mark = expected.get(name);
        expected.delete(name);
        if (!this.first && mark !== 'started' && owner.role === 'orchestrator') this.report({ projectId: owner.projectId, type: 'orchestrator.started', data: { session: name, origin: 'observed', ...(info.profile ? { profile: info.profile } : {}) } });
      }
      if (info.paneDead) continue;
      if (t.capturedAt === 0 || info.activity >= t.capturedAt - 1 || now - t.capturedAt >= RECAPTURE_S) toCapture.push(name);
    }
    this.first = false;
    const texts = await capturePanes(this.env, toCapture);
    for (const [name, text] of texts) {
      const t = this.tracked.get(name);
      if (!t || text === null) continue;
      t.capturedAt = now;
      this.judge(name, t, readPane(text));
    }
  }

  private noticeGone(present: Map<string, unknown>): void {
    for (const [name, t] of this.tracked) {
      if (present.has(name)) continue;
      this.tracked.delete(name);
      const mark = expected.get(name);
      expected.delete(name);
      if (mark === 'stopped') continue;
      const type = t.role === 'orchestrator' ? 'orchestrator.stopped' : 'slot.stopped';
      this.report({ projectId: t.projectId, type, ...(t.slot ? { slot: t.slot } : {}), ...(t.issue ? { issue: t.issue } : {}), data: { reason: 'session_ended', session: name } });
    }
  }

  /** Report a prompt or a usage limit once per occurrence, and its end. */
  private judge(name: string, t: Tracked, r: PaneReading): void {
    const base = { projectId: t.projectId, ...(t.slot ? { slot: t.slot } : {}), ...(t.issue ? { issue: t.issue } : {}) };
    const who = { session: name, role: t.role, ...(t.runtime ? { runtime: t.runtime } : {}) };
    const promptKey = r.prompt?.key ?? null;
    if (promptKey !== t.promptKey) {
      if (r.prompt) this.report({ ...base, type: 'pane.prompt', data: { ...who, promptKind: r.prompt.kind } });
      else this.report({ ...base, type: 'pane.cleared', data: { ...who, was: 'prompt' } });
      t.promptKey = promptKey;
    }
    const quotaKey = r.quota?.key ?? null;
    if (quotaKey !== t.quotaKey) {
      if (r.quota) {
        const provider = r.quota.provider ?? (t.runtime && t.runtime in RUNTIMES ? RUNTIMES[t.runtime as keyof typeof RUNTIMES].provider : null);
        this.report({ ...base, type: 'pane.quota_hit', data: { ...who, ...(provider ? { provider } : {}), ...(r.quota.resetsAt ? { resetsAt: r.quota.resetsAt } : {}) } });
      } else this.report({ ...base, type: 'pane.cleared', data: { ...who, was: 'quota' } });
      t.quotaKey = quotaKey;
    }
  }
}
