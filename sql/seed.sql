-- Idempotent seed, run at every start after the migrations (spec: Upgrade step 2).

-- Settings: insert missing keys, refresh descriptions, keep values an admin has edited.
insert into settings (key, value, description) values
  ('instance.name', '"svc"', 'Name shown in the admin pages'' title.')
on conflict (key) do update set description = excluded.description;

-- Price table: only when none exists, so edited prices survive every restart and upgrade.
insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_usd_per_mtok)
select * from (values
  ('claude-opus-4-1', 15.0, 75.0, 1.5, 18.75),
  ('claude-opus-4', 15.0, 75.0, 1.5, 18.75),
  ('claude-sonnet-4-5', 3.0, 15.0, 0.3, 3.75),
  ('claude-sonnet-4', 3.0, 15.0, 0.3, 3.75),
  ('claude-3-7-sonnet', 3.0, 15.0, 0.3, 3.75),
  ('claude-haiku-4-5', 1.0, 5.0, 0.1, 1.25),
  ('claude-3-5-haiku', 0.8, 4.0, 0.08, 1.0),
  ('gpt-5', 1.25, 10.0, 0.125, 0),
  ('gpt-5-mini', 0.25, 2.0, 0.025, 0),
  ('gpt-5-codex', 1.25, 10.0, 0.125, 0),
  ('o4-mini', 1.1, 4.4, 0.275, 0)
) as p(model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_usd_per_mtok)
where not exists (select 1 from model_prices);
