-- 0014: code-host (GitHub) app registrations and their webhook deliveries (spec: Stored secrets
-- "code-host app key"; Retention "code-host app webhook deliveries 14 days"). See functions/codehost/.

-- A registered GitHub App. Its webhook URL is /hooks/github/<public_id>; the id is looked up by the
-- hash (the same query for every id, like inbound triggers). Secrets at rest are AES-256-GCM under
-- APP_ENCRYPTION_KEY (functions/lib/crypto.ts), bound to the row by their AAD.
create table codehost_apps (
  id text primary key,
  name text not null,
  github_app_id bigint,
  public_id text not null unique,
  public_id_hash text not null unique,
  webhook_secret_ciphertext text not null,
  private_key_ciphertext text,
  created_by text references users (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Deliveries (0001 made the table; nothing wrote it until now). `id` is our own id; the sender's
-- X-GitHub-Delivery is `delivery_id`, unique per app, so a redelivery is recorded once by a single
-- insert … on conflict do nothing. `outcome` says what became of it (docs/github-app.md), `polls` the
-- collector.poll sent to each matched project's runner and its answer. Columns stay nullable for rows
-- of older shape; the hook always fills app_id and delivery_id.
alter table codehost_deliveries
  add column app_id text references codehost_apps (id) on delete cascade,
  add column delivery_id text,
  add column repo text,
  add column outcome text not null default 'recorded',
  add column polls jsonb not null default '[]',
  add column updated_at timestamptz not null default now();
create unique index codehost_deliveries_app_delivery on codehost_deliveries (app_id, delivery_id);
create index codehost_deliveries_app_created on codehost_deliveries (app_id, created_at desc);

-- The hook finds the projects of a repository by owner/name, case-insensitively.
create index projects_repo_lower on projects (lower(repo));
