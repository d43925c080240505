// The cost block in pull request descriptions (issue #40 part 1; docs/cost.md, "The cost in the pull
// request's description"). A job (every minute, over the scheduler's SQL leases): for each open pull
// request with attributed requests, the block's text from its record (record.ts pullRecord, the same
// numbers as GET …/record); when it differs from the text last written, and nothing was attempted for that
// pull request in the last minute (across replicas: the claim is one conditional upsert of
// pull_cost_blocks, sql/0045), the project's runner gets pr.describe (which rewrites only the block). The
// outcome is recorded (text and written_at on success, error otherwise, retried on a later tick); nothing
// here throws.
import { costBlockText } from '../../protocol/cost-block.ts';
import { PR_DESCRIBE_CAPABILITY } from '../../protocol/frames.ts';
import type { AppContext } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { JobDefinition } from '../jobs/scheduler.ts';
import { pullRecord } from './record.ts';

/** At most one write per pull request per this many seconds. */
export const COST_BLOCK_INTERVAL_S = 60;
const MAX_PER_TICK = 200;

export interface CostBlockOutcome {
  written: number;
  unchanged: number;
  failed: number;
  skipped: number;
}

export async function updateCostBlocks(ctx: Pick<AppContext, 'db' | 'hub' | 'log'>, now: Date, intervalS = COST_BLOCK_INTERVAL_S): Promise<CostBlockOutcome> {
  const out: CostBlockOutcome = { written: 0, unchanged: 0, failed: 0, skipped: 0 };
  const pulls = await ctx.db.query<{ project_id: string; number: number; runner_id: string | null; capabilities: unknown; text: string | null }>(sql`
    select p.project_id, p.number, pr.runner_id, r.capabilities, b.text
      from codehost_pulls p join projects pr on pr.id = p.project_id
      left join runners r on r.id = pr.runner_id and r.revoked_at is null
      left join pull_cost_blocks b on b.project_id = p.project_id and b.number = p.number
     where p.state = 'open' and p.branch is not null
       and (b.attempted_at is null or b.attempted_at <= ${now}::timestamptz - make_interval(secs => ${intervalS}))
     order by b.attempted_at nulls first limit ${MAX_PER_TICK}`);
  for (const p of pulls) {
    try {
      const caps = Array.isArray(p.capabilities) ? p.capabilities : [];
      if (!p.runner_id || !caps.includes(PR_DESCRIBE_CAPABILITY)) {
        out.skipped++;
        continue;
      }
      const record = await pullRecord(ctx.db, p.project_id, p.number, now);
      if (!record || record.totals.requests === 0) {
        out.skipped++;
        continue;
      }
      const t = record.totals;
      const text = costBlockText({
        costUsd: t.costUsd ?? 0,
        sessions: record.sessions.length,
        models: record.sessions.flatMap((s) => (Array.isArray(s.models) ? (s.models as string[]) : [])),
        inputTokens: t.inputTokens ?? 0,
        outputTokens: t.outputTokens ?? 0,
        cacheWriteTokens: (t.cacheWrite5mTokens ?? 0) + (t.cacheWrite1hTokens ?? 0),
        cacheReadTokens: t.cacheReadTokens ?? 0,
      });
      if (text === p.text) {
        out.unchanged++;
        continue;
      }
      // The claim: only the replica whose upsert moves attempted_at forward sends the command.
      const claimed = await ctx.db.query(sql`
        insert into pull_cost_blocks (project_id, number, attempted_at) values (${p.project_id}, ${p.number}, ${now})
        on conflict (project_id, number) do update set attempted_at = excluded.attempted_at
          where pull_cost_blocks.attempted_at <= ${now}::timestamptz - make_interval(secs => ${intervalS})
        returning number`);
      if (claimed.length === 0) {
        out.skipped++;
        continue;
      }
      const r = await ctx.hub.command(p.runner_id, 'pr.describe', { projectId: p.project_id, number: p.number, block: text }, null);
      if (r.status === 'done') {
        await ctx.db.query(sql`update pull_cost_blocks set text = ${text}, written_at = ${now}, error = null where project_id = ${p.project_id} and number = ${p.number}`);
        out.written++;
      } else {
        const error = r.status === 'failed' ? r.error : { code: r.status, message: `the runner's answer: ${r.status}` };
        await ctx.db.query(sql`update pull_cost_blocks set error = ${sql.json(error)} where project_id = ${p.project_id} and number = ${p.number}`);
        ctx.log.warn('could not write the cost block of a pull request', { projectId: p.project_id, number: p.number, code: error.code });
        out.failed++;
      }
    } catch (err) {
      out.failed++;
      ctx.log.error('cost block of a pull request', { projectId: p.project_id, number: p.number, error: err instanceof Error ? err.message.slice(0, 300) : String(err) });
    }
  }
  return out;
}

export const costBlockJob = (ctx: Pick<AppContext, 'db' | 'hub' | 'log'>): JobDefinition => ({
  name: 'codehost.cost_blocks',
  description: "the cost block in open pull requests' descriptions (docs/cost.md)",
  cron: '* * * * *',
  run: async (j) => ({ ...(await updateCostBlocks(ctx, j.scheduledFor)) }),
});
