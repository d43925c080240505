// The statements of action links (functions/act/act.ts): a decision is claimed by inserting its row,
// released when performing it failed, and its outcome recorded when it succeeded.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

/** Who took the decision and when; null when it is not taken. */
export async function decisionUse(q: Queryable, id: string): Promise<{ by: string | null; used_at: Date } | null> {
  const [row] = await q.query<{ by: string | null; used_at: Date }>(sql`
    select u.name as by, a.used_at from action_links a left join users u on u.id = a.used_by where a.id = ${id}`);
  return row ?? null;
}

/** The claim: when it was taken now, or null when someone else took it first. */
export async function claimDecision(
  q: Queryable,
  c: { id: string; tokenHash: string; kind: string; target: Record<string, unknown>; linkUser: string | null; usedBy: string; notification: string; expiresAt: Date },
): Promise<Date | null> {
  const [row] = await q.query<{ used_at: Date }>(sql`
    insert into action_links (id, token_hash, kind, target, link_user_id, used_by, notification_id, expires_at)
    values (${c.id}, ${c.tokenHash}, ${c.kind}, ${sql.json(c.target)}, ${c.linkUser}, ${c.usedBy}, ${c.notification}::bigint, ${c.expiresAt})
    on conflict (id) do nothing returning used_at`);
  return row?.used_at ?? null;
}

export async function releaseDecision(q: Queryable, id: string): Promise<void> {
  await q.query(sql`delete from action_links where id = ${id} and outcome is null`);
}

export async function recordOutcome(q: Queryable, id: string, outcome: unknown): Promise<void> {
  await q.query(sql`update action_links set outcome = ${sql.json(outcome)} where id = ${id}`);
}

export async function projectName(q: Queryable, id: string): Promise<string | null> {
  const [row] = await q.query<{ name: string }>(sql`select name from projects where id = ${id}`);
  return row?.name ?? null;
}
