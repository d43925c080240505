// Runner pools (issue #37; docs/runner.md "Runner pools" and "What happens on loss"; docs/skill-runs.md):
// the server's queue of pool runs and the dispatcher that hands them to the project's pool runners.
//   queue     queuePoolRun(), inside the trigger firer's claim transaction or the schedule runner's send:
//             a skill_runs row `queued` with no runner (it is a live run for previous_still_running) and a
//             pool_runs row with its deadline. The delivery is `fired` with that run id at once
//   dispatch  a LeaseLoop on every API process; per project the waiting rows in seq order, FOR UPDATE SKIP
//             LOCKED (once across replicas). Budget and creator checked again (failed with that reason);
//             then the pool (primary + project_runners) filtered to the runners online, announcing
//             POOL_CAPABILITY, having every target tag and a free place (reported max_concurrent_runs >
//             load = their starting/running runs + pool runs being sent to them), least loaded first.
//             Found: `dispatching` with a lease, skill.run with runId after the commit; done → dispatched and
//             the run `starting` on that runner; refused → failed command_refused; offline (nothing sent) →
//             queued again; no answer → it stays that runner's. Not found: `waiting_reason` says why
//   expire    a `dispatching` lease that ran out (its process died while sending): failed `interrupted`,
//             never sent twice. Queued past the deadline: failed `no_runner_available`, its admins told once
//   loss      a dispatched run whose runner has been offline longer than POOL_LOSS_GRACE_SECONDS: failed
//             `runner_lost`; with retry_on_loss (and not itself a retry) a new queued run retry_of it.
//             A late final report of the lost run replaces runner_lost (runs/ingest.ts); a late success
//             cancels its retry (queued: at once in ingest; dispatched: skill.cancel from here)
// Wake-ups: kickPool() (a run queued or ended in this process, a runner's capacity or hello) and a 1 s poll
// for what other replicas changed.
import { randomUUID } from 'node:crypto';
import { COMMANDS } from '../../protocol/commands.ts';
import { POOL_CAPABILITY } from '../../protocol/frames.ts';
import { newRunId } from '../../protocol/runs.ts';
import { recordActivity } from '../activity/record.ts';
import { budgetExceeded } from '../cost/budget.ts';
import type { Clock } from '../lib/clock.ts';
import type { RunnerHub } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import { LeaseLoop } from '../lib/lease-loop.ts';
import type { Logger } from '../lib/log.ts';
import { publish } from '../live/publish.ts';
import { notify } from '../notifications/notify.ts';
import { onlineSql } from '../runners/presence.ts';
import { creatorAuthorized, sendSkillRun } from './launch.ts';
import type { SendOutcome } from './launch.ts';

/** Waiting rows looked at per project and pass. */
const PROJECT_BATCH = 50;
const ERROR_CHARS = 500;

export interface PoolRunSpec {
  projectId: string;
  source: 'trigger' | 'schedule';
  sourceId: string;
  sourceName: string;
  deliveryId?: string | null;
  createdBy: string;
  skill: string;
  args: string[];
  profile: string | null;
  model: string | null;
  output: 'report' | 'pull_request';
  targetTags: string[];
  queueTimeoutMinutes: number;
  retryOnLoss: boolean;
  retryOf?: string | null;
}

/** The dispatchers of this process: a queued or ended run here wakes them at once (others poll). */
const kickers = new Set<() => void>();
export function kickPool(): void {
  for (const k of kickers) k();
}

/** A queued pool run: its skill_runs row (no runner yet) and its place in the project's queue. Returns its id. */
export async function queuePoolRun(q: Queryable, s: PoolRunSpec, nowMs: number): Promise<string> {
  const id = newRunId();
  const now = new Date(nowMs);
  await q.query(sql`
    insert into skill_runs (id, runner_id, project_id, skill, args, output, profile_id, model, state, created_at, retry_of)
    values (${id}, null, ${s.projectId}, ${s.skill}, ${sql.json(s.args)}, ${s.output}, ${s.profile ?? ''}, ${s.model}, 'queued', ${now}, ${s.retryOf ?? null})`);
  await q.query(sql`
    insert into pool_runs (run_id, project_id, source, source_id, source_name, delivery_id, created_by, skill, args, profile, model, output,
                           target_tags, queue_deadline, retry_on_loss, retry_of, created_at)
    values (${id}, ${s.projectId}, ${s.source}, ${s.sourceId}, ${s.sourceName}, ${s.deliveryId ?? null}, ${s.createdBy}, ${s.skill}, ${sql.json(s.args)},
            ${s.profile}, ${s.model}, ${s.output}, ${sql.json(s.targetTags)}, ${new Date(nowMs + s.queueTimeoutMinutes * 60_000)}, ${s.retryOnLoss},
            ${s.retryOf ?? null}, ${now})`);
  await publish(q, { type: 'run', projectId: s.projectId, id, state: 'queued' }, { projectId: s.projectId });
  return id;
}

