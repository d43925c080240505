-- 0023: one-time setup links for the first admin (functions/auth/setup.ts; docs/security.md "The setup link").
-- While no user exists, every server process logs a link whose token is valid one hour; only its hash
-- is kept, here rather than in the process, so that behind a balancer any replica accepts the link
-- another replica logged. Single use: the first admin's creation deletes every row (expired ones go whenever
-- a new one is made).
create table setup_tokens (
  token_hash text primary key,
  expires_at timestamptz not null
);
