// The trigger firer (spec: Inbound delivery states; "The run starts after the response"; Limits "Live
// runs per trigger: one"). Every API process runs one; they share the work through the database:
//   claim   up to CLAIM_BATCH of the oldest `accepted` deliveries (FOR UPDATE SKIP LOCKED), in order, and per trigger its row FOR NO KEY
//           UPDATE, so the decisions for one trigger are taken one at a time across all processes (not
//           FOR UPDATE: that waits for the key-share lock every hook transaction's foreign keys hold on
//           the row, and under a steady stream of deliveries the firer starved until the stream stopped)
//   decide  in that transaction (decide() below, in this order):
//             trigger disabled meanwhile              → skipped, trigger_disabled
//             creator no longer an active admin       → failed, creator_not_authorized; the trigger
//                                                        disables itself (audited); the caller had its 202
//             a run of this trigger still live        → skipped, previous_still_running
//             project budget set to stop and exceeded → skipped, budget_exceeded (cost/budget.ts)
//             else                                    → firing, with a lease
//   pool    a skill trigger with target `pool` that decides firing queues its run in that transaction
//           (runs/pool.ts queuePoolRun) and is `fired` with its id at once: the pool dispatcher sends it
//   send    after the commit, on behalf of the creator: skill → `skill.run` with the rendered args,
//           profile, model and output; next_round → `orchestrator.start {next: true}`
//   record  fired (with the run id), or failed: runner_offline | command_refused (the runner's message)
//           | command_timeout | interrupted (the database went away while it was sent: recorded once it is back).
//           A delivery that did not start a run (failed, or skipped budget_exceeded) is also a run that did
//           not start (runs/start-failures.ts: a row, activity, admins told once per cause)
// Wake-ups (lib/lease-loop.ts): kick() after each 202 in this process, and a poll, so a delivery accepted by a process that
// died before firing it is fired by another. A process that dies while sending leaves a `firing` row
// whose lease expires: it is marked failed `interrupted`, never sent again — at most once per delivery.
import { randomUUID } from 'node:crypto';
import { appendAudit } from '../audit/audit.ts';
import { budgetExceeded } from '../cost/budget.ts';
import type { Clock } from '../lib/clock.ts';
import { setRunCap } from '../cost/caps.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import { isDatabaseUnavailable, whenReachable } from '../lib/db/unavailable.ts';
import { LeaseLoop } from '../lib/lease-loop.ts';
import type { Logger } from '../lib/log.ts';
import type { RunnerHub } from '../lib/context.ts';
import { recordActivity } from '../activity/record.ts';
import { recordStartFailures, startSucceeded } from '../runs/start-failures.ts';
import type { StartFailure } from '../runs/start-failures.ts';
import { failedStartReason } from '../../protocol/start-reasons.ts';
import { creatorAuthorized, sendCommand, sendSkillRun } from '../runs/launch.ts';
import type { SendOutcome } from '../runs/launch.ts';
import { kickPool, queuePoolRun } from '../runs/pool.ts';
import { poolRunTarget } from '../runs/pool-target.ts';
import type { PoolRunSpec } from '../runs/pool.ts';
import type { TriggerRow } from './triggers.ts';

/** A fired run with no record yet (its first event not in) counts as live this long. */
const UNREPORTED_RUN_LIVE_MS = 10 * 60 * 1000;
const DETAIL_CHARS = 500;
/** Deliveries decided per claim transaction (firer batches, docs/performance.md). */
const CLAIM_BATCH = 100;

/** A delivery of trigger `t` that did not start a run, as runs/start-failures.ts records it. */
const notStarted = (t: Pick<TriggerRow, 'id' | 'project_id' | 'name' | 'action' | 'skill'>, deliveryId: string, reason: string, detail: string | null): StartFailure => ({
  projectId: t.project_id,
  source: 'trigger',
  sourceId: t.id,
  sourceName: t.name,
  action: t.action,
  skill: t.skill,
  reason: failedStartReason(reason, detail),
  detail,
  deliveryId,
});
/** A delivery of trigger `t` in the activity feed: trigger.fired with its run, or trigger.refused with why (once per delivery). */
export const triggerActivity = (q: Queryable, t: Pick<TriggerRow, 'id' | 'project_id' | 'name' | 'action' | 'skill'>, d: { id: string; deliveryId: string }, o: { runId?: string | null; reason?: string | null }) =>
  recordActivity(q, {
    kind: o.reason ? 'trigger.refused' : 'trigger.fired',
    projectId: t.project_id,
    data: { triggerId: t.id, trigger: t.name, action: t.action, skill: t.skill ?? undefined, deliveryId: d.deliveryId, runId: o.runId ?? undefined, reason: o.reason ?? undefined },
    dedupeKey: `trigger.delivery:${d.id}`,
  });

