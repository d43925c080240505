-- 0028: the code host's state on the server (issue #36 items 2 and 3; docs/github-app.md, "What a
-- delivery does"): the issue queue per project and the pull requests' state, fed by App deliveries at
-- once and by the runner's polling as the safety net (functions/codehost/queue.ts and pulls.ts).

-- A project's issue queue: its open issues (and, for a day, the ones a delivery closed). Replaced by a
-- `codehost.queue` runner event or an `issues.refresh` answer; changed row by row by `issues`
-- deliveries. `gh_updated_at` is GitHub's own updated_at when a delivery said it: a delivery older than
-- the stored row changes nothing.
create table codehost_issues (
  project_id text not null references projects (id) on delete cascade,
  number integer not null,
  title text not null,
  url text not null,
  labels jsonb not null default '[]',
  state text not null default 'open' check (state in ('open', 'closed')),
  gh_updated_at timestamptz,
  updated_at timestamptz not null default now(),
  primary key (project_id, number)
);

-- When each project's whole open set was last read (a runner's poll or refresh answer), and by which
-- runner at what time of ITS clock (`polled_at`, the `codehost.queue` event's ts): a re-sent or older
-- event of the same runner is ignored (only one machine's clock is compared with itself).
create table codehost_queues (
  project_id text primary key references projects (id) on delete cascade,
  refreshed_at timestamptz not null default now(),
  runner_id text,
  polled_at timestamptz
);

-- The one arbiter of a pull request's state: every observation (a runner's pr.* event, an App
-- delivery) goes through functions/codehost/pulls.ts, and only a transition emits a catalogue event,
-- its id derived from these columns (opens, check_seq), so the webhook and the poll seeing the same
-- change emit it once. `gh_updated_at` is the PR's updated_at on GitHub (deliveries carry it): a
-- delivery older than it changes nothing; a runner's pr.merged or pr.closed numbering an older opening
-- (its ids are gh.<project>.<n>.<opens>.<what>) is stale too. `checks_sha` is the commit the checks
-- state is about.
create table codehost_pulls (
  project_id text not null references projects (id) on delete cascade,
  number integer not null,
  state text not null check (state in ('open', 'merged', 'closed')),
  title text,
  url text,
  branch text,
  head_sha text,
  checks text not null default 'none' check (checks in ('none', 'pending', 'passed', 'failed')),
  checks_sha text,
  checks_summary text,
  checks_at timestamptz,
  opens integer not null default 0,
  check_seq integer not null default 0,
  gh_updated_at timestamptz,
  updated_at timestamptz not null default now(),
  primary key (project_id, number)
);
