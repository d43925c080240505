// The notifications API's statements (functions/notifications/routes.ts reads as validate → call →
// present): the list with read state per user, marking read, and the chat channels (rows of `webhooks`
// of kind slack or telegram; their pushes and circuit stay with webhooks/).
import type { User } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { WebhookRow } from '../webhooks/webhooks.ts';
import type { ChatKind } from '../webhooks/chat.ts';
import { RUNNER_KINDS } from './notify.ts';

type Viewer = Pick<User, 'id' | 'instanceAdmin'>;

/** The notifications `user` may see (alias `n`): a project's to its admins; a runner's (RUNNER_KINDS) to the admins of the projects on it. */
export function visibleTo(user: Viewer) {
  return user.instanceAdmin
    ? sql`true`
    : sql`(n.project_id in (select m.project_id from project_members m where m.user_id = ${user.id} and m.role = 'admin')
        or (n.project_id is null and n.kind in (select jsonb_array_elements_text(${sql.json(RUNNER_KINDS)})) and n.runner_id in (
          select p.runner_id from projects p join project_members m on m.project_id = p.id where m.user_id = ${user.id} and m.role = 'admin')))`;
}

export async function unreadCount(q: Queryable, user: Viewer): Promise<number> {
  const [r] = await q.query<{ n: number }>(sql`
    select count(*)::int as n from notifications n
     where ${visibleTo(user)} and not exists (select 1 from notification_reads r where r.notification_id = n.id and r.user_id = ${user.id})`);
  return Number(r.n);
}

export type NotificationRow = { id: string | number; kind: string; runner_id: string | null; project_id: string | null; data: Record<string, unknown>; created_at: Date; read: boolean };

export const listNotifications = (q: Queryable, user: Viewer, limit: number) =>
  q.query<NotificationRow>(sql`
    select n.id, n.kind, n.runner_id, n.project_id, n.data, n.created_at,
           exists (select 1 from notification_reads r where r.notification_id = n.id and r.user_id = ${user.id}) as read
      from notifications n where ${visibleTo(user)} order by n.id desc limit ${limit}`);

/** Marks read for `user` the notifications they see among `ids` (or all of them); how many changed. */
export async function markRead(q: Queryable, user: Viewer, ids: string[] | 'all'): Promise<number> {
  const which = ids === 'all' ? sql`true` : sql`n.id in (select x::bigint from jsonb_array_elements_text(${sql.json(ids)}) as t(x))`;
  const marked = await q.query(sql`
    insert into notification_reads (notification_id, user_id)
    select n.id, ${user.id} from notifications n where ${visibleTo(user)} and ${which}
    on conflict do nothing
    returning notification_id`);
  return marked.length;
}

// Chat channels ------------------------------------------------------------------------------------

export type ChannelRow = WebhookRow & { kind: ChatKind; chat_id: string | null; name: string | null };

export const listChannels = (q: Queryable) => q.query<ChannelRow>(sql`select * from webhooks where kind in ('slack', 'telegram') order by created_at, id`);

export async function channelRow(q: Queryable, id: string): Promise<ChannelRow | null> {
  const [row] = await q.query<ChannelRow>(sql`select * from webhooks where id = ${id} and kind in ('slack', 'telegram')`);
  return row ?? null;
}

export async function insertChannel(
  q: Queryable,
  c: { id: string; kind: ChatKind; name: string | null; url: string; chatId: string | null; secretCiphertext: string; createdBy: string },
): Promise<void> {
  await q.query(sql`
    insert into webhooks (id, kind, name, url, chat_id, events, projects, secret_ciphertext, created_by)
    values (${c.id}, ${c.kind}, ${c.name}, ${c.url}, ${c.chatId}, '[]', '[]',
            ${c.secretCiphertext}, ${c.createdBy})`);
}

/** Removes a chat channel and its pending pushes; false when there is no such channel. */
export async function deleteChannel(q: Queryable, id: string): Promise<boolean> {
  const [gone] = await q.query(sql`delete from webhooks where id = ${id} and kind in ('slack', 'telegram') returning 1`);
  if (!gone) return false;
  await q.query(sql`delete from outbound_deliveries where webhook_id = ${id}`);
  return true;
}
