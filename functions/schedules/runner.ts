// Running project schedules (docs/schedules.md). Every API process runs one ScheduleRunner; they share
// the work through the database:
//   due      a check every second (and at once after an API change in this process) finds enabled
//            schedules whose pending time has come; plan() says whether it still runs or was missed;
//            the process whose conditional update moves the pending time on takes it, and claims the
//            (schedule:<id>, time) row of job_runs through the scheduler (claimAndRun): once across
//            processes, under the scheduler's renewed lease
//   decide   creator no longer an active admin → failed creator_not_authorized; the previous run of
//            the schedule still live → skipped previous_still_running; project budget set to stop and
//            exceeded → skipped budget_exceeded (cost/budget.ts)
//   pool     a schedule with target `pool` queues its run (runs/pool.ts) and is `started` with its id;
//            the pool dispatcher sends it
//   send     `skill.run` to the project's runner on behalf of the creator, through the triggers' command
//            path (runs/launch.ts sendSkillRun): started (with the run id), or failed runner_offline |
//            command_refused | command_timeout
//   outcome  the run's record in skill_runs ends it: succeeded resets the failure count; failed or
//            timed_out is a failure
// A failure emits `schedule.failed`; SCHEDULE_MAX_FAILURES failures in a row disable the schedule, which
// emits `schedule.disabled`, notifies the project's admins and writes an audit record. A run that did not
// start (failed before the runner took it, or skipped budget_exceeded) is also recorded as such
// (runs/start-failures.ts: a row on the Runs page, activity, admins told once per cause). A process that
// dies while sending leaves a running job_runs row whose lease expires: the run is failed `interrupted`
// and never sent again.
import { notify } from '../notifications/notify.ts';
import { appendAudit } from '../audit/audit.ts';
import { budgetExceeded } from '../cost/budget.ts';
import type { Scheduler } from '../jobs/scheduler.ts';
import type { Clock } from '../lib/clock.ts';
import { setRunCap } from '../cost/caps.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import { LeaseLoop } from '../lib/lease-loop.ts';
import type { Logger } from '../lib/log.ts';
import type { RunnerHub } from '../lib/context.ts';
import { creatorAuthorized, sendSkillRun } from '../runs/launch.ts';
import { kickPool, queuePoolRun } from '../runs/pool.ts';
import { poolRunTarget } from '../runs/pool-target.ts';
import { recordActivity } from '../activity/record.ts';
import { emitEvent } from '../webhooks/capture.ts';
import { recordStartFailures, startSucceeded } from '../runs/start-failures.ts';
import { failedStartReason } from '../../protocol/start-reasons.ts';
import { jobName, plan } from './schedules.ts';
import type { RunOutcome, ScheduleRow } from './schedules.ts';

/** A started run with no record yet (its first event not in) counts as live this long. */
const UNREPORTED_RUN_LIVE_MS = 10 * 60 * 1000;
const DETAIL_CHARS = 500;
const JOB_PREFIX = 'schedule:';

export interface ScheduleRunnerOptions {
  db: Db;
  log: Logger;
  hub: Pick<RunnerHub, 'command'>;
  scheduler: Pick<Scheduler, 'claimAndRun'>;
  clock: Clock;
  maxFailures: number;
  pollMs?: number;
}

export class ScheduleRunner {
  /** A check every pollMs, and at once after an API change; kicks count only once started (JOBS_ENABLED). */
  private readonly loop: LeaseLoop;

  constructor(private readonly opts: ScheduleRunnerOptions) {
    this.loop = new LeaseLoop({ log: opts.log, failed: 'schedule check failed', everyMs: opts.pollMs ?? 1000, pass: () => this.check() });
  }

