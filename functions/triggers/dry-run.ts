// The dry run's verdict once the payload is accepted (docs/triggers.md, "Dry run"; issue 34): would the
// run start now? The firer's rules (fire.ts decide: creator, live run, budget), then the project's
// runner (online, an agent runtime it can use: runners/profiles.ts). `would_fire`, or `would_fail` with
// the first reason that stops it, in code and in words. Reads only; fires and records nothing.
import { budgetExceeded } from '../cost/budget.ts';
import type { Clock } from '../lib/clock.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { runnerReadiness } from '../runners/profiles.ts';
import { startReasonRemedy, startReasonWords } from '../../protocol/start-reasons.ts';
import { decide, hasLiveRun } from './fire.ts';
import { creatorAuthorized } from '../runs/launch.ts';
import type { TriggerRow } from './triggers.ts';

export type StartVerdict = { verdict: 'would_fire'; notes: string[] } | { verdict: 'would_fail'; reason: string; message: string; remedy: string | null; notes: string[] };

export async function startVerdict(q: Queryable, t: TriggerRow, clock: Clock): Promise<StartVerdict> {
  const notes = t.enabled ? [] : ['the trigger is disabled: a real delivery would get 404'];
  const fail = (reason: string, detail?: string): StartVerdict => ({
    verdict: 'would_fail',
    reason,
    message: `The run would not start: ${startReasonWords(reason)}${detail ? ` (${detail})` : ''}.`,
    remedy: startReasonRemedy(reason),
    notes,
  });
  const decision = decide({
    enabled: true, // a disabled trigger answers 404 to a real call: a note, not a verdict
    creatorAuthorized: await creatorAuthorized(q, t.created_by, t.project_id),
    live: await hasLiveRun(q, t.id, '', clock.now()),
    budgetExceeded: await budgetExceeded(q, t.project_id),
  });
  if (decision.status !== 'firing') return fail(decision.reason);
  const [project] = await q.query<{ runner_id: string | null }>(sql`select runner_id from projects where id = ${t.project_id}`);
  const ready = await runnerReadiness(q, project?.runner_id ?? null, t.action === 'skill' ? t.profile : null);
  if (!ready.ok) return fail(ready.reason, ready.message);
  return { verdict: 'would_fire', notes: [...notes, ...ready.notes] };
}
