// Skill run records from runner events (docs/skill-runs.md, "On the server"). The events pipeline calls
// this for every ingested batch after storing it (functions/events/sinks/runs.ts); it must be
// idempotent, because a batch stored but not acked is sent again:
//   skill_run.state     upsert the run; the state only moves forward (queued < starting < running <
//                       a final state, which never changes), so a re-sent or late event changes nothing
//   skill_run.progress  progress lines, stored once per (run, seq)
//   skill_run.patch     at most 128 KiB of the patch, cut here too, with patch_truncated when cut
// An event of a run whose project is not served by the sending runner, or of a run another runner
// recorded, is ignored; so is a payload that does not parse (it stays in runner_events). A pool run
// (runs/pool.ts) is the runner's that it was dispatched to, pool member or not any more; its final state
// ends its queue row, and a late final report replaces `runner_lost` (the run was not lost after all).
import type { RunnerEvent } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { FINAL_STATES, PATCH_KEEP_BYTES, REPORT_KEEP_BYTES, cutUtf8 } from '../../protocol/runs.ts';
import type { RunState } from '../../protocol/runs.ts';
import { cut } from '../../protocol/text.ts';
import { patchEventPayload, progressEventPayload, stateEventPayload } from './schema.ts';
import type { StateEventPayload } from './schema.ts';
import { publish } from '../live/publish.ts';
import { recordActivity } from '../activity/record.ts';
import { scrubPaths } from '../webhooks/envelope.ts';
import { kickPool } from './pool.ts';
import { notify } from '../notifications/notify.ts';

// PostgreSQL text cannot hold NUL.
const clean = (s: string | null | undefined) => (s == null ? null : s.replace(/\0/g, ''));
const rank = (col: string) => sql.raw(`(case ${col} when 'queued' then 0 when 'starting' then 1 when 'running' then 2 else 3 end)`);

/** Record a state; the run's project and new state when it changed (a re-sent or late state changes nothing). */
async function recordState(q: Queryable, runnerId: string, p: StateEventPayload): Promise<{ project_id: string; state: string } | undefined> {
  const r = p.result;
  const report = r?.report == null ? null : cutUtf8(clean(r.report)!, REPORT_KEEP_BYTES);
  const final = !['queued', 'starting', 'running'].includes(p.state);
  const [changed] = await q.query<{ project_id: string; state: string }>(sql`
    insert into skill_runs as s (id, runner_id, project_id, skill, args, output, profile_id, runtime, model, timeout_sec, state, error, branch,
                                 created_at, started_at, finished_at, report, report_truncated, exit_code, duration_ms, session_id, cost_usd, usage, pull_request)
    select ${p.runId}, ${runnerId}, ${p.project}, ${p.skill}, ${sql.json(p.args.map((a) => a.replace(/\0/g, '')))}, ${p.output}, ${p.profile}, ${p.runtime},
           ${p.model ?? null}, ${p.timeoutSec ?? null}, ${p.state}, ${clean(p.error)}, ${p.branch ?? null},
           ${p.createdAt}, ${p.startedAt ?? null}, ${final ? (p.endedAt ?? p.at) : null}, ${report?.text ?? null}, ${Boolean(r?.reportTruncated || report?.cut)},
           ${r?.exitCode ?? null}, ${r?.durationMs == null ? null : Math.round(r.durationMs)}, ${r?.sessionId ?? null}, ${r?.costUsd ?? null},
           ${sql.json(r?.usage ?? null)}, ${sql.json(r?.pullRequest ?? null)}
     where exists (select 1 from projects where id = ${p.project} and runner_id = ${runnerId})
        or exists (select 1 from pool_runs d where d.run_id = ${p.runId} and d.runner_id = ${runnerId})
    on conflict (id) do update set
      runner_id = coalesce(s.runner_id, excluded.runner_id),
      state = excluded.state,
      error = excluded.error,
      reason = case when s.reason = 'runner_lost' then null else s.reason end,
      branch = coalesce(excluded.branch, s.branch),
      started_at = coalesce(excluded.started_at, s.started_at),
      finished_at = excluded.finished_at,
      report = coalesce(excluded.report, s.report),
      report_truncated = excluded.report_truncated or s.report_truncated,
      exit_code = coalesce(excluded.exit_code, s.exit_code),
      duration_ms = coalesce(excluded.duration_ms, s.duration_ms),
      session_id = coalesce(excluded.session_id, s.session_id),
      cost_usd = coalesce(excluded.cost_usd, s.cost_usd),
      usage = coalesce(excluded.usage, s.usage),
      pull_request = coalesce(excluded.pull_request, s.pull_request),
      updated_at = now()
    where (s.runner_id = excluded.runner_id
           or (s.runner_id is null and exists (select 1 from pool_runs d where d.run_id = s.id and d.runner_id = excluded.runner_id)))
      and (${rank('s.state')} < ${rank('excluded.state')}
           or (s.reason = 'runner_lost' and ${rank('excluded.state')} = 3))
    returning s.project_id, s.state`);
  if (changed && final) await poolRunEnded(q, p.runId, p.state);
  return changed;
}

