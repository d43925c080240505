// Where catalogue events come from (spec: Events). Runner events arrive through the ingest pipeline
// (functions/events/ingest.ts, the sink events/sinks/webhooks.ts);
// the server emits its own (schedule.*; pr.* from the pull requests' state, codehost/pulls.ts, which the
// runner's poll and App deliveries both feed). Each becomes one envelope, stored in `webhook_outbox` under
// its stable id; the dispatcher (worker.ts) turns it into one delivery per matching webhook.
//
// Capture runs in every process, whether or not its webhook worker is enabled: it only records. It is
// idempotent (stable ids, `on conflict do nothing`, and one delivery per webhook and event id), so a
// runner's re-send after a crash captures nothing new.
import type { RunnerEvent } from '../../protocol/frames.ts';
import { recordEnvelopes } from '../activity/record.ts';
import { storeEvents } from '../event-list/store.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { CATALOGUE, RUNNER_TYPES, isEventType } from './catalogue.ts';
import type { EventType } from './catalogue.ts';
import { buildEnvelope, eventId } from './envelope.ts';
import type { Envelope } from './envelope.ts';
import { servedProjectRows } from '../runners/served.ts';

export const CHANNEL = 'svc_webhooks';

/**
 * Store envelopes for dispatch — only types some webhook subscribes to; wake the dispatchers. Every
 * envelope is an activity feed item too (activity/record.ts) and an entry of the event list
 * (event-list/store.ts, GET /api/events, written just before COMMIT), whether or not a webhook wants it.
 */
export async function enqueue(q: Queryable, envelopes: Envelope[]): Promise<number> {
  if (envelopes.length === 0) return 0;
  await recordEnvelopes(q, envelopes);
  const rows = envelopes.map((e) => ({ id: e.id, type: e.type, project_id: e.project?.id ?? null, body: JSON.stringify(e) }));
  await storeEvents(q, rows.map((r, i) => ({ envelope: envelopes[i], body: r.body })));
  const stored = await q.query(sql`
    insert into webhook_outbox (id, type, project_id, body)
    select x.id, x.type, x.project_id, x.body
      from jsonb_to_recordset(${sql.json(rows)}) as x(id text, type text, project_id text, body text)
     where exists (select 1 from webhooks w where w.events @> jsonb_build_array(x.type))
    on conflict (id) do nothing
    returning id`);
  if (stored.length) await q.query(sql`select pg_notify(${CHANNEL}, 'outbox')`);
  return stored.length;
}

/**
 * Runner events → envelopes. A runner event becomes a catalogue event when its kind is a catalogue
 * name a runner may emit (RUNNER_TYPES) and its payload names, as `project`, a project assigned to
 * that runner; `slot`, `issue` and the type's `data` keys are read from the payload. Everything else
 * (session metadata, llm.request, tool.call, pane text, runner.*) is never sent.
 */
export function runnerEnvelopes(runnerId: string, events: RunnerEvent[], projects: ReadonlyMap<string, string>): Envelope[] {
  const out: Envelope[] = [];
  for (const e of events) {
    if (!RUNNER_TYPES.has(e.kind)) continue;
    const projectId = e.payload.project;
    if (typeof projectId !== 'string' || !projects.has(projectId)) continue;
    out.push(
      buildEnvelope({
        id: eventId('runner', runnerId, e.id, e.kind),
        type: e.kind as EventType,
        ts: e.ts,
        project: { id: projectId, repo: projects.get(projectId)! },
        raw: e.payload,
      }),
    );
  }
  return out;
}

/** The webhooks sink: capture the catalogue events of one ingested batch (cheap when there are none). */
export async function captureRunnerEvents(q: Queryable, runnerId: string, events: RunnerEvent[]): Promise<number> {
  if (!events.some((e) => RUNNER_TYPES.has(e.kind))) return 0;
  const projects = await servedProjectRows(q, runnerId);
  return enqueue(q, runnerEnvelopes(runnerId, events, new Map(projects.map((p) => [p.id, p.repo]))));
}

export interface ServerEvent {
  type: EventType;
  /** What makes this event itself, e.g. ['schedule', scheduleId, scheduledFor]: the same origin gives the same id. */
  origin: string[];
  ts: Date;
  projectId: string;
  slot?: string;
  issue?: number;
  data: Record<string, unknown>;
}

/** Emit an event from the server itself (schedule.failed, schedule.disabled). */
export async function emitEvent(q: Queryable, e: ServerEvent): Promise<string | null> {
  if (!isEventType(e.type) || CATALOGUE[e.type].from !== 'server') throw new Error(`${e.type} is not a server event of the catalogue`);
  const [project] = await q.query<{ id: string; repo: string }>(sql`select id, repo from projects where id = ${e.projectId}`);
  if (!project) return null;
  const envelope = buildEnvelope({ id: eventId('server', ...e.origin, e.type), type: e.type, ts: e.ts, project, raw: { slot: e.slot, issue: e.issue, data: e.data } });
  await enqueue(q, [envelope]);
  return envelope.id;
}
