-- 0001: the foundation's tables. Forward-only: never edit this file once released; add 0002_… instead.

-- Instance settings; the seed upserts defaults and descriptions but never overwrites an edited value.
create table settings (
  key text primary key,
  value jsonb not null,
  description text not null default '',
  updated_at timestamptz not null default now()
);

-- LLM prices in USD per million tokens; seeded only when the table is empty, so edits survive upgrades.
create table model_prices (
  model text primary key,
  input_usd_per_mtok numeric(12, 4) not null check (input_usd_per_mtok >= 0),
  output_usd_per_mtok numeric(12, 4) not null check (output_usd_per_mtok >= 0),
  cache_read_usd_per_mtok numeric(12, 4) not null default 0 check (cache_read_usd_per_mtok >= 0),
  cache_write_usd_per_mtok numeric(12, 4) not null default 0 check (cache_write_usd_per_mtok >= 0),
  updated_at timestamptz not null default now()
);

-- Scheduled job runs: one row per (job, scheduled time) is the lease that makes a cron tick run once
-- across replicas; a running row whose lease expired is taken over by another replica.
create table job_runs (
  job text not null,
  scheduled_for timestamptz(3) not null, -- ms precision: the key round-trips through JS Dates
  status text not null check (status in ('running', 'ok', 'failed')),
  attempt integer not null default 1,
  lease_owner text,
  lease_expires_at timestamptz,
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  result jsonb,
  error text,
  primary key (job, scheduled_for)
);
create index job_runs_expired on job_runs (lease_expires_at) where status = 'running';

-- Tables the retention jobs clean (spec: Retention). Later migrations add their remaining columns.
create table activity_items (
  id bigserial primary key,
  project_id text,
  kind text not null,
  data jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index activity_items_created_at on activity_items (created_at);

create table outbound_deliveries (
  id text primary key,
  webhook_id text not null,
  event_type text not null,
  status text not null default 'pending',
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  response_code integer,
  response_body text,
  created_at timestamptz not null default now()
);
create index outbound_deliveries_created_at on outbound_deliveries (created_at);

create table inbound_deliveries (
  id text primary key,
  trigger_id text not null,
  delivery_id text not null,
  status text not null,
  reason text,
  created_at timestamptz not null default now()
);
create index inbound_deliveries_created_at on inbound_deliveries (created_at);

create table codehost_deliveries (
  id text primary key,
  event text not null,
  action text,
  created_at timestamptz not null default now()
);
create index codehost_deliveries_created_at on codehost_deliveries (created_at);