/**
 * A pool run's final state (runs/pool.ts): its queue row ends and the dispatcher here looks for the free
 * place at once. A lost run that reports `succeeded` late makes its retry needless: a retry still queued
 * is cancelled here; one a runner holds gets skill.cancel from the dispatcher.
 */
async function poolRunEnded(q: Queryable, runId: string, state: string): Promise<void> {
  const [ended] = await q.query<{ run_id: string }>(sql`update pool_runs set status = 'ended', lease_owner = null, lease_expires_at = null where run_id = ${runId} returning run_id`);
  if (!ended) return;
  if (state === 'succeeded') {
    const retries = await q.query<{ id: string; project_id: string }>(sql`
      with r as (update pool_runs set status = 'ended' where retry_of = ${runId} and status = 'queued' returning run_id)
      update skill_runs s set state = 'cancelled', reason = 'original_succeeded', finished_at = now(), updated_at = now(),
             error = ${`run ${runId} it retried reported success after all`}
        from r where s.id = r.run_id and s.state = 'queued'
      returning s.id, s.project_id`);
    for (const r of retries) await publish(q, { type: 'run', projectId: r.project_id, id: r.id, state: 'cancelled' }, { projectId: r.project_id });
  }
  kickPool();
}

/**
 * A run that a trigger started failed or timed out: `run.failed` to the project's admins with a "Run
 * again" action link (functions/act/), once per run. Runs started otherwise have someone watching them.
 */
async function triggerRunFailed(q: Queryable, projectId: string, p: StateEventPayload, error: string | undefined): Promise<void> {
  if (p.state !== 'failed' && p.state !== 'timed_out') return;
  const [fired] = await q.query<{ trigger_id: string; name: string }>(sql`
    select d.trigger_id, t.name from inbound_deliveries d join triggers t on t.id = d.trigger_id
     where d.run_id = ${p.runId} and t.project_id = ${projectId} limit 1`);
  if (!fired) return;
  await notify(q, {
    kind: 'run.failed',
    projectId,
    data: { runId: p.runId, skill: p.skill, state: p.state, source: 'trigger', sourceId: fired.trigger_id, sourceName: fired.name, ...(error ? { error } : {}) },
    dedupeKey: `run.failed:${p.runId}`,
    actions: [{ kind: 'run.retry', target: { runId: p.runId } }],
  });
}

/** A run reached its final state: run.succeeded or run.failed (timed out, cancelled, failed) in the activity feed, once per run. */
async function runEnded(q: Queryable, projectId: string, p: StateEventPayload) {
  const error = p.error ? cut(scrubPaths(clean(p.error)!), 500) : undefined;
  const pr = p.result?.pullRequest;
  await triggerRunFailed(q, projectId, p, error);
  return recordActivity(q, {
    kind: p.state === 'succeeded' ? 'run.succeeded' : 'run.failed',
    projectId,
    data: { runId: p.runId, skill: p.skill, state: p.state, exitCode: p.result?.exitCode ?? undefined, costUsd: p.result?.costUsd ?? undefined, pr: pr?.url ? { number: pr.number, url: pr.url } : undefined, error },
    dedupeKey: `run.ended:${p.runId}`,
  });
}

