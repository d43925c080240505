// The one way to make a notification (spec: Notifications). Every writer — runner.offline
// (runners/presence.ts), budget.threshold (cost/budget.ts), audit.verification_failed
// (audit/checkpoint.ts), pane.quota_hit and person.needed (capture.ts here) — calls notify(): it
// stores the row (shown by GET /api/notifications, read state per user) and makes one push per chat
// channel, an ordinary outbound delivery the webhook worker attempts (webhooks/chat.ts). Run it inside the
// writer's transaction so the notification and its pushes exist together or not at all.
import { randomUUID } from 'node:crypto';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { wake } from '../webhooks/webhooks.ts';
import { publish } from '../live/publish.ts';
import type { Audience } from '../live/publish.ts';
import { notificationText } from '../../protocol/notification-text.ts';
import { chatBody } from '../webhooks/chat.ts';
import { actionLinkConfig, notificationLinks } from '../act/tokens.ts';
import type { NotificationAction } from '../act/tokens.ts';
import type { ChatKind } from '../webhooks/chat.ts';

/**
 * Kinds about a whole runner (no project): instance admins and the admins of the projects on that
 * runner see them (queries.ts visibleTo, and the live notice's audience here).
 */
export const RUNNER_KINDS: readonly string[] = ['runner.offline'];

/** Who is told of a notification: a project's admins, a runner's project admins, else instance admins. */
function audience(n: NotifyInput): Audience {
  if (n.projectId) return { projectId: n.projectId, minRole: 'admin' };
  if (n.runnerId && RUNNER_KINDS.includes(n.kind)) return { runnerId: n.runnerId, minRole: 'admin' };
  return { admins: true };
}

export interface NotifyInput {
  kind: string;
  /** The project it concerns: that project's admins see it too. Without one, instance admins only (RUNNER_KINDS: also the runner's project admins). */
  projectId?: string | null;
  runnerId?: string | null;
  data: Record<string, unknown>;
  /** A stable key (e.g. a runner event's id): the same key never makes a second notification. */
  dedupeKey?: string;
  /** The decisions it asks for (functions/act/): stored in its data as `actions`; each reader gets its own links. */
  actions?: NotificationAction[];
}

/** Store one notification and queue its chat pushes. Returns its id, or null when the key was already used. */
export async function notify(q: Queryable, n: NotifyInput): Promise<string | null> {
  const data = n.actions?.length ? { ...n.data, actions: n.actions } : n.data;
  const [row] = await q.query<{ id: string | number; created_at: Date }>(sql`
    insert into notifications (kind, project_id, runner_id, data, dedupe_key)
    values (${n.kind}, ${n.projectId ?? null}, ${n.runnerId ?? null}, ${sql.json(data)}, ${n.dedupeKey ?? null})
    on conflict (dedupe_key) where dedupe_key is not null do nothing
    returning id, created_at`);
  if (!row) return null;
  const id = String(row.id);
  // The bell (live notice): who may read it is who GET /api/notifications shows it to.
  await publish(q, { type: 'notification', id, kind: n.kind, ...(n.projectId ? { projectId: n.projectId } : {}) }, audience(n));
  const channels = await q.query<{ id: string; kind: ChatKind; chat_id: string | null }>(sql`
    select id, kind, chat_id from webhooks where kind in ('slack', 'telegram') order by created_at`);
  if (channels.length) {
    const [p] = n.projectId ? await q.query<{ name: string }>(sql`select name from projects where id = ${n.projectId}`) : [];
    const text = notificationText({ kind: n.kind, projectName: p?.name ?? null, data: n.data });
    // A channel is not one user: its buttons carry the channel's links (no user), which act as whoever
    // opens them signed in, with their role then (docs/notifications.md, "Action links").
    const { key, base } = actionLinkConfig();
    const buttons = notificationLinks(key, base, null, { id, createdAt: row.created_at, actions: n.actions ?? [] }).map((l) => ({ text: l.label, url: l.url }));
    const rows = channels.map((c) => ({ id: randomUUID(), webhook_id: c.id, body: chatBody(c.kind, text, c.chat_id, buttons) }));
    await q.query(sql`
      insert into outbound_deliveries (id, webhook_id, event_id, event_type, body, status, next_attempt_at)
      select x.id, x.webhook_id, ${`notification:${id}`}, ${n.kind}, x.body, 'pending', now()
        from jsonb_to_recordset(${sql.json(rows)}) as x(id text, webhook_id text, body text)
      on conflict (webhook_id, event_id) do nothing`);
    await wake(q);
  }
  return id;
}