interface PoolRunRow {
  run_id: string;
  project_id: string;
  created_by: string;
  skill: string;
  args: string[];
  profile: string | null;
  model: string | null;
  output: 'report' | 'pull_request';
  target_tags: string[];
  waiting_reason: string | null;
}

export interface Member {
  id: string;
  online: boolean;
  pool: boolean;
  tags: string[];
  max: number;
  load: number;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The runner for a run with `tags` (least loaded first, then by id), or why none: the waiting reason in
 * the words docs/skill-runs.md lists. Pure: the dispatcher's choice is tested alone.
 */
export function pickRunner(members: Member[], tags: string[]): { runnerId: string } | { reason: string } {
  const online = members.filter((m) => m.online);
  if (!online.length) return { reason: 'no runner online in the pool' };
  const pool = online.filter((m) => m.pool);
  if (!pool.length) return { reason: 'no pool runner takes pool runs (update svc-runner)' };
  const tagged = pool.filter((m) => tags.every((t) => m.tags.includes(t)));
  if (!tagged.length) {
    const missing = tags.filter((t) => !pool.some((m) => m.tags.includes(t)));
    const named = missing.length ? missing : tags;
    return { reason: `no runner online with ${named.length === 1 ? 'tag' : 'tags'} ${named.join(', ')}` };
  }
  const free = tagged.filter((m) => m.load < m.max).sort((a, b) => a.load / a.max - b.load / b.max || a.load - b.load || a.id.localeCompare(b.id));
  if (!free.length) return { reason: `${plural(tagged.length, 'runner', 'runners')} busy` };
  return { runnerId: free[0].id };
}

/** A project's pool with each runner's presence, tags, capacity and load. */
async function members(q: Queryable, projectId: string): Promise<Member[]> {
  const rows = await q.query<{ id: string; online: boolean; pool: boolean; tags: string[]; max: number | null; load: string | number }>(sql`
    with pool as (
      select runner_id as id from projects where id = ${projectId} and runner_id is not null and root_path is not null
      union select runner_id from project_runners where project_id = ${projectId} and root_state <> 'failed')
    select r.id,
           ${onlineSql} as online,
           coalesce(r.capabilities, '[]'::jsonb) @> ${sql.json([POOL_CAPABILITY])} as pool,
           r.tags, r.max_concurrent_runs as max,
           (select count(*) from skill_runs s where s.runner_id = r.id and s.state in ('starting', 'running'))
             + (select count(*) from pool_runs d where d.runner_id = r.id and d.status = 'dispatching') as load
      from runners r join pool on pool.id = r.id
     where r.revoked_at is null and r.paired_at is not null
     order by r.id`);
  // A runner that has not reported its capacity yet takes one run at a time.
  return rows.map((r) => ({ id: r.id, online: r.online, pool: r.pool, tags: r.tags ?? [], max: r.max ?? 1, load: Number(r.load) }));
}

/** A run the server ends itself (not started, or lost): its record, the live notice and run.failed once. */
async function endRun(q: Queryable, runId: string, reason: string, error: string, state: 'failed' | 'cancelled' = 'failed'): Promise<{ project_id: string; skill: string } | undefined> {
  const [run] = await q.query<{ project_id: string; skill: string }>(sql`
    update skill_runs set state = ${state}, reason = ${reason}, error = ${error.slice(0, ERROR_CHARS)}, finished_at = now(), updated_at = now()
     where id = ${runId} and state in ('queued', 'starting', 'running')
    returning project_id, skill`);
  await q.query(sql`update pool_runs set status = 'ended', lease_owner = null, lease_expires_at = null where run_id = ${runId}`);
  if (!run) return undefined;
  await publish(q, { type: 'run', projectId: run.project_id, id: runId, state }, { projectId: run.project_id });
  if (state === 'failed') {
    await recordActivity(q, { kind: 'run.failed', projectId: run.project_id, data: { runId, skill: run.skill, state, error: `${reason}: ${error}`.slice(0, ERROR_CHARS) }, dedupeKey: `run.ended:${runId}` });
  }
  return run;
}

export interface DispatcherOptions {
  db: Db;
  log: Logger;
  hub: Pick<RunnerHub, 'command'>;
  clock: Clock;
  /** How long a process holds a run it is sending (past it: `interrupted`). */
  leaseMs: number;
  lossGraceSeconds: number;
  pollMs?: number;
}

interface Claimed {
  row: PoolRunRow;
  runnerId: string;
}

export class PoolDispatcher {
  readonly owner = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private readonly loop: LeaseLoop;
  private readonly inFlight = new Set<Promise<void>>();
  /** Retries this process asked to cancel (skill.cancel once each). */
  private readonly cancelled = new Set<string>();
  private readonly kicker = () => this.loop.kick();

