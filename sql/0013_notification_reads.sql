-- 0013: notifications, read state per user and chat channels (spec: Notifications; Stored secrets).
-- See functions/notifications/.

-- One row per notification a user has marked read; no row means unread for that user.
create table notification_reads (
  notification_id bigint not null references notifications (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  read_at timestamptz not null default now(),
  primary key (user_id, notification_id)
);
create index notification_reads_notification on notification_reads (notification_id);

-- A writer may give its notification a stable key (e.g. a runner event id): a re-sent event makes
-- no second notification and no second chat push.
alter table notifications add column dedupe_key text;
create unique index notifications_dedupe_key on notifications (dedupe_key) where dedupe_key is not null;

-- Chat channels are rows of `webhooks` with another kind, so a push is an ordinary outbound delivery:
-- the same address guard, lease, retries and circuit (functions/webhooks/worker.ts). Their `events`
-- stay '[]', so no catalogue event is ever dispatched to them.
--   slack     secret_ciphertext = the incoming-webhook URL (it is the credential); `url` shows it
--             without its path
--   telegram  secret_ciphertext = the bot token; `url` = the Bot API base URL; `chat_id` the chat
alter table webhooks
  add column kind text not null default 'webhook' check (kind in ('webhook', 'slack', 'telegram')),
  add column chat_id text,
  add column name text;
