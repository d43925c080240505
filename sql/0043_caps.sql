-- 0043: spend caps on the unit of work (issue #40 part 1; functions/cost/caps.ts, docs/cost.md "Caps").
-- A project's caps (null = none): per issue (all sessions of the issue, earlier attempts included) and
-- per skill run; a trigger or schedule may give the runs it starts their own cap (stored with the run's
-- id in unit_caps.own_cap_usd when it is started: the run's row comes later, from the runner's events).
alter table projects add column cap_issue_usd numeric(14, 6), add column cap_run_usd numeric(14, 6);
alter table triggers add column cap_usd numeric(14, 6);
alter table project_schedules add column cap_usd numeric(14, 6);
-- One row per unit that reached 80 % of its cap: the row is the claim (exactly once across replicas)
-- of the warning (warned_at), of the pause (state 'paused_cap', set by an update from 'active') and of
-- a decision (raised: extra_usd grows and state goes back to 'active'; stopped: state 'stopped').
create table unit_caps (
  project_id text not null references projects (id) on delete cascade,
  unit text not null check (unit in ('issue', 'run')),
  key text not null,                                   -- the issue number or the run id
  runner_id text,
  slot text,                                           -- the slot the issue was in when it was paused
  own_cap_usd numeric(14, 6),                          -- a run's own cap (its trigger's or schedule's capUSD)
  extra_usd numeric(14, 6) not null default 0,         -- what "Raise the cap" added
  state text not null default 'active' check (state in ('active', 'paused_cap', 'stopped')),
  warned_at timestamptz,
  paused_at timestamptz,
  paused_cost_usd numeric(14, 6),
  paused_cap_usd numeric(14, 6),
  pauses integer not null default 0,
  restopped_at timestamptz,                            -- the last stop sent again to a held issue's worker that still spent
  updated_at timestamptz not null default now(),
  primary key (project_id, unit, key)
);
-- The cap check sums a unit's requests: by issue and by run within the project.
create index llm_requests_project_issue on llm_requests (project_id, issue) where issue is not null;
create index llm_requests_project_run on llm_requests (project_id, run_id) where run_id is not null;
create index agent_sessions_project_issue on agent_sessions (project_id, issue) where issue is not null;
create index agent_sessions_project_run on agent_sessions (project_id, run_id) where run_id is not null;