  constructor(private readonly opts: DispatcherOptions) {
    this.loop = new LeaseLoop({ log: opts.log, failed: 'pool dispatcher failed', everyMs: opts.pollMs ?? 1000, pass: () => this.pass() });
  }

  start(): void {
    kickers.add(this.kicker);
    void this.loop.start();
  }

  async stop(graceMs: number): Promise<void> {
    kickers.delete(this.kicker);
    await this.loop.stopWithin(graceMs, this.inFlight);
  }

  kick(): void {
    this.loop.kick();
  }

  private async pass(): Promise<void> {
    await this.expireLeases();
    await this.expireQueued();
    await this.loseRuns();
    await this.cancelRetries();
    for (const c of await this.claim()) {
      const p: Promise<void> = this.send(c)
        .catch((err) => this.opts.log.error('pool dispatch failed', { runId: c.row.run_id, error: err instanceof Error ? err.message : String(err) }))
        .finally(() => {
          this.inFlight.delete(p);
          this.kick();
        });
      this.inFlight.add(p);
    }
  }

  /** A process died while sending: the runner may or may not have the run, so it is never sent again. */
  private async expireLeases(): Promise<void> {
    await this.opts.db.transaction(async (tx) => {
      const gone = await tx.query<{ run_id: string }>(sql`
        select run_id from pool_runs where status = 'dispatching' and lease_expires_at < ${new Date(this.opts.clock.now())} for update skip locked`);
      for (const g of gone) await endRun(tx, g.run_id, 'interrupted', 'the process sending this run to its runner stopped before the runner answered; it is not sent again');
    });
  }

  /** Queued past the deadline: failed no_runner_available, with the last waiting reason; the project's admins told once. */
  private async expireQueued(): Promise<void> {
    await this.opts.db.transaction(async (tx) => {
      const late = await tx.query<{ run_id: string; project_id: string; skill: string; waiting_reason: string | null; source: string; source_name: string; minutes: string }>(sql`
        select run_id, project_id, skill, waiting_reason, source, source_name,
               round(extract(epoch from queue_deadline - created_at) / 60, 2)::text as minutes
          from pool_runs where status = 'queued' and queue_deadline < ${new Date(this.opts.clock.now())}
         order by seq for update skip locked`);
      for (const l of late) {
        const why = l.waiting_reason ?? 'no runner of the pool was looked at yet';
        const run = await endRun(tx, l.run_id, 'no_runner_available', `no pool runner took this run within ${Number(l.minutes)} min: ${why}`);
        if (!run) continue;
        await notify(tx, {
          kind: 'run.queue_timeout',
          projectId: l.project_id,
          data: { runId: l.run_id, skill: l.skill, source: l.source, sourceName: l.source_name, reason: why },
          dedupeKey: `run.queue_timeout:${l.run_id}`,
        });
      }
    });
  }