/** A trigger that starts skill runs on the project's pool (its row's target, sql/0030). */
const isPoolSkill = (t: TriggerRow): boolean => t.action === 'skill' && t.target === 'pool';

/** What a pool trigger's delivery queues: the rendered args, on behalf of the trigger's creator. */
function poolSpec(t: TriggerRow, d: { id: string; args: string[] | null }): PoolRunSpec {
  return {
    projectId: t.project_id,
    source: 'trigger',
    sourceId: t.id,
    sourceName: t.name,
    deliveryId: d.id,
    createdBy: t.created_by,
    skill: t.skill ?? '',
    args: d.args ?? [],
    profile: t.profile,
    model: t.model,
    output: t.output,
    ...poolRunTarget(t),
  };
}

/** Decisions before sending that mean the call started nothing (previous_still_running and a disabled trigger are by design). */
const STOPS_A_START = new Set(['creator_not_authorized', 'budget_exceeded']);

export interface FirerOptions {
  db: Db;
  log: Logger;
  hub: Pick<RunnerHub, 'command'>;
  clock: Clock;
  leaseMs: number;
  pollMs?: number;
  concurrency?: number;
  /** A trigger row was changed here (it disabled itself): the hook cache of this process forgets it. */
  onTriggerChanged?: (triggerId: string) => void;
}

export interface Facts {
  enabled: boolean;
  creatorAuthorized: boolean;
  live: boolean;
  budgetExceeded: boolean;
}
export type Decision = { status: 'firing' } | { status: 'skipped' | 'failed'; reason: string };

/** The firing rules in the spec's order; pure, so each reason is tested alone. */
export function decide(f: Facts): Decision {
  if (!f.enabled) return { status: 'skipped', reason: 'trigger_disabled' };
  if (!f.creatorAuthorized) return { status: 'failed', reason: 'creator_not_authorized' };
  if (f.live) return { status: 'skipped', reason: 'previous_still_running' };
  if (f.budgetExceeded) return { status: 'skipped', reason: 'budget_exceeded' };
  return { status: 'firing' };
}

interface Claimed {
  id: string;
  /** The caller's delivery id (X-Svc-Delivery). */
  deliveryId: string;
  /** When its lease ends (ms): until then this process may still record its outcome. */
  leaseEnds: number;
  args: string[] | null;
  trigger: TriggerRow;
}

/**
 * Live = another delivery of this trigger is being sent, or (skill) started a run that is queued,
 * starting or running — or whose record has not arrived yet, for UNREPORTED_RUN_LIVE_MS — or a pool
 * retry of its run lost with its runner (runs/pool.ts) has not ended.
 */
export async function hasLiveRun(q: Queryable, triggerId: string, deliveryId: string, nowMs: number): Promise<boolean> {
  const [row] = await q.query<{ live: boolean }>(liveRunQuery(triggerId, deliveryId, nowMs));
  return row.live;
}

/**
 * The statement of hasLiveRun. Four cases, each read from an index that holds only what can make it
 * true (sql/0020), so its cost does not grow with the trigger's history of finished runs. Exported for
 * the test that reads its plan (test/triggers/live-run.test.ts).
 */
export const liveRunQuery = (triggerId: string, deliveryId: string, nowMs: number) => sql`
  select exists (
           select 1 from inbound_deliveries o
            where o.trigger_id = ${triggerId} and o.id <> ${deliveryId} and o.status = 'firing')
      or exists (
           select 1 from skill_runs r join inbound_deliveries o on o.run_id = r.id and o.status = 'fired'
            where r.state in ('queued', 'starting', 'running') and o.trigger_id = ${triggerId} and o.id <> ${deliveryId})
      or exists (
           select 1 from inbound_deliveries o
            where o.trigger_id = ${triggerId} and o.id <> ${deliveryId} and o.status = 'fired' and o.run_id is not null
              and o.fired_at > ${new Date(nowMs - UNREPORTED_RUN_LIVE_MS)}
              and not exists (select 1 from skill_runs r where r.id = o.run_id))
      or exists (
           select 1 from pool_runs d
            where d.source_id = ${triggerId} and d.status <> 'ended' and d.source = 'trigger' and d.retry_of is not null) as live`;

export class TriggerFirer {
  readonly owner = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly concurrency: number;
  /** Wake-ups: the poll, and kick() from the start (an accepted call fires before the background loops start). */
  private readonly loop: LeaseLoop;

  constructor(private readonly opts: FirerOptions) {
    this.concurrency = opts.concurrency ?? 8;
    this.loop = new LeaseLoop({ log: opts.log, failed: 'trigger firer failed', everyMs: opts.pollMs ?? 2000, kickBeforeStart: true, pass: () => this.pass() });
  }

  start(): void {
    void this.loop.start();
  }

