-- 0039: a project's GitLab code host (issue 42; docs/gitlab.md). One row per project on GitLab: the
-- instance's base URL (a path prefix allowed), the project's full path (nested groups), an optional
-- project or group access token, and the project's webhook (/hooks/gitlab/<public_id>, looked up by the
-- hash, verified by its secret token). Secrets at rest are AES-256-GCM under APP_ENCRYPTION_KEY
-- (functions/lib/crypto.ts), bound to the project by their AAD. `check_*` is the last token check
-- (GET /api/v4/projects/:id with the token), shown on the Projects page.
create table project_codehosts (
  project_id text primary key references projects (id) on delete cascade,
  kind text not null check (kind in ('gitlab')),
  base_url text not null,
  project_path text not null,
  token_ciphertext text,
  public_id text not null unique,
  public_id_hash text not null unique,
  webhook_secret_ciphertext text not null,
  check_ok boolean,
  check_error text,
  checked_at timestamptz,
  updated_by text references users (id) on delete set null,
  updated_at timestamptz not null default now()
);
