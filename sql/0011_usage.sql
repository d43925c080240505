-- 0011: agent sessions, LLM requests, versioned model prices, budget notices (docs/cost.md, "Server").

-- Prices get versions: a row per (model, effective_from). An edit adds a version effective from its
-- time, so the cost stored for an earlier request never changes. Cache writes split by TTL (the old
-- single column is the 5-minute write; the 1-hour write is twice the input price, as Anthropic bills
-- it, where there was a cache-write price at all); optional prices above 200k tokens and a fast-mode
-- multiplier. Rows already here were in force from the start.
alter table model_prices drop constraint model_prices_pkey;
alter table model_prices rename column cache_write_usd_per_mtok to cache_write_5m_usd_per_mtok;
alter table model_prices
  alter column input_usd_per_mtok type numeric(16, 6),
  alter column output_usd_per_mtok type numeric(16, 6),
  alter column cache_read_usd_per_mtok type numeric(16, 6),
  alter column cache_write_5m_usd_per_mtok type numeric(16, 6),
  add column cache_write_1h_usd_per_mtok numeric(16, 6) not null default 0 check (cache_write_1h_usd_per_mtok >= 0),
  add column above_200k jsonb,            -- {input?, output?, cacheWrite5m?, cacheWrite1h?, cacheRead?} USD per million
  add column long_context jsonb,          -- {above, input, output, cacheWrite5m, cacheWrite1h, cacheRead}: a request whose whole
                                          -- input (cached included) is over `above` tokens is priced at these instead
  add column fast_multiplier numeric(8, 4) check (fast_multiplier is null or fast_multiplier > 0),
  add column effective_from timestamptz not null default now(),
  add column created_by text;
update model_prices set effective_from = timestamptz '1970-01-01 00:00:00+00',
       cache_write_1h_usd_per_mtok = case when cache_write_5m_usd_per_mtok > 0 then input_usd_per_mtok * 2 else 0 end;
alter table model_prices add primary key (model, effective_from);

-- One agent session as runners report it (session.meta); `sessions` is sign-in's table.
create table agent_sessions (
  id text primary key,                                   -- ours, for /api/sessions/:id
  runner_id text not null references runners (id),
  runtime text not null check (runtime in ('claude', 'codex')),
  session_id text not null,                              -- the runtime's own session id
  project_id text references projects (id) on delete set null,
  slot text,
  issue text,
  run_id text,
  branch text,
  models jsonb not null default '[]',
  first_at timestamptz not null,
  last_at timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (runner_id, runtime, session_id)
);
create index agent_sessions_project_first on agent_sessions (project_id, first_at desc);
create index agent_sessions_first on agent_sessions (first_at desc, id desc);

-- One model request. Merge key (docs/cost.md): the runner, the runtime and the request id, so a
-- transcript line and the OTel record of the same request are one row; without a request id, the
-- source's own dedup key. Token counts are the transcript's when it was seen; duration and the
-- runtime's reported cost come from the OTel record. cost_usd is null when the model has no price.
create table llm_requests (
  id bigserial primary key,
  runner_id text not null references runners (id),
  runtime text not null check (runtime in ('claude', 'codex')),
  merge_key text not null,
  transcript_key text,
  otlp_key text,
  session_id text,                                       -- the runtime's session id
  request_id text,
  message_id text,
  project_id text references projects (id) on delete set null,
  slot text,                                             -- svc.* attributes of the request itself
  issue text,
  run_id text,
  model text not null,
  at timestamptz not null,
  input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cache_write_5m_tokens bigint not null default 0,
  cache_write_1h_tokens bigint not null default 0,
  cache_read_tokens bigint not null default 0,
  reasoning_tokens bigint,
  speed text,
  sidechain boolean not null default false,
  duration_ms bigint,
  reported_cost_usd numeric(18, 10),
  cost_usd numeric(18, 10),                              -- null: no price for the model at that time
  price_model text,                                      -- the price row used (model, effective_from)
  price_effective_from timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (runner_id, runtime, merge_key)
);
create index llm_requests_project_at on llm_requests (project_id, at);
create index llm_requests_at on llm_requests (at);
create index llm_requests_session on llm_requests (runner_id, runtime, session_id);
create index llm_requests_unpriced on llm_requests (model) where cost_usd is null;

-- Budget notices: one per project, month (UTC) and threshold (80, 100 %).
create table budget_notices (
  project_id text not null references projects (id) on delete cascade,
  month date not null,
  threshold integer not null check (threshold in (80, 100)),
  budget_usd numeric(12, 2) not null,
  cost_usd numeric(18, 10) not null,
  notified_at timestamptz not null default now(),
  primary key (project_id, month, threshold)
);

-- Notifications may concern one project: its admins (and instance admins) see them.
alter table notifications add column project_id text references projects (id) on delete cascade;
create index notifications_project on notifications (project_id, id) where project_id is not null;

-- Activity feed by project, newest first.
create index activity_items_project on activity_items (project_id, id desc);

-- Pull request attribution: a session's branch → the pull request a pr.opened event names.
create index runner_events_pr_branch on runner_events ((payload ->> 'project'), (payload ->> 'branch')) where kind = 'pr.opened';
