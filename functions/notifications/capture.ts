// Runner events that become notifications (spec: Notifications): `pane.quota_hit` (a session hit its
// provider's usage limit) and `person.needed` (an agent waits for a person). The events pipeline calls
// this in the transaction that stores the batch (functions/events/sinks/notifications.ts). Data is the
// catalogue's allowlist of keys only (webhooks/envelope.ts buildData), never the pane's text. A project
// the event names that is not assigned to this runner is dropped: the notification is then for instance
// admins only. A re-sent event makes no second notification (its event id is the dedupe key).
import type { RunnerEvent } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { buildData, eventId } from '../webhooks/envelope.ts';
import { notify } from './notify.ts';
import { servedProjectRows } from '../runners/served.ts';

export const RUNNER_NOTIFICATION_KINDS = ['pane.quota_hit', 'person.needed'] as const;
const KINDS: ReadonlySet<string> = new Set(RUNNER_NOTIFICATION_KINDS);

export async function captureRunnerNotifications(db: Queryable, runnerId: string, events: RunnerEvent[]): Promise<number> {
  const wanted = events.filter((e) => KINDS.has(e.kind));
  if (wanted.length === 0) return 0;
  const projects = new Set((await servedProjectRows(db, runnerId)).map((p) => p.id));
  let made = 0;
  for (const e of wanted) {
    const kind = e.kind as (typeof RUNNER_NOTIFICATION_KINDS)[number];
    const project = typeof e.payload.project === 'string' && projects.has(e.payload.project) ? e.payload.project : null;
    const slot = typeof e.payload.slot === 'string' ? e.payload.slot.slice(0, 500) : undefined;
    const data = { runnerId, ...(project ? { projectId: project } : {}), ...(slot ? { slot } : {}), ...buildData(kind, e.payload) };
    if (await notify(db, { kind, projectId: project, runnerId, data, dedupeKey: eventId('runner', runnerId, e.id, kind) })) made++;
  }
  return made;
}
