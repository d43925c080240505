-- 0027: GitHub App mode, the server half (issue #36 item 1; docs/github-app.md, "App mode"). The server
-- signs the App JWT with the stored private key and exchanges it for installation tokens, each scoped
-- to one repository (functions/codehost/app-token.ts).

-- Where the App's REST API is: GitHub, or a GitHub Enterprise Server (`https://<host>/api/v3`). Reached
-- through the outbound address guard like webhooks.
alter table codehost_apps add column api_url text not null default 'https://api.github.com';

-- Installation tokens, cached until 5 minutes before they expire and shared by every replica: one row
-- per app and repository (owner/name in lower case). The token is AES-256-GCM under APP_ENCRYPTION_KEY,
-- its AAD bound to the app and the repository, like the app's other secrets. `api_url` and
-- `github_app_id` are those it was minted with: after either is edited, the cached token is not used. A new one is minted under an advisory lock keyed by
-- app and repository, so replicas asking at once mint once.
create table codehost_app_tokens (
  app_id text not null references codehost_apps (id) on delete cascade,
  repo text not null,
  api_url text not null,
  github_app_id bigint not null,
  installation_id bigint not null,
  token_ciphertext text not null,
  expires_at timestamptz not null,
  minted_at timestamptz not null default now(),
  primary key (app_id, repo)
);