/** Store new progress lines; the run's project and line count when some were new. */
async function recordProgress(q: Queryable, runnerId: string, runId: string, lines: { seq: number; text: string }[]): Promise<{ project_id: string; progress_lines: number } | undefined> {
  if (lines.length === 0) return;
  const rows = lines.map((l) => ({ seq: l.seq, text: clean(l.text) }));
  const [added] = await q.query<{ project_id: string; progress_lines: number }>(sql`
    with owned as (select id from skill_runs where id = ${runId} and runner_id = ${runnerId}),
    added as (
      insert into skill_run_lines (run_id, seq, text)
      select owned.id, x.seq, x.text from owned, jsonb_to_recordset(${sql.json(rows)}) as x(seq integer, text text)
      on conflict (run_id, seq) do nothing
      returning seq, text)
    update skill_runs set progress_lines = progress_lines + (select count(*) from added),
           last_progress = coalesce((select text from added order by seq desc limit 1), last_progress), updated_at = now()
     where id in (select id from owned) and exists (select 1 from added)
    returning project_id, progress_lines`);
  return added;
}

async function recordPatch(q: Queryable, runnerId: string, p: { runId: string; bytes: number; sha256: string; text: string; truncated: boolean }): Promise<{ project_id: string } | undefined> {
  const kept = cutUtf8(clean(p.text)!, PATCH_KEEP_BYTES, true);
  const truncated = p.truncated || kept.cut || p.bytes > Buffer.byteLength(kept.text);
  const [row] = await q.query<{ project_id: string }>(sql`
    update skill_runs set patch = ${kept.text}, patch_bytes = ${p.bytes}, patch_sha256 = ${p.sha256}, patch_truncated = ${truncated}, updated_at = now()
     where id = ${p.runId} and runner_id = ${runnerId} returning project_id`);
  return row;
}

/** The runs sink's work for the skill run events of one batch, in order (cheap when there are none). */
export async function recordSkillRuns(q: Queryable, runnerId: string, events: RunnerEvent[]): Promise<number> {
  let applied = 0;
  // Live notices (functions/live/live.ts): each state change, and one progress notice per run and batch.
  const progressed = new Map<string, { projectId: string; lines?: number }>();
  for (const e of events) {
    if (!e.kind.startsWith('skill_run.')) continue;
    if (e.kind === 'skill_run.state') {
      const p = stateEventPayload.safeParse(e.payload);
      const changed = p.success ? await recordState(q, runnerId, p.data) : undefined;
      if (p.success && changed) await publish(q, { type: 'run', projectId: changed.project_id, id: p.data.runId, state: changed.state }, { projectId: changed.project_id });
      if (p.success && changed && FINAL_STATES.includes(changed.state as RunState)) await runEnded(q, changed.project_id, p.data);
      applied += Number(p.success);
    } else if (e.kind === 'skill_run.progress') {
      const p = progressEventPayload.safeParse(e.payload);
      const added = p.success ? await recordProgress(q, runnerId, p.data.runId, p.data.lines) : undefined;
      if (p.success && added) progressed.set(p.data.runId, { projectId: added.project_id, lines: Number(added.progress_lines) });
      applied += Number(p.success);
    } else if (e.kind === 'skill_run.patch') {
      const p = patchEventPayload.safeParse(e.payload);
      const row = p.success ? await recordPatch(q, runnerId, p.data) : undefined;
      if (p.success && row) progressed.set(p.data.runId, { projectId: row.project_id, lines: progressed.get(p.data.runId)?.lines });
      applied += Number(p.success);
    }
  }
  for (const [id, { projectId, lines }] of progressed) await publish(q, { type: 'run.progress', projectId, id, lines }, { projectId });
  return applied;
}
