-- 0005: skill run records (spec: Skill run, Limits "Patch kept by server"; docs/skill-runs.md), built
-- from the runners' skill_run.* events by functions/runs/ingest.ts and served at GET /api/runs.

create table skill_runs (
  id text primary key,                          -- the run id the runner chose
  runner_id text not null references runners (id),
  project_id text not null references projects (id) on delete cascade,
  skill text not null,
  args jsonb not null default '[]',
  output text not null check (output in ('report', 'pull_request')),
  profile_id text not null default '',
  runtime text not null default '',
  model text,
  timeout_sec integer,
  state text not null check (state in ('queued', 'starting', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled')),
  error text,
  branch text,
  created_at timestamptz not null,              -- when the runner accepted it
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now(),
  -- the result, set with the final state
  report text,
  report_truncated boolean not null default false,
  exit_code integer,
  duration_ms bigint,
  session_id text,
  cost_usd numeric(14, 6),
  usage jsonb,
  pull_request jsonb,                           -- {branch, base, head, commits, files, patchBytes, patchSha256}
  -- at most 128 KiB of the patch; patch_truncated says the server (or the runner) cut it
  patch text,
  patch_bytes bigint,
  patch_sha256 text,
  patch_truncated boolean not null default false,
  progress_lines integer not null default 0,
  last_progress text
);
create index skill_runs_project on skill_runs (project_id, created_at desc);
create index skill_runs_created on skill_runs (created_at desc, id desc);

-- Progress lines read from the agent's stream, idempotent by (run, seq).
create table skill_run_lines (
  run_id text not null references skill_runs (id) on delete cascade,
  seq integer not null,
  text text not null,
  received_at timestamptz not null default now(),
  primary key (run_id, seq)
);
