-- 0030: runner pools (issue #37; docs/runner.md "Runner pools"; functions/runs/pool.ts).
--
-- Runner tags and capacity. Tags are set by admins (PATCH /api/runners/:runnerId) or at pairing
-- (`svc-runner pair --tags a,b`); capacity is what the runner last reported in its `capacity` frame
-- (skills.maxConcurrentRuns and the runs it holds): null = not reported (an older runner).
alter table runners add column tags jsonb not null default '[]';
alter table runners add column max_concurrent_runs integer;
alter table runners add column running_runs integer;
alter table runners add column capacity_reported_at timestamptz;

-- A project's pool: runners besides its primary one (projects.runner_id), each with its own clone of the
-- project's repository. Only skill runs of a `pool` target go there; the orchestrator, slots and terminal
-- stay on the primary runner. The root is checked on the runner like the primary's (root_state).
create table project_runners (
  project_id text not null references projects (id) on delete cascade,
  runner_id text not null references runners (id) on delete cascade,
  root_path text not null,
  root_state text not null default 'unchecked' check (root_state in ('ok', 'unchecked', 'failed')),
  root_message text,
  created_at timestamptz not null default now(),
  primary key (project_id, runner_id)
);
create index project_runners_runner on project_runners (runner_id);

-- Where a trigger's or a schedule's runs go: `primary` (as before) or `pool` with the tags a runner must
-- all have, how long a run may wait for a free place, and whether a run lost with its runner is tried
-- once more on another pool runner.
alter table triggers add column target text not null default 'primary' check (target in ('primary', 'pool'));
alter table triggers add column target_tags jsonb not null default '[]';
alter table triggers add column queue_timeout_minutes numeric not null default 30;
alter table triggers add column retry_on_runner_loss boolean not null default false;
alter table project_schedules add column target text not null default 'primary' check (target in ('primary', 'pool'));
alter table project_schedules add column target_tags jsonb not null default '[]';
alter table project_schedules add column queue_timeout_minutes numeric not null default 30;
alter table project_schedules add column retry_on_runner_loss boolean not null default false;

-- A pool run exists on the server before any runner holds it: its skill_runs row is `queued` with no
-- runner until it is dispatched. `reason` is the server's reason for a run it ended itself
-- (no_runner_available, runner_lost, budget_exceeded, creator_not_authorized); `retry_of` names the run
-- lost with its runner that this one tries again.
alter table skill_runs alter column runner_id drop not null;
alter table skill_runs add column reason text;
alter table skill_runs add column retry_of text;

-- The pool queue: one row per pool run, in arrival order per project (seq). The dispatcher claims waiting
-- rows FOR UPDATE SKIP LOCKED, so each is dispatched once across replicas; `dispatching` holds a lease
-- while the skill.run command is out (a process that dies then leaves it to expire: the run is marked
-- failed `interrupted`, never sent twice).
create table pool_runs (
  run_id text primary key references skill_runs (id) on delete cascade,
  seq bigint generated always as identity,
  project_id text not null references projects (id) on delete cascade,
  source text not null check (source in ('trigger', 'schedule')),
  source_id text not null,
  source_name text not null,
  delivery_id text,                             -- inbound_deliveries.id of the trigger call
  created_by text not null,                     -- the trigger's or schedule's creator: runs start on their behalf
  skill text not null,
  args jsonb not null default '[]',
  profile text,
  model text,
  output text not null check (output in ('report', 'pull_request')),
  target_tags jsonb not null default '[]',
  queue_deadline timestamptz not null,          -- queued past this → failed no_runner_available
  retry_on_loss boolean not null default false,
  retry_of text,
  status text not null default 'queued' check (status in ('queued', 'dispatching', 'dispatched', 'ended')),
  waiting_reason text,                          -- why it waits, in words ("3 runners busy")
  runner_id text references runners (id) on delete set null,
  lease_owner text,
  lease_expires_at timestamptz,
  dispatched_at timestamptz,
  lost_since timestamptz,                       -- its runner went offline at (grace period running)
  created_at timestamptz not null default now()
);
create index pool_runs_waiting on pool_runs (project_id, seq) where status = 'queued';
create index pool_runs_dispatched on pool_runs (runner_id) where status in ('dispatching', 'dispatched');
create index pool_runs_retry_of on pool_runs (retry_of) where retry_of is not null;
