-- 0034: LLM tokens and cost per project, model and runner kept as running totals, so GET /metrics reads
-- a few rows for its token and cost counters instead of summing every stored request at each scrape
-- (functions/metrics/collectors.ts; docs/performance.md "GET /metrics").
--
-- Kept like project_month_spend (0022): statement-level triggers on llm_requests, so every writer keeps
-- them right (the ingest's inserts and merges, pricing a model, a session learning its project, a
-- project's deletion setting its requests' project to null, retention, the previous release during a
-- rolling upgrade); one row per runner, so different runners' batches never wait on a shared row.
-- project_id '' holds the requests without a project. A row whose count reaches 0 is deleted.
create table llm_usage_totals (
  project_id text not null,
  model text not null,
  runner_id text not null,
  requests bigint not null default 0,
  input_tokens numeric not null default 0,
  output_tokens numeric not null default 0,
  cache_read_tokens numeric not null default 0,
  cache_write_tokens numeric not null default 0,
  cost_usd numeric not null default 0,                    -- sum of the priced requests' cost_usd
  primary key (project_id, model, runner_id)
);

create function llm_requests_usage_totals() returns trigger language plpgsql as $$
begin
  -- The statement's change, summed per key: an insert adds its rows, an update takes its old rows off
  -- and adds the new ones, a delete takes off. (Separate statements: each names only the transition
  -- tables its operation has.)
  if tg_op = 'INSERT' then
    insert into llm_usage_totals as t (project_id, model, runner_id, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd)
    select coalesce(project_id, ''), model, runner_id, count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),
           sum(cache_write_5m_tokens + cache_write_1h_tokens), coalesce(sum(cost_usd), 0)
      from new_rows group by 1, 2, 3 order by 1, 2, 3
    on conflict (project_id, model, runner_id) do update
       set requests = t.requests + excluded.requests, input_tokens = t.input_tokens + excluded.input_tokens,
           output_tokens = t.output_tokens + excluded.output_tokens, cache_read_tokens = t.cache_read_tokens + excluded.cache_read_tokens,
           cache_write_tokens = t.cache_write_tokens + excluded.cache_write_tokens, cost_usd = t.cost_usd + excluded.cost_usd;
    return null;
  end if;
  if tg_op = 'UPDATE' then
    insert into llm_usage_totals as t (project_id, model, runner_id, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd)
    select p, m, r, sum(n), sum(i), sum(o), sum(cr), sum(cw), sum(c)
      from (select coalesce(project_id, '') as p, model as m, runner_id as r, -1 as n, -input_tokens as i, -output_tokens as o, -cache_read_tokens as cr,
                   -(cache_write_5m_tokens + cache_write_1h_tokens) as cw, -coalesce(cost_usd, 0) as c
              from old_rows
            union all
            select coalesce(project_id, ''), model, runner_id, 1, input_tokens, output_tokens, cache_read_tokens,
                   cache_write_5m_tokens + cache_write_1h_tokens, coalesce(cost_usd, 0)
              from new_rows) as change
     group by 1, 2, 3
    having sum(n) <> 0 or sum(i) <> 0 or sum(o) <> 0 or sum(cr) <> 0 or sum(cw) <> 0 or sum(c) <> 0
     order by 1, 2, 3
    on conflict (project_id, model, runner_id) do update
       set requests = t.requests + excluded.requests, input_tokens = t.input_tokens + excluded.input_tokens,
           output_tokens = t.output_tokens + excluded.output_tokens, cache_read_tokens = t.cache_read_tokens + excluded.cache_read_tokens,
           cache_write_tokens = t.cache_write_tokens + excluded.cache_write_tokens, cost_usd = t.cost_usd + excluded.cost_usd;
  else
    update llm_usage_totals t
       set requests = t.requests - gone.n, input_tokens = t.input_tokens - gone.i, output_tokens = t.output_tokens - gone.o,
           cache_read_tokens = t.cache_read_tokens - gone.cr, cache_write_tokens = t.cache_write_tokens - gone.cw, cost_usd = t.cost_usd - gone.c
      from (select coalesce(project_id, '') as p, model as m, runner_id as r, count(*) as n, sum(input_tokens) as i, sum(output_tokens) as o,
                   sum(cache_read_tokens) as cr, sum(cache_write_5m_tokens + cache_write_1h_tokens) as cw, coalesce(sum(cost_usd), 0) as c
              from old_rows group by 1, 2, 3) as gone
     where t.project_id = gone.p and t.model = gone.m and t.runner_id = gone.r;
  end if;
  delete from llm_usage_totals t
   where t.requests = 0 and (t.project_id, t.model, t.runner_id) in (select coalesce(project_id, ''), model, runner_id from old_rows);
  return null;
end $$;

create trigger llm_requests_usage_totals_insert after insert on llm_requests
  referencing new table as new_rows for each statement execute function llm_requests_usage_totals();
create trigger llm_requests_usage_totals_update after update on llm_requests
  referencing old table as old_rows new table as new_rows for each statement execute function llm_requests_usage_totals();
create trigger llm_requests_usage_totals_delete after delete on llm_requests
  referencing old table as old_rows for each statement execute function llm_requests_usage_totals();

-- The requests stored so far (the triggers above hold the table's lock until this commits, so no write
-- of another process falls between the two).
insert into llm_usage_totals (project_id, model, runner_id, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd)
select coalesce(project_id, ''), model, runner_id, count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),
       sum(cache_write_5m_tokens + cache_write_1h_tokens), coalesce(sum(cost_usd), 0)
  from llm_requests group by 1, 2, 3;
