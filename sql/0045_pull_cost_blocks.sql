-- 0045: the cost block svc keeps in each pull request's description (docs/cost.md, "The cost in the pull
-- request's description"; functions/codehost/cost-block.ts). One row per pull request: the text last
-- written (so an unchanged text is not written again) and when, at most once a minute per pull request
-- across replicas (a replica claims the row by moving attempted_at forward in one update), and the last
-- failure, retried on a later tick.
create table pull_cost_blocks (
  project_id text not null references projects (id) on delete cascade,
  number integer not null,
  text text,
  written_at timestamptz,
  attempted_at timestamptz not null,
  error jsonb,
  primary key (project_id, number)
);
