-- 0023: whether a run can start, and runs that could not (issue 34, "Ready when nothing can run";
-- docs/runner.md "Agent runtimes reported", docs/triggers.md "Dry run", docs/skill-runs.md "Runs that did not start").

-- The usable runtime profiles the runner reported ([{name, runtime, authenticated}]), replaced on each
-- report. null = not reported: a runner older than the `profiles` capability (unknown, not "none").
alter table runners
  add column profiles jsonb,
  add column profiles_reported_at timestamptz;

-- One row per trigger delivery or scheduled run that did not start: its reason code (no_profile,
-- runner_offline, command_refused, command_timeout, budget_exceeded, creator_not_authorized,
-- interrupted) and the runner's or server's detail. Shown on the Runs page; kept like runs (no
-- automatic deletion).
create table run_start_failures (
  id bigserial primary key,
  project_id text not null references projects (id) on delete cascade,
  source text not null check (source in ('trigger', 'schedule')),
  source_id text not null,
  source_name text not null default '',
  action text not null check (action in ('skill', 'next_round')),
  skill text,
  reason text not null,
  detail text,
  delivery_id text,                     -- the inbound delivery (trigger) it came from
  created_at timestamptz not null default now()
);
create index run_start_failures_project on run_start_failures (project_id, created_at desc);
create index run_start_failures_created on run_start_failures (created_at desc, id desc);

-- The project's admins are told once per cause: one row per (source, reason) notified, deleted when a
-- run of that source starts again, so the next failure is news again. The insert is the claim, so two
-- processes failing at once notify once.
create table run_start_alerts (
  source text not null,
  source_id text not null,
  reason text not null,
  project_id text not null references projects (id) on delete cascade,
  notified_at timestamptz not null default now(),
  primary key (source, source_id, reason)
);
