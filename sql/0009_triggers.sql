-- 0009: inbound triggers (spec: Inbound trigger, Inbound delivery record and its states, POST
-- /hooks/<publicId>, Inbound trigger signature and responses, Limits "Trigger …"). See functions/triggers/
-- and docs/triggers.md. Replay memory, the rate bucket and "one live run per trigger" are rows here,
-- not process memory, so every API process behind one address agrees.

create table triggers (
  id text primary key,
  project_id text not null references projects (id) on delete cascade,   -- fixed after creation
  name text not null,
  action text not null check (action in ('skill', 'next_round')),
  skill text,                                   -- skill action only
  args jsonb not null default '[]',             -- templates, may hold {{payload.<path>}}
  profile text,
  model text,
  output text not null default 'report' check (output in ('report', 'pull_request')),
  allowed_paths jsonb not null default '[]',
  value_pattern text not null,
  public_id text not null check (length(public_id) = 24),
  -- Lookups go by SHA-256 of the publicId, so comparing index keys says nothing about real publicIds.
  public_id_hash text not null,
  secret_ciphertext text not null,              -- AES-256-GCM under APP_ENCRYPTION_KEY, AAD bound to the row
  previous_secret_ciphertext text,              -- the secret before the last rotation ...
  previous_secret_expires_at timestamptz,       -- ... which verifies until then (24 h after the rotation)
  enabled boolean not null default true,
  disabled_reason text,                         -- why it was disabled, when it disabled itself
  created_by text not null references users (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index triggers_public_id on triggers (public_id);
create unique index triggers_public_id_hash on triggers (public_id_hash);
create index triggers_project on triggers (project_id, created_at);

-- The delivery log (kept 30 days by retention.deliveries). inbound_deliveries exists since 0001.
--   refused   422: the payload broke a placeholder rule; `reasons` says each; nothing fires
--   accepted  202: recorded, waiting for a process to fire it
--   firing    a process holds it (lease) and is sending the command
--   fired     the runner accepted the command; `run_id` for a skill run
--   skipped   `reason` previous_still_running | budget_exceeded; no run started
--   failed    `reason` creator_not_authorized | runner_offline | command_refused | command_timeout |
--             interrupted (the process firing it died: never sent twice); `detail` has the runner's message
delete from inbound_deliveries;
alter table inbound_deliveries
  add constraint inbound_deliveries_trigger foreign key (trigger_id) references triggers (id) on delete cascade,
  add column reasons jsonb not null default '[]',
  add column args jsonb,                        -- the rendered args (skill action)
  add column run_id text,
  add column detail text,
  add column lease_owner text,
  add column lease_expires_at timestamptz,
  add column fired_at timestamptz,
  add column updated_at timestamptz not null default now(),
  add constraint inbound_deliveries_status check (status in ('refused', 'accepted', 'firing', 'fired', 'skipped', 'failed'));
create index inbound_deliveries_log on inbound_deliveries (trigger_id, created_at desc, id desc);
create index inbound_deliveries_open on inbound_deliveries (trigger_id, status) where status in ('accepted', 'firing', 'fired');

-- Replay memory: a delivery id is used up for 24 h per trigger (refused payloads included). A row older
-- than that is taken over by the next use of the id, and cleaned by retention.deliveries.
create table trigger_delivery_ids (
  trigger_id text not null references triggers (id) on delete cascade,
  delivery_id text not null,
  seen_at timestamptz not null,
  primary key (trigger_id, delivery_id)
);
create index trigger_delivery_ids_seen on trigger_delivery_ids (seen_at);

-- The token bucket per trigger: `tokens` as of `updated_at`, refilled continuously up to the capacity.
create table trigger_rate (
  trigger_id text primary key references triggers (id) on delete cascade,
  tokens double precision not null,
  updated_at timestamptz not null
);
