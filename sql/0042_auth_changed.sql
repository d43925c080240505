-- 0042: every change that can end or alter what a credential grants — a token revoked, expired or
-- deleted, a session ended, a user deactivated, renamed or made (or no longer) an instance admin, also by
-- hand — is announced on channel svc_auth_changed after its commit. Each API process keeps a short cache
-- of who a token or session is, for safe (read-only) requests only (functions/auth/principal-cache.ts),
-- and empties it when it hears this. Writes always read the credential from the database.
-- Recording a token's last use (an update of last_used_at only) does not fire it.
create function svc_auth_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_auth_changed', '');
  return null;
end
$$;

create trigger api_tokens_auth_changed after update of revoked_at, expires_at, token_hash, user_id or delete on api_tokens
  for each statement execute function svc_auth_changed();
create trigger sessions_auth_changed after update of revoked_at, expires_at, user_id or delete on sessions
  for each statement execute function svc_auth_changed();
create trigger users_auth_changed after update of active, instance_admin, email, name or delete on users
  for each statement execute function svc_auth_changed();
