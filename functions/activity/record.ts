// The one way to write an activity feed item (GET /api/activity; protocol/activity.ts lists the kinds).
// Catalogue events arrive as envelopes (webhooks/capture.ts calls recordEnvelopes for every envelope,
// whether or not a webhook wants it); the other fleet events call recordActivity where they happen
// (runs/ingest.ts, triggers/fire.ts, runners/socket.ts and presence.ts, runners/routes.ts for
// approvals, schedules/runner.ts). Data is an allowlist of keys each writer names — never pane text, a
// prompt or a secret. `dedupeKey` (an envelope's id, a run and its final state, …) makes a re-sent event
// or a retried job write nothing new. Run it in the writer's transaction where it has one.
import type { ActivityKind } from '../../protocol/activity.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { SUBSCRIBABLE_TYPES } from '../webhooks/catalogue.ts';
import type { Envelope } from '../webhooks/envelope.ts';

type CatalogueKind = (typeof SUBSCRIBABLE_TYPES)[number];
/** Every catalogue event a webhook may subscribe to is an activity kind too (checked when compiled). */
const catalogueKind = (t: CatalogueKind): ActivityKind => t;

export interface ActivityInput {
  kind: ActivityKind;
  /** The project it concerns: that project's members see it. */
  projectId?: string | null;
  /** A runner item without a project: instance admins and the admins of the projects on that runner see it. */
  runnerId?: string | null;
  data: Record<string, unknown>;
  dedupeKey?: string;
}

/** Write activity items; how many were new (a used dedupe key writes nothing). */
export async function recordActivity(q: Queryable, items: ActivityInput | ActivityInput[]): Promise<number> {
  const list = Array.isArray(items) ? items : [items];
  if (list.length === 0) return 0;
  const rows = list.map((a) => ({ project_id: a.projectId ?? null, runner_id: a.runnerId ?? null, kind: a.kind, data: JSON.stringify(a.data), dedupe_key: a.dedupeKey ?? null }));
  const stored = await q.query(sql`
    insert into activity_items (project_id, runner_id, kind, data, dedupe_key)
    select x.project_id, x.runner_id, x.kind, x.data::jsonb, x.dedupe_key
      from jsonb_to_recordset(${sql.json(rows)}) as x(project_id text, runner_id text, kind text, data text, dedupe_key text)
    on conflict (dedupe_key) where dedupe_key is not null do nothing
    returning id`);
  return stored.length;
}

/** One item per catalogue envelope (not Send test's): its allowlisted data, slot and issue; its id is the dedupe key. */
export function recordEnvelopes(q: Queryable, envelopes: Envelope[]): Promise<number> {
  return recordActivity(
    q,
    envelopes
      .filter((e) => e.type !== 'webhook.test')
      .map((e) => ({
        kind: catalogueKind(e.type as CatalogueKind),
        projectId: e.project?.id ?? null,
        data: { ...e.data, ...(e.slot !== undefined ? { slot: e.slot } : {}), ...(e.issue !== undefined ? { issue: e.issue } : {}), eventId: e.id },
        dedupeKey: e.id,
      })),
  );
}