  /**
   * Dispatched runs whose runner has been offline (no socket, or not heard from) for longer than the grace,
   * or was revoked or deleted: failed runner_lost, and retried once when asked.
   */
  private async loseRuns(): Promise<void> {
    const grace = this.opts.lossGraceSeconds;
    await this.opts.db.transaction(async (tx) => {
      const lost = await tx.query<PoolRunRow & { source: string; source_id: string; source_name: string; delivery_id: string | null; queue_deadline: Date; created_at: Date; retry_on_loss: boolean; retry_of: string | null; runner_id: string }>(sql`
        select d.* from pool_runs d left join runners r on r.id = d.runner_id
         where d.status = 'dispatched'
           and (r.id is null or r.revoked_at is null and not ${onlineSql}
                             and r.last_seen_at < now() - make_interval(secs => ${grace})
                or r.revoked_at is not null)
         order by d.seq for update of d skip locked`);
      for (const l of lost) {
        const run = await endRun(tx, l.run_id, 'runner_lost', `its runner ${l.runner_id ?? '(deleted)'} has been offline for more than ${grace} s (POOL_LOSS_GRACE_SECONDS), or was revoked`);
        if (!run || !l.retry_on_loss || l.retry_of) continue;
        const minutes = (new Date(l.queue_deadline).getTime() - new Date(l.created_at).getTime()) / 60_000;
        const retry = await queuePoolRun(
          tx,
          {
            projectId: l.project_id,
            source: l.source as PoolRunSpec['source'],
            sourceId: l.source_id,
            sourceName: l.source_name,
            deliveryId: l.delivery_id,
            createdBy: l.created_by,
            skill: l.skill,
            args: l.args,
            profile: l.profile,
            model: l.model,
            output: l.output,
            targetTags: l.target_tags,
            queueTimeoutMinutes: minutes,
            retryOnLoss: false,
            retryOf: l.run_id,
          },
          this.opts.clock.now(),
        );
        this.opts.log.warn('pool run lost with its runner; retrying it once', { runId: l.run_id, runnerId: l.runner_id, retry });
      }
      if (lost.length) this.opts.log.warn('pool runs lost with their runner', { runs: lost.map((l) => l.run_id) });
    });
  }

  /** A lost run that reported `succeeded` late: its retry, if a runner holds it, is cancelled there. */
  private async cancelRetries(): Promise<void> {
    const rows = await this.opts.db.query<{ run_id: string; project_id: string; runner_id: string }>(sql`
      select d.run_id, d.project_id, d.runner_id from pool_runs d
        join skill_runs o on o.id = d.retry_of and o.state = 'succeeded'
        join skill_runs r on r.id = d.run_id and r.state in ('starting', 'running')
       where d.retry_of is not null and d.status = 'dispatched' and d.runner_id is not null`);
    for (const r of rows) {
      if (this.cancelled.has(r.run_id)) continue;
      this.cancelled.add(r.run_id);
      const out = await this.opts.hub.command(r.runner_id, 'skill.cancel', { projectId: r.project_id, runId: r.run_id }, null);
      if (out.status !== 'done') this.cancelled.delete(r.run_id); // tried again at the next pass
    }
  }

  /** Per project, the waiting runs in order: failed (budget, creator), claimed for a runner, or left with why. */
  private async claim(): Promise<Claimed[]> {
    const { db, clock } = this.opts;
    return db.transaction(async (tx) => {
      const projects = await tx.query<{ project_id: string }>(sql`select distinct project_id from pool_runs where status = 'queued'`);
      const out: Claimed[] = [];
      for (const { project_id } of projects) {
        const waiting = await tx.query<PoolRunRow>(sql`
          select run_id, project_id, created_by, skill, args, profile, model, output, target_tags, waiting_reason from pool_runs
           where project_id = ${project_id} and status = 'queued' order by seq limit ${PROJECT_BATCH} for update skip locked`);
        if (!waiting.length) continue;
        const pool = await members(tx, project_id);
        const overBudget = await budgetExceeded(tx, project_id);
        const authorized = new Map<string, boolean>();
        for (const w of waiting) {
          if (overBudget) {
            await endRun(tx, w.run_id, 'budget_exceeded', "the project's monthly budget is spent and its action is stop");
            continue;
          }
          if (!authorized.has(w.created_by)) authorized.set(w.created_by, await creatorAuthorized(tx, w.created_by, project_id));
          if (!authorized.get(w.created_by)) {
            await endRun(tx, w.run_id, 'creator_not_authorized', 'the creator of its trigger or schedule is no longer an active admin of the project');
            continue;
          }
          const pick = pickRunner(pool, w.target_tags ?? []);
          if ('reason' in pick) {
            if (pick.reason !== w.waiting_reason) await tx.query(sql`update pool_runs set waiting_reason = ${pick.reason} where run_id = ${w.run_id}`);
            continue;
          }
          pool.find((m) => m.id === pick.runnerId)!.load++;
          await tx.query(sql`
            update pool_runs set status = 'dispatching', runner_id = ${pick.runnerId}, lease_owner = ${this.owner},
                   lease_expires_at = ${new Date(clock.now() + this.opts.leaseMs)}
             where run_id = ${w.run_id}`);
          out.push({ row: w, runnerId: pick.runnerId });
        }
      }
      return out;
    });
  }

