-- Project schedules (issue #15 item 3; docs/schedules.md): a skill run on a cron expression in an IANA
-- time zone. Each due time is claimed through the scheduler's job_runs rows (job `schedule:<id>`), so
-- it runs once across API processes; the outcome of the run it started is read from skill_runs.

create table project_schedules (
  id text primary key,
  project_id text not null references projects (id) on delete cascade,   -- fixed after creation
  name text not null,
  cron text not null,
  timezone text not null,
  skill text not null,
  args jsonb not null default '[]',
  profile text,
  model text,
  output text not null default 'report' check (output in ('report', 'pull_request')),
  enabled boolean not null default true,
  disabled_reason text,                          -- why it disabled itself (too_many_failures)
  consecutive_failures integer not null default 0,
  next_run_at timestamptz(3),                    -- the pending due time; null while disabled
  last_run_at timestamptz(3),                    -- the due time of the last run (or skip)
  last_result text check (last_result in ('started', 'succeeded', 'failed', 'skipped')),
  last_reason text,                              -- runner_offline, command_refused, budget_exceeded, missed, …
  last_detail text,
  last_run_id text,                              -- the skill run it started, while its outcome is pending or after
  created_by text not null references users (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index project_schedules_project on project_schedules (project_id, created_at);
create index project_schedules_due on project_schedules (next_run_at) where enabled;
create index project_schedules_pending on project_schedules (last_run_id) where last_result = 'started';
-- Every process looks for schedule runs whose holder died (expired lease) once a second: only running rows.
create index job_runs_running on job_runs (lease_expires_at) where status = 'running';