  /**
   * Stop claiming; let a claim under way end (so the pool is not closed under it) and commands in flight
   * finish, for up to `graceMs` in all (their leases cover the rest).
   */
  async stop(graceMs: number): Promise<void> {
    await this.loop.stopWithin(graceMs, this.inFlight);
  }

  kick(): void {
    this.loop.kick();
  }

  /** Expire the leases of dead processes, then claim and send while there is room. */
  private async pass(): Promise<void> {
    await this.expireLeases();
    while (!this.loop.stopped && this.inFlight.size < this.concurrency) {
      const claimed = await this.claim(this.concurrency - this.inFlight.size);
      if (claimed === null) break;
      // A timing point of bench/trigger-agent.mjs (the claim hop); LOG_LEVEL=debug only.
      if (claimed.length) this.opts.log.debug('trigger deliveries claimed', { deliveries: claimed.map((c) => c.id).join(',') });
      for (const c of claimed) {
        const p: Promise<void> = this.send(c)
          .catch((err) => this.opts.log.error('trigger firing failed', { deliveryId: c.id, error: err instanceof Error ? err.message : String(err) }))
          .finally(() => {
            this.inFlight.delete(p);
            this.kick();
          });
        this.inFlight.add(p);
      }
    }
  }

  /** A process died while sending: the command may or may not have left, so it is never sent again. */
  private async expireLeases(): Promise<void> {
    await this.opts.db.transaction(async (tx) => {
      const gone = await tx.query<Pick<TriggerRow, 'id' | 'project_id' | 'name' | 'action' | 'skill'> & { delivery: string; detail: string }>(sql`
        update inbound_deliveries d set status = 'failed', reason = 'interrupted', lease_owner = null, updated_at = now(),
               detail = 'the process firing this delivery stopped before the runner answered; it is not sent again'
          from triggers t
         where t.id = d.trigger_id and d.status = 'firing' and d.lease_expires_at < ${new Date(this.opts.clock.now())}
        returning t.id, t.project_id, t.name, t.action, t.skill, d.id as delivery, d.detail`);
      await recordStartFailures(tx, gone.map((g) => notStarted(g, g.delivery, 'interrupted', g.detail)));
    });
  }

  /**
   * Up to CLAIM_BATCH of the oldest waiting deliveries decided in one transaction, in their order, as if
   * one after another: per trigger its row is locked and the facts read once, and a delivery that goes
   * `firing` makes the later ones of its trigger live (previous_still_running), as it would one by one.
   * Returns the claims to send (at most `sendable`; the rest stay `accepted` for the next claim), or
   * null when none is waiting.
   */
  private async claim(sendable: number): Promise<Claimed[] | null> {
    const { db, clock } = this.opts;
    const disabled: string[] = [];
    const claimed = await db.transaction(async (tx) => {
      const failures: StartFailure[] = [];
      const waiting = await tx.query<{ id: string; trigger_id: string; delivery_id: string; args: string[] | null }>(sql`
        select id, trigger_id, delivery_id, args from inbound_deliveries where status = 'accepted'
         order by created_at, id limit ${CLAIM_BATCH} for update skip locked`);
      if (!waiting.length) return null;
      const byTrigger = new Map<string, typeof waiting>();
      for (const d of waiting) byTrigger.set(d.trigger_id, [...(byTrigger.get(d.trigger_id) ?? []), d]);
      const out: Claimed[] = [];
      let queued = 0;
      const decided = new Map<string, { status: string; reason: string; ids: string[] }>();
      const now = clock.now();
      for (const [triggerId, list] of byTrigger) {
        const [t] = await tx.query<TriggerRow>(sql`select * from triggers where id = ${triggerId} for no key update`);
        let enabled = t.enabled;
        const authorized = await creatorAuthorized(tx, t.created_by, t.project_id);
        let live = await hasLiveRun(tx, t.id, list[0].id, now);
        const overBudget = await budgetExceeded(tx, t.project_id);
        for (const d of list) {
          const decision = decide({ enabled, creatorAuthorized: authorized, live, budgetExceeded: overBudget });
          if (decision.status === 'firing' && isPoolSkill(t)) {
            // A pool target (runs/pool.ts): the run is queued on the server now; the dispatcher sends it.
            const runId = await queuePoolRun(tx, poolSpec(t, d), now);
            await tx.query(sql`
              update inbound_deliveries set status = 'fired', run_id = ${runId}, fired_at = ${new Date(now)}, updated_at = now() where id = ${d.id}`);
            await triggerActivity(tx, t, { id: d.id, deliveryId: d.delivery_id }, { runId });
            await startSucceeded(tx, 'trigger', t.id);
            live = true;
            queued++;
            continue;
          }
          if (decision.status === 'firing') {
            if (out.length >= sendable) continue; // stays accepted, claimed next time (later ones of this trigger then see this one live)
            out.push({ id: d.id, deliveryId: d.delivery_id, leaseEnds: now + this.opts.leaseMs, args: d.args, trigger: t });
            live = true;
            continue;
          }
          if (STOPS_A_START.has(decision.reason)) failures.push(notStarted(t, d.id, decision.reason, null));
          await triggerActivity(tx, t, { id: d.id, deliveryId: d.delivery_id }, { reason: decision.reason });
          const key = `${decision.status}/${decision.reason}`;
          const group = decided.get(key) ?? { status: decision.status, reason: decision.reason, ids: [] };
          group.ids.push(d.id);
          decided.set(key, group);
          if (decision.reason === 'creator_not_authorized' && enabled) {
            enabled = false; // the later ones of this trigger: skipped, trigger_disabled
            await tx.query(sql`update triggers set enabled = false, disabled_reason = 'creator_not_authorized', updated_at = now() where id = ${t.id}`);
            await appendAudit(tx, { actor: 'system', action: 'trigger.disable', target: { type: 'trigger', id: t.id }, diff: { reason: 'creator_not_authorized', creator: t.created_by, deliveryId: d.id } });
            this.opts.log.warn('trigger disabled itself: its creator is no longer an active admin of the project', { triggerId: t.id, projectId: t.project_id });
            disabled.push(t.id);
          }
        }
      }
      if (out.length) {
        await tx.query(sql`
          update inbound_deliveries set status = 'firing', lease_owner = ${this.owner}, lease_expires_at = ${new Date(now + this.opts.leaseMs)}, updated_at = now()
           where id = any(${out.map((c) => c.id)})`);
      }
      for (const g of decided.values()) {
        await tx.query(sql`update inbound_deliveries set status = ${g.status}, reason = ${g.reason}, updated_at = now() where id = any(${g.ids})`);
      }
      await recordStartFailures(tx, failures);
      return { out, queued };
    });
    for (const id of disabled) this.opts.onTriggerChanged?.(id);
    if (claimed?.queued) kickPool();
    return claimed && claimed.out;
  }