  /** skill.run with the run's id on behalf of its creator, then what came back. */
  private async send(c: Claimed): Promise<void> {
    const r = c.row;
    const spec = { projectId: r.project_id, skill: r.skill, args: r.args, profile: r.profile, model: r.model, output: r.output, runId: r.run_id };
    const outcome = await sendSkillRun(this.opts.hub, c.runnerId, spec, r.created_by).catch((err: unknown): SendOutcome | null => {
      this.opts.log.error('pool run not sent', { runId: r.run_id, error: err instanceof Error ? err.message : String(err) });
      return null; // its lease expires: interrupted
    });
    if (!outcome) return;
    await this.opts.db.transaction(async (tx) => {
      const [mine] = await tx.query(sql`select 1 from pool_runs where run_id = ${r.run_id} and status = 'dispatching' and lease_owner = ${this.owner} for update`);
      if (!mine) return; // its lease expired meanwhile: recorded as interrupted
      if (outcome.status === 'fired') {
        await tx.query(sql`
          update pool_runs set status = 'dispatched', dispatched_at = now(), waiting_reason = null, lease_owner = null, lease_expires_at = null where run_id = ${r.run_id}`);
        // The runner's own events may have come first (runs/ingest.ts): the state never moves back.
        const [run] = await tx.query<{ state: string }>(sql`
          update skill_runs set runner_id = ${c.runnerId}, state = case when state = 'queued' then 'starting' else state end, updated_at = now()
           where id = ${r.run_id} and (runner_id is null or runner_id = ${c.runnerId}) returning state`);
        if (run) await publish(tx, { type: 'run', projectId: r.project_id, id: r.run_id, state: run.state }, { projectId: r.project_id });
      } else if (outcome.reason === 'command_refused') {
        await endRun(tx, r.run_id, 'command_refused', `runner ${c.runnerId} refused it: ${outcome.detail ?? ''}`);
      } else if (outcome.reason === 'command_timeout') {
        // No answer: the runner may hold the run, so it stays that runner's (never sent to a second one):
        // it reports it, or loseRuns ends it runner_lost after the grace and retries it once.
        await tx.query(sql`
          update pool_runs set status = 'dispatched', dispatched_at = now(), waiting_reason = null, lease_owner = null, lease_expires_at = null where run_id = ${r.run_id}`);
        await tx.query(sql`update skill_runs set runner_id = ${c.runnerId}, updated_at = now() where id = ${r.run_id} and runner_id is null`);
        this.opts.log.warn('a pool run got no answer from its runner: it stays there until reported or lost', { runId: r.run_id, runnerId: c.runnerId });
      } else {
        // offline: the hub sent nothing (functions/runners/commands.ts), so another runner may take it.
        await tx.query(sql`
          update pool_runs set status = 'queued', runner_id = null, lease_owner = null, lease_expires_at = null, waiting_reason = ${`runner ${c.runnerId} went offline`} where run_id = ${r.run_id}`);
      }
    });
  }
}

/** How long a dispatcher holds a run it sends: the command's timeout and a margin. */
export const poolLeaseMs = (triggerLeaseSeconds: number) => Math.max(triggerLeaseSeconds * 1000, COMMANDS['skill.run'].timeoutMs + 15_000);
