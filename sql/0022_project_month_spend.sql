-- 0022: a project's spend per month kept as a running total, so a budget question reads a few rows
-- instead of summing the month's requests (functions/cost/budget.ts; docs/cost.md "Budgets").
--
-- Before, budgetState and budgetExceeded summed cost_usd over every request of the project this month:
-- 73–96 ms at 150,000 requests, asked after every ingest batch of a budgeted project and, for a stop
-- budget, for every claim of an inbound trigger, every scheduled run and every orchestrator.start.
--
-- One row per project, month (UTC) and runner: requests of different runners never wait for one another
-- on a shared row (each runner's batches are stored in order by one server process). The totals are
-- kept by a trigger on llm_requests, so every writer keeps them right: the ingest's inserts and merges,
-- pricing a model that had no price, a session learning its project, `on delete set null` when a
-- project goes, and the code of a previous release during a rolling upgrade. No foreign keys: a
-- project's deletion sets its requests' project to null, and the trigger then takes them off its rows
-- (a row whose count reaches 0 is deleted).
create table project_month_spend (
  project_id text not null,
  month date not null,                                   -- the first day of the month, UTC
  runner_id text not null,
  cost_usd numeric not null default 0,                   -- sum of the priced requests' cost_usd
  unpriced integer not null default 0,                   -- requests with cost_usd null
  requests integer not null default 0,
  primary key (project_id, month, runner_id)
);

-- Statement-level: a statement's rows are added up per project, month and runner and each total row
-- is written once. (A row-level trigger updated the same total once per request; within one
-- transaction every update of a row lengthens the chain of versions the next one walks, so a bulk
-- statement took quadratic time: 73 s for 150,000 inserted requests.)
create function llm_requests_month_spend() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into project_month_spend as s (project_id, month, runner_id, cost_usd, unpriced, requests)
    select project_id, (date_trunc('month', at at time zone 'UTC'))::date, runner_id,
           coalesce(sum(cost_usd), 0), count(*) filter (where cost_usd is null), count(*)
      from new_rows where project_id is not null
     group by 1, 2, 3 order by 1, 2, 3
    on conflict (project_id, month, runner_id) do update
       set cost_usd = s.cost_usd + excluded.cost_usd, unpriced = s.unpriced + excluded.unpriced, requests = s.requests + excluded.requests;
    return null;
  end if;
  -- An update takes its rows' old values off and adds the new ones; a delete only takes off. (Two
  -- statements: a delete trigger has no new_rows to name.)
  if tg_op = 'UPDATE' then
    insert into project_month_spend as s (project_id, month, runner_id, cost_usd, unpriced, requests)
    select project_id, (date_trunc('month', at at time zone 'UTC'))::date, runner_id, sum(cost), sum(unpriced), sum(requests)
      from (select project_id, at, runner_id, -coalesce(cost_usd, 0) as cost, -(cost_usd is null)::int as unpriced, -1 as requests
              from old_rows where project_id is not null
            union all
            select project_id, at, runner_id, coalesce(cost_usd, 0), (cost_usd is null)::int, 1
              from new_rows where project_id is not null) as change
     group by 1, 2, 3
    having sum(cost) <> 0 or sum(unpriced) <> 0 or sum(requests) <> 0
     order by 1, 2, 3
    on conflict (project_id, month, runner_id) do update
       set cost_usd = s.cost_usd + excluded.cost_usd, unpriced = s.unpriced + excluded.unpriced, requests = s.requests + excluded.requests;
  else
    update project_month_spend s
       set cost_usd = s.cost_usd - gone.cost, unpriced = s.unpriced - gone.unpriced, requests = s.requests - gone.requests
      from (select project_id, (date_trunc('month', at at time zone 'UTC'))::date as month, runner_id,
                   coalesce(sum(cost_usd), 0) as cost, count(*) filter (where cost_usd is null) as unpriced, count(*) as requests
              from old_rows where project_id is not null group by 1, 2, 3) as gone
     where s.project_id = gone.project_id and s.month = gone.month and s.runner_id = gone.runner_id;
  end if;
  delete from project_month_spend s
   where s.requests = 0
     and (s.project_id, s.month, s.runner_id) in (select project_id, (date_trunc('month', at at time zone 'UTC'))::date, runner_id from old_rows where project_id is not null);
  return null;
end $$;

create trigger llm_requests_month_spend_insert after insert on llm_requests
  referencing new table as new_rows for each statement execute function llm_requests_month_spend();
create trigger llm_requests_month_spend_update after update on llm_requests
  referencing old table as old_rows new table as new_rows for each statement execute function llm_requests_month_spend();
create trigger llm_requests_month_spend_delete after delete on llm_requests
  referencing old table as old_rows for each statement execute function llm_requests_month_spend();

-- The requests stored so far (the triggers above hold the table's lock until this commits, so no write
-- of another process falls between the two).
insert into project_month_spend (project_id, month, runner_id, cost_usd, unpriced, requests)
select project_id, (date_trunc('month', at at time zone 'UTC'))::date, runner_id,
       coalesce(sum(cost_usd), 0), count(*) filter (where cost_usd is null), count(*)
  from llm_requests where project_id is not null
 group by 1, 2, 3;
