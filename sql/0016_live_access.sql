-- 0016: live updates (functions/live/live.ts). Changes that alter who may read what, or end a
-- session, tell every API process's live sockets at commit, whichever code path made them:
--   project membership, a project created, deleted or moved to another runner → forget cached roles;
--   a session revoked, a token revoked, a user (de)activated or made (not) instance admin → re-check
--   the sockets of that session, token or user now (an ended one closes with 4401).
-- The payloads are the live channel's control envelopes: {"access":true}, {"revalidate":{…}}.

create function svc_live_access() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_live', '{"access":true}');
  return null;
end $$;

create trigger project_members_live after insert or update or delete on project_members
  for each statement execute function svc_live_access();
create trigger projects_live after insert or update of runner_id or delete on projects
  for each statement execute function svc_live_access();

create function svc_live_revalidate() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_live', json_build_object('revalidate', json_build_object(TG_ARGV[0], new.id))::text);
  return null;
end $$;

create trigger sessions_live after update of revoked_at on sessions
  for each row when (old.revoked_at is distinct from new.revoked_at) execute function svc_live_revalidate('sessionId');
create trigger api_tokens_live after update of revoked_at on api_tokens
  for each row when (old.revoked_at is distinct from new.revoked_at) execute function svc_live_revalidate('tokenId');
create trigger users_live after update of active, instance_admin on users
  for each row when (old.active is distinct from new.active or old.instance_admin is distinct from new.instance_admin)
  execute function svc_live_revalidate('userId');
