-- 0002: accounts, sessions, API tokens, projects and roles, encrypted instance secrets, audit log.

create table users (
  id text primary key,
  email text not null,
  name text not null,
  password_hash text,                 -- null until the one-time link is used
  active boolean not null default true,
  instance_admin boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email on users (lower(email));

-- Browser sessions: the JWT names a row here, so sign-out and deactivation end it at once.
create table sessions (
  id text primary key,
  user_id text not null references users (id),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index sessions_user on sessions (user_id);

-- Personal API tokens for scripts; only a SHA-256 of the token is kept.
create table api_tokens (
  id text primary key,
  user_id text not null references users (id),
  name text not null,
  token_hash text not null unique,
  prefix text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);

-- One-time password-set links (first admin, invitations, resets); only a hash is kept.
create table password_links (
  token_hash text primary key,
  user_id text not null references users (id),
  expires_at timestamptz not null,
  used_at timestamptz
);

-- Failed sign-ins, for rate limits per account and per client address.
create table auth_failures (
  key text not null,
  at timestamptz not null default now()
);
create index auth_failures_key_at on auth_failures (key, at);

-- Keys the instance generates for itself (the session signing key when APP_ENCRYPTION_KEY is unset).
create table instance_keys (
  name text primary key,
  value text not null,
  created_at timestamptz not null default now()
);

-- Instance secrets (chat bot token, code-host app key …), AES-256-GCM under APP_ENCRYPTION_KEY.
create table instance_secrets (
  name text primary key,
  ciphertext text not null,
  updated_at timestamptz not null default now(),
  updated_by text references users (id)
);

create table projects (
  id text primary key,
  name text not null,
  repo text not null,                 -- owner/name on the code host
  runner_id text,
  root_path text,
  budget_usd numeric(12, 2) check (budget_usd is null or budget_usd >= 0),
  budget_action text not null default 'warn' check (budget_action in ('warn', 'stop')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index projects_name on projects (lower(name));

create table project_members (
  project_id text not null references projects (id) on delete cascade,
  user_id text not null references users (id),
  role text not null check (role in ('viewer', 'operator', 'admin')),
  created_at timestamptz not null default now(),
  primary key (project_id, user_id)
);
create index project_members_user on project_members (user_id);

-- The audit log: append-only and hash-chained (spec: Retention; DESIGN §2).
-- hash = SHA-256(prev_hash || canonical JSON of the record); see functions/audit/audit.ts.
create table audit_records (
  seq bigint primary key,
  at timestamptz(3) not null,
  actor_id text,
  actor_label text not null,
  action text not null,
  target_type text not null,
  target_id text,
  diff jsonb,
  request_id text,
  prev_hash text not null,
  hash text not null
);
create index audit_records_action on audit_records (action, seq);
create index audit_records_actor on audit_records (actor_id, seq);
create index audit_records_target on audit_records (target_type, target_id, seq);

create function audit_records_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'audit_records is append-only: % is not allowed', tg_op using errcode = 'insufficient_privilege';
end $$;
create trigger audit_records_no_update before update on audit_records for each row execute function audit_records_append_only();
create trigger audit_records_no_delete before delete on audit_records for each row execute function audit_records_append_only();
create trigger audit_records_no_truncate before truncate on audit_records for each statement execute function audit_records_append_only();

-- Results of chain verification (nightly job and on demand).
create table audit_verifications (
  id bigserial primary key,
  started_at timestamptz not null,
  finished_at timestamptz not null default now(),
  ok boolean not null,
  records_checked bigint not null,
  first_broken_seq bigint,
  problem text
);
