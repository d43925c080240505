-- Idempotent seed, run at every start after the migrations (spec: Upgrade step 2).

-- Settings: insert missing keys, refresh descriptions, keep values an admin has edited.
insert into settings (key, value, description) values
  ('instance.name', '"svc"', 'Name shown in the admin pages'' title.')
on conflict (key) do update set description = excluded.description;

-- This database's instance id (sql/0023_instance_id.sql): made at the first start, then kept.
insert into instance_identity (instance_id) values (gen_random_uuid()) on conflict (singleton) do nothing;

-- Price table: added by functions/cost/prices.ts seedPrices() right after this file, in the same
-- transaction, from protocol/prices.ts DEFAULT_PRICES — only when no price exists, so edited prices
-- survive every restart and upgrade.
