-- 0041: more agent runtimes (issue 43; docs/runner.md "Runtimes: one folder each"). The runtime checks of
-- agent_sessions and llm_requests admit Gemini CLI and OpenCode beside Claude Code and Codex, and the price
-- table gets Gemini's default models (protocol/prices.ts; docs/cost.md "Prices and cost") where it has no
-- version of them yet: a table seeded before this release had none. An admin's own versions are kept.
alter table agent_sessions drop constraint if exists agent_sessions_runtime_check;
alter table agent_sessions add constraint agent_sessions_runtime_check check (runtime in ('claude', 'codex', 'gemini', 'opencode'));
alter table llm_requests drop constraint if exists llm_requests_runtime_check;
alter table llm_requests add constraint llm_requests_runtime_check check (runtime in ('claude', 'codex', 'gemini', 'opencode'));

insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok,
                          cache_write_1h_usd_per_mtok, above_200k, long_context, fast_multiplier, effective_from)
select x.model, x.input, x.output, x.cached, 0, 0, null,
       case when x.long then jsonb_build_object('above', 200000, 'input', x.input * 2, 'output', x.output * 1.5,
                                                'cacheWrite5m', 0, 'cacheWrite1h', 0, 'cacheRead', x.cached * 2) end,
       null, timestamptz '1970-01-01 00:00:00+00'
  from (values ('gemini-2.5-pro', 1.25, 0.125, 10, true), ('gemini-2.5-flash', 0.3, 0.03, 2.5, false),
               ('gemini-2.5-flash-lite', 0.1, 0.01, 0.4, false), ('gemini-3-pro-preview', 2, 0.2, 12, true),
               ('gemini-3.1-pro-preview', 2, 0.2, 12, true), ('gemini-3-flash-preview', 0.5, 0.05, 3, false),
               ('gemini-3.5-flash', 1.5, 0.15, 9, false), ('gemini-3.1-flash-lite', 0.25, 0.025, 1.5, false))
       as x(model, input, cached, output, long)
 where exists (select 1 from model_prices)
   and not exists (select 1 from model_prices p where p.model = x.model);
