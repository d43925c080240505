-- 0044: OpenCode's models in the price table (issue 43; runner/runtimes/opencode; docs/cost.md "OpenCode").
-- The runtime checks already admit 'opencode' (0041). A table seeded before this release has none of the
-- models below (protocol/prices.ts DEFAULT_PRICES, source: ccusage 20.0.20 --offline): each is added where the
-- table has no version of it; an admin's own versions are kept. An empty table gets them from the seed.
insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok,
                          cache_write_1h_usd_per_mtok, above_200k, long_context, fast_multiplier, effective_from)
select x.model, x.input, x.output, x.cached, x.write5m, 0, null, null, null, timestamptz '1970-01-01 00:00:00+00'
  from (values ('glm-4.6', 0.6, 0.11, 2.2, 0), ('kimi-k2-thinking', 0.6, 0.15, 2.5, 0.75),
               ('qwen3-coder', 0.22, 0.022, 0.95, 0.275), ('grok-code-fast-1', 0.2, 0.02, 1.5, 0.25))
       as x(model, input, cached, output, write5m)
 where exists (select 1 from model_prices)
   and not exists (select 1 from model_prices p where p.model = x.model);
