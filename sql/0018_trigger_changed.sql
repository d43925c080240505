-- 0018: every change to a trigger row (edit, enable/disable, rotation, self-disable, delete, also by hand)
-- is announced on channel svc_trigger_changed with the trigger's id, after its commit. Each API process
-- keeps a small cache of enabled triggers' verification material for POST /hooks/<publicId>
-- (functions/triggers/cache.ts) and drops an entry when it hears of it. The cache is never trusted to
-- ACCEPT: hook.ts records a delivery only if the row's version (xmin) is still the one it verified with.
create function svc_trigger_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_trigger_changed', old.id);
  return null;
end
$$;

create trigger triggers_changed after update or delete on triggers
  for each row execute function svc_trigger_changed();
