// Data retention (spec: Operations → Retention). Deletes in batches so a large backlog never holds
// long locks; each job is idempotent, so a run taken over after a crash simply continues.
import { pruneEvents } from '../event-list/queries.ts';
import { sql } from '../lib/db/index.ts';
import type { Config } from '../lib/config.ts';
import type { Db } from '../lib/db/index.ts';
import type { JobDefinition } from './scheduler.ts';

const BATCH = 5000;

/** Tables the retention jobs may clean: a closed list, so no table name ever comes from input. */
export const RETAINED_TABLES = ['activity_items', 'outbound_deliveries', 'inbound_deliveries', 'codehost_deliveries', 'webhook_outbox'] as const;
type RetainedTable = (typeof RETAINED_TABLES)[number];

export async function deleteOlderThan(db: Db, table: RetainedTable, days: number, signal?: AbortSignal): Promise<number> {
  if (!RETAINED_TABLES.includes(table)) throw new Error(`not a retained table: ${table}`);
  const name = sql.raw(table);
  let total = 0;
  for (;;) {
    signal?.throwIfAborted();
    const [{ n }] = await db.query<{ n: number }>(sql`
      with doomed as (
        select ctid from ${name} where created_at < now() - make_interval(days => ${days}) limit ${BATCH}
      ), gone as (
        delete from ${name} where ctid in (select ctid from doomed) returning 1
      )
      select count(*)::int as n from gone`);
    total += n;
    if (n < BATCH) return total;
  }
}

export function retentionJobs(config: Config): JobDefinition[] {
  return [
    {
      name: 'retention.activity',
      description: `Delete activity feed items older than ${config.ACTIVITY_RETENTION_DAYS} days (ACTIVITY_RETENTION_DAYS)`,
      cron: config.ACTIVITY_RETENTION_CRON,
      run: async ({ db, signal }) => ({ deleted: await deleteOlderThan(db, 'activity_items', config.ACTIVITY_RETENTION_DAYS, signal) }),
    },
    {
      name: 'retention.events',
      description: `Delete event list entries (GET /api/events) older than ${config.EVENTS_RETENTION_DAYS} days (EVENTS_RETENTION_DAYS); older cursors then answer 410`,
      cron: config.ACTIVITY_RETENTION_CRON,
      run: async ({ db, signal }) => ({ deleted: await pruneEvents(db, config.EVENTS_RETENTION_DAYS, signal) }),
    },
    {
      name: 'retention.deliveries',
      description: 'Delete outbound webhook and inbound trigger deliveries older than 30 days, and trigger delivery ids older than 24 hours',
      cron: config.DELIVERY_RETENTION_CRON,
      run: async ({ db, signal }) => {
        // Events no worker ever dispatched (WEBHOOKS_WORKER_ENABLED=false everywhere) age out with the deliveries.
        await deleteOlderThan(db, 'webhook_outbox', 30, signal);
        return {
          outbound: await deleteOlderThan(db, 'outbound_deliveries', 30, signal),
          inbound: await deleteOlderThan(db, 'inbound_deliveries', 30, signal),
          // Replay memory of inbound triggers lasts 24 h; older ids are taken over on reuse anyway.
          deliveryIds: (await db.query<{ n: number }>(sql`with gone as (delete from trigger_delivery_ids where seen_at < now() - interval '1 day' returning 1) select count(*)::int as n from gone`))[0].n,
        };
      },
    },
    {
      name: 'retention.housekeeping',
      description: 'Forget state nobody needs any more: sessions ended, password links used and action links expired over a day ago, old failed sign-ins, issues closed over a day ago (out of the queue), job runs and runner commands older than 30 days',
      cron: config.HOUSEKEEPING_CRON,
      async run({ db }) {
        const count = async (q: ReturnType<typeof sql>) => (await db.query<{ n: number }>(q))[0].n;
        return {
          sessions: await count(sql`with gone as (delete from sessions where coalesce(revoked_at, expires_at) < now() - interval '1 day' returning 1) select count(*)::int as n from gone`),
          passwordLinks: await count(sql`with gone as (delete from password_links where coalesce(used_at, expires_at) < now() - interval '1 day' returning 1) select count(*)::int as n from gone`),
          // A used action link's row (functions/act/) matters only until it expires: after that every link of it is 410 anyway.
          actionLinks: await count(sql`with gone as (delete from action_links where expires_at < now() - interval '1 day' returning 1) select count(*)::int as n from gone`),
          signInFailures: await count(sql`with gone as (delete from auth_failures where at < now() - interval '1 day' returning 1) select count(*)::int as n from gone`),
          // Out of the queue's answer a day after they closed (codehost/queue.ts), also where no runner polls the open set.
          closedIssues: await count(sql`with gone as (delete from codehost_issues where state = 'closed' and updated_at < now() - interval '1 day' returning 1) select count(*)::int as n from gone`),
          jobRuns: await count(sql`with gone as (delete from job_runs where status <> 'running' and scheduled_for < now() - interval '30 days' returning 1) select count(*)::int as n from gone`),
          runnerCommands: await count(sql`with gone as (delete from runner_commands where created_at < now() - interval '30 days' returning 1) select count(*)::int as n from gone`),
        };
      },
    },
    {
      name: 'retention.codehost_deliveries',
      description: 'Delete code-host app webhook deliveries older than 14 days',
      cron: config.CODEHOST_DELIVERY_RETENTION_CRON,
      run: async ({ db, signal }) => ({ deleted: await deleteOlderThan(db, 'codehost_deliveries', 14, signal) }),
    },
  ];
}
