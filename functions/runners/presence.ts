// Runner presence and the `runner.offline` notification (spec: Health checks, Notifications):
// online = a replica holds its socket and heard from it within 60 s; admins are told once per outage
// after more than 5 minutes.
import type { JobDefinition } from '../jobs/scheduler.ts';
import { sql } from '../lib/db/index.ts';
import { recordActivity } from '../activity/record.ts';
import { notify } from '../notifications/notify.ts';

export const ONLINE_WITHIN_SECONDS = 60;
export const OFFLINE_NOTIFY_MINUTES = 5;

export const onlineSql = sql`(r.connected_instance is not null and r.last_seen_at > now() - make_interval(secs => ${ONLINE_WITHIN_SECONDS}))`;

/** What an admin can do about an offline runner, shown next to its status. */
export function remedy(r: { paired: boolean; revoked: boolean; lastSeenAt: string | null }): string | null {
  if (r.revoked) return 'The runner was revoked. Use Pair again for a new code, then run `svc-runner pair --server <this URL> --code <code>` on the machine.';
  // No code in the text: a code is shown once, when made, and expires; New pairing code makes another.
  if (!r.paired) return 'Not paired yet: use New pairing code for a code and the commands to run on the agent machine (a code is single use and expires).';
  return (
    'On the agent machine: run `svc-runner doctor` (it names what is wrong) or `svc-runner status` (is it paired, does the server answer?), then start it with ' +
    '`systemctl --user restart svc-runner` (Linux) or `launchctl kickstart -k gui/$UID/com.svc.runner` (macOS), ' +
    'or `svc-runner run` in a terminal to see its log. If it exited with code 78 it was replaced or revoked: pair it again.'
  );
}

export const offlineJob: JobDefinition = {
  name: 'runners.offline',
  description: `Notify admins once per outage when a runner has been gone for more than ${OFFLINE_NOTIFY_MINUTES} minutes`,
  cron: '*/30 * * * * *',
  async run({ db }) {
    const rows = await db.query<{ id: string; name: string; last_seen_at: Date }>(sql`
      with gone as (
        select r.id from runners r
         where r.paired_at is not null and r.revoked_at is null and not ${onlineSql}
           and r.last_seen_at < now() - make_interval(mins => ${OFFLINE_NOTIFY_MINUTES})
           and (r.offline_notified_at is null or r.offline_notified_at < r.last_seen_at)
         for update skip locked
      )
      update runners r set offline_notified_at = now() from gone where r.id = gone.id
      returning r.id, r.name, r.last_seen_at`);
    for (const r of rows) {
      const data = { runnerId: r.id, name: r.name, lastSeenAt: new Date(r.last_seen_at).toISOString() };
      await notify(db, { kind: 'runner.offline', runnerId: r.id, data });
      await recordActivity(db, { kind: 'runner.offline', runnerId: r.id, data, dedupeKey: `runner.offline:${r.id}:${data.lastSeenAt}` });
    }
    return { notified: rows.length };
  },
};
