// The kinds of activity feed items (GET /api/activity; functions/activity/record.ts writes them, the
// Activity page reads them). Shared by both sides, no zod: the catalogue's events (every envelope
// webhooks/capture.ts stores), and the fleet events that are not catalogue events (runs, triggers,
// runner presence, approvals, schedule runs, sessions, budgets). A filter names kinds or a family
// (`pr.*`).

export const ACTIVITY_KINDS = [
  'orchestrator.started',
  'orchestrator.stopped',
  'slot.dispatched',
  'slot.checkpoint',
  'slot.stopped',
  'pr.opened',
  'pr.checks_changed',
  'pr.merged',
  'pr.closed',
  'pr.approved',
  'pr.changes_requested',
  'issue.blocked',
  'person.needed',
  'pane.prompt',
  'pane.quota_hit',
  'session.started',
  'budget.threshold',
  'cap.reached',
  'run.succeeded',
  'run.failed',
  'run.start_failed',
  'trigger.fired',
  'trigger.refused',
  'schedule.fired',
  'schedule.failed',
  'schedule.disabled',
  'runner.online',
  'runner.offline',
] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/** The families a filter may name as `family.*` (the part before the first dot). */
export const ACTIVITY_FAMILIES = [...new Set(ACTIVITY_KINDS.map((k) => k.slice(0, k.indexOf('.'))))];

const KINDS: ReadonlySet<string> = new Set(ACTIVITY_KINDS);
export const isActivityKind = (s: string): s is ActivityKind => KINDS.has(s);

/**
 * The kinds a filter value names: a comma list of kinds and families (`pr.*`); null when a part is
 * neither (the caller answers 400).
 */
export function kindsOf(filter: string | readonly string[]): ActivityKind[] | null {
  const parts = (typeof filter === 'string' ? [filter] : filter).flatMap((f) => f.split(',')).map((p) => p.trim()).filter(Boolean);
  const out = new Set<ActivityKind>();
  for (const p of parts) {
    if (isActivityKind(p)) out.add(p);
    else if (p.endsWith('.*') && ACTIVITY_FAMILIES.includes(p.slice(0, -2))) ACTIVITY_KINDS.filter((k) => k.startsWith(p.slice(0, -1))).forEach((k) => out.add(k));
    else return null;
  }
  return [...out];
}
