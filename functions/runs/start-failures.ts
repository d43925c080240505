// Runs that did not start (issue 34; docs/skill-runs.md, "Runs that did not start"). A trigger delivery
// (triggers/fire.ts) or a scheduled run (schedules/runner.ts) that could not start — no agent runtime,
// runner offline, refused, timed out, interrupted, a budget stop, a creator no longer admin — is:
//   a row      run_start_failures, listed by GET /api/failed-starts and on the Runs page
//   activity   one `run.start_failed` item per row (the Activity feed)
//   a notice   `run.start_failed` to the project's admins once per cause: the (source, reason) row in
//              run_start_alerts is the claim; it is deleted when a run of that source starts again
//              (startSucceeded), so the next failure is news again
// Call both inside the writer's transaction: the row, its activity and its notice exist together or not.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { publish } from '../live/publish.ts';
import { notify } from '../notifications/notify.ts';
import { startReasonRemedy, startReasonWords } from '../../protocol/start-reasons.ts';

export const START_FAILED = 'run.start_failed';
const DETAIL_CHARS = 500;

export interface StartFailure {
  projectId: string;
  source: 'trigger' | 'schedule';
  sourceId: string;
  sourceName: string;
  action: 'skill' | 'next_round';
  skill: string | null;
  reason: string;
  detail: string | null;
  deliveryId?: string | null;
}

export async function recordStartFailures(q: Queryable, failures: StartFailure[]): Promise<void> {
  for (const f of failures) {
    const detail = f.detail?.slice(0, DETAIL_CHARS) ?? null;
    const [row] = await q.query<{ id: string | number }>(sql`
      insert into run_start_failures (project_id, source, source_id, source_name, action, skill, reason, detail, delivery_id)
      values (${f.projectId}, ${f.source}, ${f.sourceId}, ${f.sourceName}, ${f.action}, ${f.skill}, ${f.reason}, ${detail}, ${f.deliveryId ?? null})
      returning id`);
    const [p] = await q.query<{ name: string }>(sql`select name from projects where id = ${f.projectId}`);
    const data = {
      failureId: String(row.id), projectName: p?.name ?? null, source: f.source, sourceId: f.sourceId, sourceName: f.sourceName, action: f.action, skill: f.skill,
      reason: f.reason, words: startReasonWords(f.reason), remedy: startReasonRemedy(f.reason), detail,
    };
    await q.query(sql`insert into activity_items (project_id, kind, data) values (${f.projectId}, ${START_FAILED}, ${sql.json(data)})`);
    await publish(q, { type: 'run', projectId: f.projectId, id: `failed-start-${row.id}`, state: 'not_started' }, { projectId: f.projectId });
    const [claimed] = await q.query(sql`
      insert into run_start_alerts (source, source_id, reason, project_id) values (${f.source}, ${f.sourceId}, ${f.reason}, ${f.projectId})
      on conflict do nothing returning 1`);
    if (claimed) await notify(q, { kind: START_FAILED, projectId: f.projectId, data });
  }
}

/** A run of this trigger or schedule started: its causes are cleared, so a new failure notifies again. */
export async function startSucceeded(q: Queryable, source: StartFailure['source'], sourceId: string): Promise<void> {
  await q.query(sql`delete from run_start_alerts where source = ${source} and source_id = ${sourceId}`);
}