  /** Send the command on behalf of the creator and record what came back. */
  private async send(c: Claimed): Promise<void> {
    const t = c.trigger;
    // The database going away while a delivery is `firing` (PostgreSQL restarting) does not leave it so
    // until its lease expires: what is still to read waits for the database; a command whose fate the
    // failure hid is recorded `interrupted` (never sent again: at most once), as soon as it is back.
    const [project] = await whenReachable(() => this.opts.db.query<{ runner_id: string | null }>(sql`select runner_id from projects where id = ${t.project_id}`), c.leaseEnds);
    const outcome = await this.command(t, c.args ?? [], project?.runner_id ?? null).catch((err: unknown): SendOutcome => {
      if (!isDatabaseUnavailable(err)) throw err;
      return { status: 'failed', reason: 'interrupted', detail: 'the database went away while this delivery was being sent; it is not sent again' };
    });
    await whenReachable(() => this.record(c, outcome), c.leaseEnds);
  }

  private async record(c: Claimed, outcome: SendOutcome): Promise<void> {
    const t = c.trigger;
    const detail = outcome.detail?.slice(0, DETAIL_CHARS) ?? null;
    await this.opts.db.transaction(async (tx) => {
      const [mine] = await tx.query(sql`
        update inbound_deliveries
           set status = ${outcome.status}, reason = ${outcome.reason ?? null}, detail = ${detail},
               run_id = ${outcome.runId ?? null}, fired_at = case when ${outcome.status} = 'fired' then ${new Date(this.opts.clock.now())}::timestamptz end,
               lease_owner = null, lease_expires_at = null, updated_at = now()
         where id = ${c.id} and status = 'firing' and lease_owner = ${this.owner}
        returning 1`);
      if (!mine) return; // its lease expired meanwhile: recorded as interrupted
      await triggerActivity(tx, t, c, { runId: outcome.runId, reason: outcome.status === 'fired' ? null : (outcome.reason ?? 'command_refused') });
      if (outcome.status === 'fired') await startSucceeded(tx, 'trigger', t.id);
      if (outcome.status === 'fired' && outcome.runId) await setRunCap(tx, t.project_id, outcome.runId, t.cap_usd);
      else await recordStartFailures(tx, [notStarted(t, c.id, outcome.reason ?? 'command_refused', detail)]);
    });
  }

  private async command(t: TriggerRow, args: string[], runnerId: string | null): Promise<SendOutcome> {
    if (t.action === 'skill') {
      return sendSkillRun(this.opts.hub, runnerId, { projectId: t.project_id, skill: t.skill ?? '', args, profile: t.profile, model: t.model, output: t.output }, t.created_by);
    }
    return sendCommand(this.opts.hub, runnerId, 'orchestrator.start', { projectId: t.project_id, next: true }, t.created_by);
  }
}
