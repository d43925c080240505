-- 0036: signed one-time action links (issue #40 part 2; functions/act/, docs/notifications.md).
-- A link is not stored when it is made (it is an HMAC over its own contents); it is stored here when it
-- is USED, so the row is the "used" mark. `id` is the decision the link asks for — SHA-256 of its kind,
-- its target and the notification it came with — so the personal links of every user and the channel
-- link of one notification share it: one decision is taken once (409 for the next link of it).
create table action_links (
  id text primary key,
  token_hash text not null,
  kind text not null,
  target jsonb not null,
  -- who the link was minted for (null: a chat channel's link, usable by whoever is signed in) and who used it
  link_user_id text references users (id) on delete set null,
  used_by text references users (id) on delete set null,
  notification_id bigint,
  expires_at timestamptz not null,
  used_at timestamptz not null default now(),
  outcome jsonb
);
create index action_links_used_at on action_links (used_at);
