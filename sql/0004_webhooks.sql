-- 0004: outbound webhooks (spec: Outbound webhook, Outbound delivery record, circuit and delivery
-- states, Events, Limits, Outbound address guard). See functions/webhooks/ and docs/webhooks.md.

create table webhooks (
  id text primary key,
  url text not null,
  events jsonb not null,                        -- chosen catalogue names, a JSON array
  projects jsonb not null default '[]',         -- project ids; [] means all projects
  secret_ciphertext text not null,              -- AES-256-GCM under APP_ENCRYPTION_KEY
  circuit_state text not null default 'closed' check (circuit_state in ('closed', 'open', 'half-open')),
  consecutive_failures integer not null default 0,
  circuit_opened_at timestamptz,                -- when it last opened: the 15-minute pause counts from here
  trial_delivery_id text,                       -- half-open: the one delivery being tried
  created_by text references users (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The address guard's allowlist: host names and CIDRs, one row for the whole instance.
create table webhook_allowlist (
  id integer primary key default 1 check (id = 1),
  entries jsonb not null default '[]',
  updated_by text references users (id),
  updated_at timestamptz not null default now()
);
insert into webhook_allowlist (id) values (1);

-- Catalogue events waiting to be turned into deliveries (one per matching webhook). The row's id is
-- the envelope's stable id and `body` the envelope exactly as it is sent; the dispatcher deletes the
-- row when it makes the deliveries.
create table webhook_outbox (
  id text primary key,
  type text not null,
  project_id text,
  body text not null,
  created_at timestamptz not null default now()
);
create index webhook_outbox_created_at on webhook_outbox (created_at);

-- outbound_deliveries exists since 0001 (the retention job cleans it); here it gets the rest.
alter table outbound_deliveries
  add column event_id text,
  add column body text,
  add column attempts_allowed integer not null default 8,
  add column last_error text,
  add column lease_owner text,
  add column lease_expires_at timestamptz,
  add column delivered_at timestamptz,
  add column updated_at timestamptz not null default now(),
  add constraint outbound_deliveries_status check (status in ('pending', 'delivered', 'failed'));
-- One delivery per event and webhook: a re-sent or re-emitted event never becomes a second delivery.
create unique index outbound_deliveries_event on outbound_deliveries (webhook_id, event_id);
create index outbound_deliveries_due on outbound_deliveries (next_attempt_at) where status = 'pending';
create index outbound_deliveries_log on outbound_deliveries (webhook_id, created_at desc);

-- Every attempt: who made it, when, and what came back. A row with no outcome is in flight (or its
-- process died; the next claim after the lease marks it `lease_expired`).
create table outbound_attempts (
  delivery_id text not null references outbound_deliveries (id) on delete cascade,
  attempt integer not null,
  owner text not null,
  started_at timestamptz not null,
  finished_at timestamptz,
  outcome text check (outcome in ('success', 'failure')),
  error text,
  detail text,
  response_code integer,
  response_body text,
  address text,
  duration_ms integer,
  trial boolean not null default false,
  primary key (delivery_id, attempt)
);
