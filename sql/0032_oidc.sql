-- 0032: single sign-on through the team's OpenID Provider (issue #38; functions/auth/oidc/).
-- A user signs in as the provider's subject: (issuer, subject) names one user, for good. The first sign-in
-- of a subject links it to the user with that verified e-mail only when no other subject signed in as
-- that user; otherwise it makes a user just in time.
create table user_identities (
  issuer text not null,
  subject text not null,
  user_id text not null references users (id),
  email text not null,
  created_at timestamptz not null default now(),
  last_sign_in_at timestamptz not null default now(),
  primary key (issuer, subject)
);
create index user_identities_user on user_identities (user_id);

-- The `state` of each finished sign-in (its SHA-256): a callback is taken once, so a second request
-- with the same state (the callback opened twice, or replayed) is refused before the code is spent.
-- Rows live as long as the state cookie could; the callback deletes expired ones.
create table oidc_used_states (
  state_hash text primary key,
  expires_at timestamptz not null
);

-- How a session was made: 'password' or 'oidc' (an OIDC session lasts at most OIDC_SESSION_HOURS).
alter table sessions add column method text not null default 'password';
