-- 0003: runners, pairing, the event ingest, commands across replicas, notifications.

create table runners (
  id text primary key,
  name text not null,
  token_hash text unique,               -- SHA-256 of the current token; null once revoked
  hostname text not null default '',
  version text not null default '',
  target text not null default '',
  capabilities jsonb not null default '[]',
  paired_at timestamptz,
  revoked_at timestamptz,
  connected_instance text,              -- the API process holding its socket, null when none
  last_seen_at timestamptz,             -- any frame or heartbeat; online = connected and seen within 60 s
  offline_notified_at timestamptz,      -- runner.offline sent for the outage that began before this
  created_at timestamptz not null default now()
);

-- One-time pairing codes XXXX-XXXX: only a hash, a short expiry, single use. runner_id is set when
-- the code re-pairs an existing runner (the old token stops working, its socket closes with 4409).
create table pairing_codes (
  code_hash text primary key,
  runner_id text not null references runners (id),
  created_by text references users (id),
  expires_at timestamptz not null,
  used_at timestamptz
);

-- Events from runners, stored idempotently by (runner, event id): at-least-once delivery, once stored.
create table runner_events (
  runner_id text not null references runners (id),
  event_id text not null,
  source text not null,
  kind text not null,
  ts timestamptz not null,
  payload jsonb not null,
  received_at timestamptz not null default now(),
  primary key (runner_id, event_id)
);
create index runner_events_kind on runner_events (kind, ts);

-- Commands to runners: the row carries arguments and answer between API processes (LISTEN/NOTIFY
-- only says "look at row X"), so a command reaches a runner whose socket another replica holds.
create table runner_commands (
  request_id text primary key,
  runner_id text not null references runners (id),
  name text not null,
  args jsonb not null,
  requested_by text references users (id),
  status text not null default 'pending' check (status in ('pending', 'sent', 'done', 'failed', 'timeout')),
  result jsonb,
  error jsonb,
  created_at timestamptz not null default now(),
  finished_at timestamptz
);
create index runner_commands_created_at on runner_commands (created_at);

create table notifications (
  id bigserial primary key,
  kind text not null,
  runner_id text references runners (id),
  data jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index notifications_created_at on notifications (created_at);
