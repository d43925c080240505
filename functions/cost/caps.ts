// Spend caps on the unit of work (issue #40 part 1; docs/cost.md, "Caps"). A project may cap what one
// issue (every session of it, earlier attempts included) and one skill run may cost; a trigger or
// schedule may give the runs it starts their own cap. Cost arrives after the fact (OTLP records and
// transcripts), so the check runs each time a runner's batch of usage was stored (the hub's onIngested,
// after the cost sink): a cap may be passed by the size of one request.
//   80 %   one `cap.warning` notification per unit (unit_caps.warned_at is the claim)
//   100 %  issue: the slot is stopped with `slot.stop` + a hold on the issue (the worktree and branch stay;
//          the orchestrator cannot dispatch the issue again while it is held), the unit's state becomes
//          `paused_cap` and the admins get `cap.reached` with two actions: cap.raise (raise by the
//          project's per-issue cap and resume the worker in the same worktree with `slot.resume`) and
//          cap.stop (end the issue; the hold stays).
//          run: cancelled with `skill.cancel`, its reason `cap_reached`.
// The pause is claimed by one update from 'active' (exactly once across replicas). Projects without caps
// (and without a capped run) cost one indexed read per batch that carries usage.
import type { RunnerEvent } from '../../protocol/frames.ts';
import { LLM_REQUEST, SESSION_META } from '../../protocol/usage.ts';
import type { RunnerHub } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { notify } from '../notifications/notify.ts';

export const CAP_WARNING = 'cap.warning';
export const CAP_REACHED = 'cap.reached';
export const WARN_PERCENT = 80;

export interface CapDeps {
  db: Db;
  hub: Pick<RunnerHub, 'command'>;
  log: Logger;
}

/** `at`: the newest request's time in the batch (epoch ms; 0 when the batch has only session metadata). */
type Unit = { projectId: string; unit: 'issue' | 'run'; key: string; slot: string | null; at: number };

/** The issues and runs a batch's usage names, per project (the latest slot seen for an issue). */
export function unitsOf(events: RunnerEvent[]): Unit[] {
  const units = new Map<string, Unit>();
  for (const e of events) {
    if (e.kind !== LLM_REQUEST && e.kind !== SESSION_META) continue;
    const p = e.payload as { project?: unknown; issue?: unknown; run?: unknown; slot?: unknown; at?: unknown };
    if (typeof p?.project !== 'string') continue;
    const slot = typeof p.slot === 'string' ? p.slot : null;
    const at = e.kind === LLM_REQUEST && typeof p.at === 'string' ? Date.parse(p.at) || 0 : 0;
    if (typeof p.issue === 'string' && /^[0-9]{1,12}$/.test(p.issue)) {
      const k = `${p.project}\0issue\0${p.issue}`;
      const had = units.get(k);
      units.set(k, { projectId: p.project, unit: 'issue', key: p.issue, slot: slot ?? had?.slot ?? null, at: Math.max(at, had?.at ?? 0) });
    }
    if (typeof p.run === 'string') {
      const k = `${p.project}\0run\0${p.run}`;
      units.set(k, { projectId: p.project, unit: 'run', key: p.run, slot: null, at: Math.max(at, units.get(k)?.at ?? 0) });
    }
  }
  return [...units.values()];
}

/** The recorded cost of one unit: its requests, and the requests of its sessions that did not name it themselves. */
export async function unitCost(q: Queryable, u: Pick<Unit, 'projectId' | 'unit' | 'key'>): Promise<number> {
  const col = u.unit === 'issue' ? sql`issue` : sql`run_id`;
  // Two index reads (sql/0043): the requests that name the unit, and those of its sessions that name none.
  const [row] = await q.query<{ cost: string | null }>(sql`
    select coalesce(sum(cost), 0) as cost from (
      select r.cost_usd as cost from llm_requests r where r.project_id = ${u.projectId} and r.${col} = ${u.key}
      union all
      select r.cost_usd from agent_sessions s
        join llm_requests r on r.runner_id = s.runner_id and r.runtime = s.runtime and r.session_id = s.session_id
       where s.project_id = ${u.projectId} and s.${col} = ${u.key} and r.project_id = ${u.projectId} and r.${col} is null) x`);
  return Number(row?.cost ?? 0);
}

/** The unit's cap now (the project's, or the run's own, plus what was raised); null when it has none. */
export async function unitCap(q: Queryable, u: Pick<Unit, 'projectId' | 'unit' | 'key'>): Promise<{ cap: number | null; base: number | null; extra: number; state: string; slot: string | null; runnerId: string | null }> {
  const [row] = await q.query<{ base: string | null; extra: string | null; state: string | null; slot: string | null; runner_id: string | null }>(
    u.unit === 'issue'
      ? sql`select p.cap_issue_usd as base, c.extra_usd as extra, c.state, c.slot, coalesce(c.runner_id, p.runner_id) as runner_id
              from projects p left join unit_caps c on c.project_id = p.id and c.unit = 'issue' and c.key = ${u.key} where p.id = ${u.projectId}`
      : sql`select coalesce(c.own_cap_usd, p.cap_run_usd) as base, c.extra_usd as extra, c.state, null as slot, r.runner_id
              from projects p left join skill_runs r on r.id = ${u.key} and r.project_id = p.id
              left join unit_caps c on c.project_id = p.id and c.unit = 'run' and c.key = ${u.key} where p.id = ${u.projectId}`,
  );
  const base = row?.base == null ? null : Number(row.base);
  const extra = Number(row?.extra ?? 0);
  return { cap: base === null ? null : base + extra, base, extra, state: row?.state ?? 'active', slot: row?.slot ?? null, runnerId: row?.runner_id ?? null };
}

