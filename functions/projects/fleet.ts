// A project's fleet as its runner's events tell it (GET /api/projects/:id/fleet): per slot the issue it
// works on, its latest checkpoint, its pull request and that PR's checks, and whether it stopped; and the
// orchestrator's last start or stop. Which PR a slot has comes from the events; the PR's state and checks
// from the server's PR state (codehost_pulls), which App deliveries update too. The live state of the tmux sessions comes from the runner itself
// (orchestrator.status); this is what the server has recorded, so it is there when the runner is not.
import type { FleetView, SlotView } from '../../protocol/api/projects.ts';
import { cappedIssues } from '../cost/caps.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

const KINDS = ['orchestrator.started', 'orchestrator.stopped', 'slot.dispatched', 'slot.checkpoint', 'slot.stopped', 'pr.opened', 'pr.checks_changed', 'pr.merged', 'pr.closed'];
/** How far back the fleet view reads (events of older rounds no longer describe a slot). */
const WINDOW_DAYS = 14;
const EVENTS_MAX = 2000;

const str = (v: unknown) => (typeof v === 'string' ? v : null);
const prOf = (v: unknown): { number: number; url?: string } | null => {
  if (!v || typeof v !== 'object') return null;
  const p = v as { number?: unknown; url?: unknown };
  return Number.isSafeInteger(p.number) ? { number: p.number as number, ...(typeof p.url === 'string' ? { url: p.url } : {}) } : null;
};

export async function fleetView(db: Queryable, runnerId: string | null, projectId: string): Promise<FleetView> {
  if (!runnerId) return { orchestrator: null, slots: [] };
  const rows = await db.query<{ kind: string; ts: Date; payload: { slot?: string; issue?: number; data?: Record<string, unknown> } }>(sql`
    select kind, ts, payload from (
      select kind, ts, payload, received_at, event_id from runner_events
       where runner_id = ${runnerId} and payload ->> 'project' = ${projectId} and kind = any(${KINDS})
         and ts > now() - make_interval(days => ${WINDOW_DAYS})
       order by ts desc, received_at desc limit ${EVENTS_MAX}) recent
     order by ts, received_at, event_id`);
  let orchestrator: FleetView['orchestrator'] = null;
  const slots = new Map<string, SlotView>();
  const byPr = new Map<number, SlotView>();
  for (const r of rows) {
    const at = new Date(r.ts).toISOString();
    const d = r.payload.data ?? {};
    if (r.kind === 'orchestrator.started' || r.kind === 'orchestrator.stopped') {
      orchestrator = { state: r.kind === 'orchestrator.started' ? 'started' : 'stopped', at, reason: str(d.reason) };
      continue;
    }
    const prNumber = prOf(d.pr)?.number;
    let s = r.payload.slot ? slots.get(r.payload.slot) : prNumber ? byPr.get(prNumber) : undefined;
    if (!s && r.payload.slot) {
      s = { slot: r.payload.slot, issue: null, title: null, branch: null, checkpoint: null, pr: null, checks: null, stopped: null, lastEventAt: at };
      slots.set(r.payload.slot, s);
    }
    if (!s) continue;
    s.lastEventAt = at;
    if (Number.isSafeInteger(r.payload.issue)) s.issue = r.payload.issue!;
    switch (r.kind) {
      case 'slot.dispatched': // a new issue in this slot: what was known of the previous one goes
        Object.assign(s, { title: str(d.title), branch: str(d.branch), checkpoint: null, pr: null, checks: null, stopped: null });
        break;
      case 'slot.checkpoint':
        s.checkpoint = { name: str(d.checkpoint) ?? 'checkpoint', summary: str(d.summary), at };
        if (prOf(d.pr) && !s.pr) s.pr = { ...prOf(d.pr)!, state: 'open' };
        break;
      case 'slot.stopped':
        s.stopped = { reason: str(d.reason), at };
        break;
      case 'pr.opened':
        s.pr = { ...prOf(d.pr)!, ...(str(d.title) ? { title: str(d.title)! } : {}), state: 'open' };
        if (str(d.branch)) s.branch = str(d.branch);
        break;
      case 'pr.checks_changed':
        s.checks = { state: str(d.state) ?? 'unknown', summary: str(d.summary), at };
        break;
      case 'pr.merged':
      case 'pr.closed':
        if (s.pr) s.pr.state = r.kind === 'pr.merged' ? 'merged' : 'closed';
        break;
    }
    if (s.pr) byPr.set(s.pr.number, s);
  }
  await withPullState(db, projectId, [...slots.values()]);
  await withCaps(db, projectId, [...slots.values()]);
  return { orchestrator, slots: [...slots.values()].sort((a, b) => a.slot.localeCompare(b.slot, 'en', { numeric: true })) };
}

/** A slot whose issue is paused at its cost cap, or stopped there (cost/caps.ts), says so with the figures. */
async function withCaps(db: Queryable, projectId: string, slots: SlotView[]): Promise<void> {
  const capped = await cappedIssues(db, projectId);
  if (!capped.length) return;
  for (const s of slots) {
    const c = capped.find((x) => x.key === String(s.issue) && (x.slot === null || x.slot === s.slot));
    s.cap = c
      ? { state: c.state, costUsd: c.paused_cost_usd === null ? null : Number(c.paused_cost_usd), capUsd: c.paused_cap_usd === null ? null : Number(c.paused_cap_usd), at: c.paused_at ? new Date(c.paused_at).toISOString() : null, pause: c.pauses }
      : null;
  }
}

/**
 * The pull requests' state is the server's (codehost_pulls, functions/codehost/pulls.ts: fed by App
 * deliveries and the runner's poll alike), so a change only a webhook reported shows: a slot's PR (by
 * number, or — for a slot whose PR no event named yet — by the slot's branch) takes its state, title,
 * address and checks from there.
 */
async function withPullState(db: Queryable, projectId: string, slots: SlotView[]): Promise<void> {
  const numbers = slots.flatMap((s) => (s.pr ? [s.pr.number] : []));
  const branches = slots.flatMap((s) => (!s.pr && s.branch ? [s.branch] : []));
  if (!numbers.length && !branches.length) return;
  const rows = await db.query<{ number: number; state: 'open' | 'merged' | 'closed'; title: string | null; url: string | null; branch: string | null; checks: string; checks_summary: string | null; checks_at: Date | null }>(sql`
    select number, state, title, url, branch, checks, checks_summary, checks_at from codehost_pulls
     where project_id = ${projectId} and (number = any(${numbers}::int[]) or branch = any(${branches}::text[]))
     order by updated_at`);
  const byNumber = new Map(rows.map((r) => [r.number, r]));
  const byBranch = new Map(rows.filter((r) => r.branch).map((r) => [r.branch!, r])); // the latest per branch
  for (const s of slots) {
    const row = s.pr ? byNumber.get(s.pr.number) : s.branch ? byBranch.get(s.branch) : undefined;
    if (!row) continue;
    const url = row.url ?? s.pr?.url;
    const title = row.title ?? s.pr?.title;
    s.pr = { number: row.number, ...(url ? { url } : {}), ...(title ? { title } : {}), state: row.state };
    if (row.checks_at) s.checks = { state: row.checks, summary: row.checks_summary, at: new Date(row.checks_at).toISOString() };
  }
}