  /** Check for due schedules every pollMs (only on replicas with JOBS_ENABLED). */
  start(): void {
    void this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  kick(): void {
    this.loop.kick();
  }

  /** One pass: interrupted runs, outcomes of started runs, then due schedules. */
  async check(): Promise<void> {
    await this.expireInterrupted();
    await this.collectOutcomes();
    const now = this.opts.clock.now();
    const due = await this.opts.db.query<ScheduleRow>(sql`
      select * from project_schedules where enabled and next_run_at <= ${new Date(now)} order by next_run_at limit 50`);
    const runs: Promise<unknown>[] = [];
    for (const s of due) {
      const p = plan(s.cron, s.timezone, new Date(s.next_run_at!), now);
      const [taken] = await this.opts.db.query<{ id: string }>(sql`
        update project_schedules set next_run_at = ${p.next}, updated_at = now()
         where id = ${s.id} and enabled and next_run_at = ${new Date(s.next_run_at!)}
        returning id`);
      if (!taken) continue; // another process took this time
      if (p.missed) {
        this.opts.log.warn('schedule missed a run by more than one interval; not running it', { scheduleId: s.id, scheduledFor: p.missed.toISOString() });
        await this.record(s, p.missed, { result: 'skipped', reason: 'missed', detail: 'no server was running at the scheduled time, and it is now more than one interval late', runId: null });
      } else if (p.run) runs.push(this.runAt(s, p.run));
    }
    await Promise.all(runs);
  }

  /** Run now (an admin's "Run now"): the current time is its scheduled time; waits for the runner's answer. */
  async runNow(s: ScheduleRow): Promise<RunOutcome | null> {
    return this.runAt(s, new Date(this.opts.clock.now()));
  }

  /** Claim (schedule, time) in job_runs and run it there; null when another process has that time. */
  private async runAt(s: ScheduleRow, scheduledFor: Date): Promise<RunOutcome | null> {
    let outcome: RunOutcome | null = null;
    const ran = await this.opts.scheduler.claimAndRun(jobName(s.id), scheduledFor, async () => {
      outcome = await this.send(s, scheduledFor);
      if (outcome.result === 'failed') throw new Error(`${outcome.reason}: ${outcome.detail ?? ''}`);
      return { result: outcome.result, reason: outcome.reason, runId: outcome.runId };
    });
    return ran ? outcome : null;
  }

  private async send(s: ScheduleRow, scheduledFor: Date): Promise<RunOutcome> {
    const { db, hub } = this.opts;
    let out: Omit<RunOutcome, 'scheduledFor'>;
    if (!(await creatorAuthorized(db, s.created_by, s.project_id))) {
      out = { result: 'failed', reason: 'creator_not_authorized', detail: 'the creator of the schedule is no longer an active admin of the project', runId: null };
    } else if (await this.liveRun(s)) {
      out = { result: 'skipped', reason: 'previous_still_running', detail: `run ${s.last_run_id} has not ended`, runId: null };
    } else if (await budgetExceeded(db, s.project_id)) {
      out = { result: 'skipped', reason: 'budget_exceeded', detail: "the project's monthly budget is spent and its action is stop", runId: null };
    } else if (s.target === 'pool') {
      // A pool target (runs/pool.ts): queued on the server now, started by the pool dispatcher.
      const runId = await queuePoolRun(
        db,
        {
          projectId: s.project_id,
          source: 'schedule',
          sourceId: s.id,
          sourceName: s.name,
          createdBy: s.created_by,
          skill: s.skill,
          args: s.args,
          profile: s.profile,
          model: s.model,
          output: s.output,
          ...poolRunTarget(s),
        },
        this.opts.clock.now(),
      );
      kickPool();
      out = { result: 'started', reason: null, detail: null, runId };
    } else {
      const [project] = await db.query<{ runner_id: string | null }>(sql`select runner_id from projects where id = ${s.project_id}`);
      const sent = await sendSkillRun(hub, project?.runner_id ?? null, { projectId: s.project_id, skill: s.skill, args: s.args, profile: s.profile, model: s.model, output: s.output }, s.created_by);
      out =
        sent.status === 'fired'
          ? { result: 'started', reason: null, detail: null, runId: sent.runId ?? null }
          : { result: 'failed', reason: sent.reason ?? 'command_refused', detail: sent.detail ?? null, runId: null };
    }
    await this.record(s, scheduledFor, out);
    return { scheduledFor: scheduledFor.toISOString(), ...out };
  }

  /** The schedule's last started run is queued, starting or running — or has no record yet, for a while — or its pool retry has not ended. */
  private async liveRun(s: ScheduleRow): Promise<boolean> {
    const [row] = await this.opts.db.query<{ live: boolean }>(sql`
      select exists (
        select 1 from project_schedules p
         where p.id = ${s.id} and p.last_result = 'started' and p.last_run_id is not null
           and (exists (select 1 from skill_runs r where r.id = p.last_run_id and r.state in ('queued', 'starting', 'running'))
                or (not exists (select 1 from skill_runs r where r.id = p.last_run_id)
                    and p.last_run_at > ${new Date(this.opts.clock.now() - UNREPORTED_RUN_LIVE_MS)}))
      ) or exists (
        select 1 from pool_runs d where d.source_id = ${s.id} and d.status <> 'ended' and d.source = 'schedule' and d.retry_of is not null
      ) as live`);
    return row.live;
  }

  /** Store a run's result on the schedule; a failure counts and may disable it. */
  private async record(s: ScheduleRow, scheduledFor: Date, o: Omit<RunOutcome, 'scheduledFor'>): Promise<void> {
    const detail = o.detail?.slice(0, DETAIL_CHARS) ?? null;
    // The live run stays the one recorded, so its outcome is still collected.
    if (o.reason === 'previous_still_running') return;
    await this.opts.db.transaction(async (tx) => {
      const [row] = await tx.query<ScheduleRow>(sql`
        update project_schedules
           set last_run_at = ${scheduledFor}, last_result = ${o.result}, last_reason = ${o.reason}, last_detail = ${detail},
               last_run_id = ${o.runId},
               consecutive_failures = consecutive_failures + ${o.result === 'failed' ? 1 : 0}, updated_at = now()
         where id = ${s.id}
        returning *`);
      if (o.result === 'started' && o.runId) await setRunCap(tx, s.project_id, o.runId, s.cap_usd);
      if (row && o.result === 'failed') await this.failed(tx, row, scheduledFor, `${o.reason}${detail ? `: ${detail}` : ''}`);
      if (!row) return;
      if (o.result === 'started') {
        await startSucceeded(tx, 'schedule', s.id);
        await recordActivity(tx, { kind: 'schedule.fired', projectId: s.project_id, data: { scheduleId: s.id, schedule: s.name, skill: s.skill, runId: o.runId ?? undefined, scheduledFor: scheduledFor.toISOString() }, dedupeKey: `schedule.fired:${s.id}:${scheduledFor.toISOString()}` });
      } else if (o.result === 'failed' || o.reason === 'budget_exceeded') {
        const reason = failedStartReason(o.reason ?? 'command_refused', detail);
        await recordStartFailures(tx, [{ projectId: s.project_id, source: 'schedule', sourceId: s.id, sourceName: s.name, action: 'skill', skill: s.skill, reason, detail }]);
      }
    });
  }

  /** A failure of the run at `scheduledFor`: schedule.failed, and past the limit, disabled. */
  private async failed(tx: Queryable, row: ScheduleRow, scheduledFor: Date, error: string): Promise<void> {
    const ts = new Date(this.opts.clock.now());
    const origin = ['schedule', row.id, scheduledFor.toISOString()];
    await emitEvent(tx, { type: 'schedule.failed', origin, ts, projectId: row.project_id, data: { schedule: row.name, error, scheduledFor: scheduledFor.toISOString() } });
    this.opts.log.warn('scheduled run failed', { scheduleId: row.id, scheduledFor: scheduledFor.toISOString(), failures: row.consecutive_failures, error });
    if (row.consecutive_failures < this.opts.maxFailures) return;
    const [off] = await tx.query<{ id: string }>(sql`
      update project_schedules set enabled = false, disabled_reason = 'too_many_failures', next_run_at = null, updated_at = now()
       where id = ${row.id} and enabled returning id`);
    if (!off) return;
    const reason = `${row.consecutive_failures} runs failed in a row (SCHEDULE_MAX_FAILURES=${this.opts.maxFailures}); the last: ${error}`;
    await emitEvent(tx, { type: 'schedule.disabled', origin, ts, projectId: row.project_id, data: { schedule: row.name, reason } });
    await notify(tx, { kind: 'schedule.disabled', projectId: row.project_id, data: { scheduleId: row.id, schedule: row.name, reason }, dedupeKey: `schedule.disabled:${row.id}:${scheduledFor.toISOString()}` });
    await appendAudit(tx, { actor: 'system', action: 'schedule.disable', target: { type: 'schedule', id: row.id }, diff: { reason: 'too_many_failures', failures: row.consecutive_failures, projectId: row.project_id } });
    this.opts.log.warn('schedule disabled itself after repeated failures', { scheduleId: row.id, projectId: row.project_id, failures: row.consecutive_failures });
  }

  /** Started runs whose record has ended: succeeded resets the count; failed and timed_out are failures. */
  private async collectOutcomes(): Promise<void> {
    const ended = await this.opts.db.query<ScheduleRow & { run_state: string; run_error: string | null }>(sql`
      update project_schedules p
         set last_result = case r.state when 'succeeded' then 'succeeded' when 'cancelled' then 'cancelled' else 'failed' end,
             last_reason = case when r.state = 'succeeded' then null else r.state end,
             last_detail = left(r.error, ${DETAIL_CHARS}),
             consecutive_failures = case r.state when 'succeeded' then 0 when 'cancelled' then p.consecutive_failures else p.consecutive_failures + 1 end,
             updated_at = now()
        from skill_runs r
       where p.last_result = 'started' and r.id = p.last_run_id and r.project_id = p.project_id
         and r.state in ('succeeded', 'failed', 'timed_out', 'cancelled')
      returning p.*, r.state as run_state, r.error as run_error`);
    for (const row of ended) {
      if (row.last_result !== 'failed') continue;
      await this.opts.db.transaction((tx) =>
        this.failed(tx, row, new Date(row.last_run_at!), `run ${row.last_run_id} ended ${row.run_state}${row.run_error ? `: ${row.run_error}` : ''}`),
      );
    }
  }

  /** A process died while sending: the command may or may not have left, so it is never sent again. */
  private async expireInterrupted(): Promise<void> {
    const gone = await this.opts.db.query<{ job: string; scheduled_for: Date }>(sql`
      update job_runs set status = 'failed', finished_at = now(), lease_owner = null, lease_expires_at = null,
             error = 'the process running this schedule stopped before the runner answered; it is not sent again'
       where job like ${JOB_PREFIX + '%'} and status = 'running' and lease_expires_at < now()
      returning job, scheduled_for`);
    for (const g of gone) {
      const [s] = await this.opts.db.query<ScheduleRow>(sql`select * from project_schedules where id = ${g.job.slice(JOB_PREFIX.length)}`);
      if (s) await this.record(s, new Date(g.scheduled_for), { result: 'failed', reason: 'interrupted', detail: 'the server process stopped while sending skill.run', runId: null });
    }
  }
}