const money = (n: number) => Math.round(n * 1e6) / 1e6;

/** After a batch is stored: check the caps of the units its usage names (see the header). */
export async function enforceCaps(deps: CapDeps, runnerId: string, events: RunnerEvent[]): Promise<void> {
  const units = unitsOf(events);
  if (units.length === 0) return;
  const projects = [...new Set(units.map((u) => u.projectId))];
  // The cheap skip: only projects of this runner's that have a cap, or a run of theirs that has one.
  const ownCap = sql`exists (select 1 from unit_caps c where c.project_id = p.id and c.unit = 'run' and c.state = 'active' and c.own_cap_usd is not null)`;
  const capped = await deps.db.query<{ id: string; issue: boolean; run: boolean }>(sql`
    select p.id, p.cap_issue_usd is not null as issue, (p.cap_run_usd is not null or ${ownCap}) as run
      from projects p where p.id = any(${projects}::text[]) and (p.cap_issue_usd is not null or p.cap_run_usd is not null or ${ownCap})`);
  if (capped.length === 0) return;
  const byId = new Map(capped.map((c) => [c.id, c]));
  for (const u of units) {
    const c = byId.get(u.projectId);
    if (!c || !(u.unit === 'issue' ? c.issue : c.run)) continue;
    await checkUnit(deps, runnerId, u);
  }
}

/** Compare one unit's cost with its cap: warn at 80 % once, pause (issue) or cancel (run) at 100 %. */
export async function checkUnit(deps: CapDeps, runnerId: string, u: Unit): Promise<'none' | 'warned' | 'paused'> {
  const { db } = deps;
  const cap = await unitCap(db, u);
  if (u.unit === 'issue' && (cap.state === 'paused_cap' || cap.state === 'stopped')) return stopAgain(deps, runnerId, u);
  if (cap.cap === null || cap.state !== 'active') return 'none';
  const limit = cap.cap;
  const spent = await unitCost(db, u);
  if (spent < (cap.cap * WARN_PERCENT) / 100) return 'none';
  const [p] = await db.query<{ name: string }>(sql`select name from projects where id = ${u.projectId}`);
  const base = { projectId: u.projectId, projectName: p?.name ?? null, unit: u.unit, key: u.key, ...(u.unit === 'issue' ? { issue: Number(u.key) } : { runId: u.key }), capUsd: money(cap.cap), costUsd: money(spent) };
  let result: 'none' | 'warned' | 'paused' = 'none';
  await db.transaction(async (tx) => {
    await tx.query(sql`insert into unit_caps (project_id, unit, key, runner_id, slot) values (${u.projectId}, ${u.unit}, ${u.key}, ${runnerId}, ${u.slot})
                       on conflict (project_id, unit, key) do nothing`);
    const [warned] = await tx.query(sql`update unit_caps set warned_at = now(), updated_at = now()
                                         where project_id = ${u.projectId} and unit = ${u.unit} and key = ${u.key} and warned_at is null returning 1`);
    if (warned && spent < limit) {
      await notify(tx, { kind: CAP_WARNING, projectId: u.projectId, data: { ...base, percent: WARN_PERCENT }, dedupeKey: `cap.warning:${u.projectId}:${u.unit}:${u.key}` });
      result = 'warned';
    }
  });
  if (spent < cap.cap) return result;
  // The pause: one update from 'active' (whoever gets the row sends the stop and the notification).
  const [claimed] = await db.query<{ pauses: number; slot: string | null; runner_id: string | null }>(sql`
    update unit_caps set state = 'paused_cap', paused_at = now(), paused_cost_usd = ${spent}, paused_cap_usd = ${cap.cap},
           pauses = pauses + 1, slot = coalesce(${u.slot}, slot), runner_id = ${runnerId}, updated_at = now()
     where project_id = ${u.projectId} and unit = ${u.unit} and key = ${u.key} and state = 'active'
     returning pauses, slot, runner_id`);
  if (!claimed) return result;
  const log = deps.log.child({ area: 'caps', projectId: u.projectId, unit: u.unit, key: u.key });
  if (u.unit === 'issue') {
    const slot = claimed.slot;
    if (slot) {
      const out = await deps.hub.command(runnerId, 'slot.stop', { projectId: u.projectId, slot, hold: { issue: Number(u.key), reason: 'cap' } }, null);
      if (out.status !== 'done') log.warn('slot.stop for a reached cap was not done', { slot, status: out.status });
    } else log.warn('the issue reached its cap but no slot is known for it');
    await db.transaction(async (tx) => {
      const data = { ...base, slot, state: 'paused_cap', raiseByUsd: cap.base, pause: claimed.pauses };
      await notify(tx, {
        kind: CAP_REACHED,
        projectId: u.projectId,
        data,
        dedupeKey: `cap.reached:${u.projectId}:issue:${u.key}:${claimed.pauses}`,
        actions: [
          { kind: 'cap.raise', target: { projectId: u.projectId, issue: Number(u.key), pause: claimed.pauses, by: cap.base ?? limit } },
          { kind: 'cap.stop', target: { projectId: u.projectId, issue: Number(u.key), pause: claimed.pauses } },
        ],
      });
      await tx.query(sql`insert into activity_items (project_id, kind, data) values (${u.projectId}, 'cap.reached', ${sql.json(data)})`);
    });
  } else {
    await db.transaction(async (tx) => {
      // The run's outcome says why it ended (the runner's cancelled result keeps this reason).
      await tx.query(sql`update skill_runs set reason = 'cap_reached', error = coalesce(error, ${`cancelled: its cap of $${money(limit).toFixed(2)} was reached ($${money(spent).toFixed(2)} recorded)`}), updated_at = now()
                          where id = ${u.key} and project_id = ${u.projectId}`);
      const data = { ...base, state: 'cancelled' };
      await notify(tx, { kind: CAP_REACHED, projectId: u.projectId, data, dedupeKey: `cap.reached:${u.projectId}:run:${u.key}:${claimed.pauses}` });
      await tx.query(sql`insert into activity_items (project_id, kind, data) values (${u.projectId}, 'cap.reached', ${sql.json(data)})`);
    });
    const out = await deps.hub.command(cap.runnerId ?? runnerId, 'skill.cancel', { projectId: u.projectId, runId: u.key }, null);
    if (out.status !== 'done') log.warn('skill.cancel for a reached cap was not done', { status: out.status });
  }
  log.info('cap reached', { capUsd: cap.cap, costUsd: spent });
  return 'paused';
}

