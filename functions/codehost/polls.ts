// collector.poll for the projects a code-host delivery affects (spec: allowlist `collector.poll`, admin,
// 30 s; issue 15 item 2 "the runner of each affected project gets collector.poll at once").
//   1. every matched project's command goes out at once, in parallel, through the hub (functions/runners/
//      commands.ts): sent directly when this process holds the runner's socket, else as a runner_commands
//      row + NOTIFY that the process holding it sends on;
//   2. each answer (done, failed — e.g. not_implemented —, timeout after 30 s, offline, no runner, or an
//      error of our own) is kept, and the delivery's row gets them all in one update with its outcome:
//      `polled` when every runner answered ok, else `poll_failed`.
// Nothing here throws: every path ends in that update. A process that dies meanwhile leaves the row at
// `polling` (the commands it sent still reach their runners).
import type { AppContext } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Poll } from './apps.ts';

export interface Target {
  projectId: string;
  runnerId: string | null;
}

async function pollOne(ctx: Pick<AppContext, 'hub'>, t: Target): Promise<Poll> {
  if (!t.runnerId) return { ...t, status: 'no_runner' };
  try {
    const outcome = await ctx.hub.command(t.runnerId, 'collector.poll', { projectId: t.projectId }, null);
    if (outcome.status === 'failed') return { ...t, status: 'failed', error: outcome.error };
    return { ...t, status: outcome.status };
  } catch (err) {
    return { ...t, status: 'error', error: { code: 'server_error', message: err instanceof Error ? err.message.slice(0, 500) : 'could not send the command' } };
  }
}

/** Send collector.poll to every target at once and record the answers on the delivery. */
export async function pollProjects(ctx: Pick<AppContext, 'hub' | 'db' | 'log'>, deliveryRowId: string, targets: Target[]): Promise<Poll[]> {
  const polls = await Promise.all(targets.map((t) => pollOne(ctx, t)));
  const outcome = polls.every((p) => p.status === 'done') ? 'polled' : 'poll_failed';
  try {
    await ctx.db.query(sql`update codehost_deliveries set polls = ${sql.json(polls)}, outcome = ${outcome}, updated_at = now() where id = ${deliveryRowId}`);
    ctx.log.debug('code-host delivery: collector.poll answered', { deliveryRowId, outcome });
  } catch (err) {
    ctx.log.error('could not record the collector.poll outcome of a code-host delivery', { deliveryRowId, error: err instanceof Error ? err.message : String(err) });
  }
  return polls;
}