/** How often a held issue's worker that goes on spending is sent the stop again, at most. */
export const RESTOP_SECONDS = 30;

/**
 * Usage of an issue that is paused or stopped at its cap, made after its pause (late records of
 * requests made before it do not count): a worker still works on it — its slot.stop did not arrive (the runner was offline, the command timed out), or
 * someone removed the hold and dispatched it again. It is sent the stop with the hold again, at most
 * every RESTOP_SECONDS (the claim is the row's restopped_at).
 */
async function stopAgain(deps: CapDeps, runnerId: string, u: Unit): Promise<'none' | 'paused'> {
  const spent = await unitCost(deps.db, u);
  const [row] = await deps.db.query<{ slot: string | null }>(sql`
    update unit_caps set restopped_at = now(), slot = coalesce(${u.slot}, slot), updated_at = now()
     where project_id = ${u.projectId} and unit = 'issue' and key = ${u.key} and state in ('paused_cap', 'stopped')
       and ${spent} > coalesce(paused_cost_usd, 0) and paused_at < ${new Date(u.at)}
       and (restopped_at is null or restopped_at < now() - make_interval(secs => ${RESTOP_SECONDS}))
     returning slot`);
  if (!row?.slot) return 'none';
  const out = await deps.hub.command(runnerId, 'slot.stop', { projectId: u.projectId, slot: row.slot, hold: { issue: Number(u.key), reason: 'cap' } }, null);
  deps.log.child({ area: 'caps', projectId: u.projectId, unit: u.unit, issue: u.key }).warn('a held issue spent again: its worker was sent the stop again', { slot: row.slot, status: out.status, costUsd: spent });
  return 'paused';
}

/** A run started by a trigger or schedule with its own cap (capUSD): stored with the run's id. */
export async function setRunCap(q: Queryable, projectId: string, runId: string, capUsd: number | string | null): Promise<void> {
  if (capUsd === null) return;
  await q.query(sql`insert into unit_caps (project_id, unit, key, own_cap_usd) values (${projectId}, 'run', ${runId}, ${capUsd})
                    on conflict (project_id, unit, key) do update set own_cap_usd = excluded.own_cap_usd, updated_at = now()`);
}

/** The paused or stopped issues of a project, for the fleet view (figures: spent and cap at the pause). */
export async function cappedIssues(q: Queryable, projectId: string) {
  return q.query<{ key: string; slot: string | null; state: 'paused_cap' | 'stopped'; paused_at: Date | null; paused_cost_usd: string | null; paused_cap_usd: string | null; pauses: number }>(sql`
    select key, slot, state, paused_at, paused_cost_usd, paused_cap_usd, pauses from unit_caps
     where project_id = ${projectId} and unit = 'issue' and state <> 'active'`);
}
