-- 0010: an inbound delivery is accepted by ONE autocommit statement (functions/triggers/hook.ts record()):
-- claim the delivery id, take a token from the trigger's bucket, insert the `accepted` row. The bucket's
-- row is then locked only inside PostgreSQL (the statement and its commit), never across a round trip
-- to the API process, which is what bounded one trigger's accepted rate (docs/performance.md).
-- When the id was claimed but the bucket is empty, the claim must not stay (a 429 records nothing and
-- leaves the id usable): the statement calls this function, whose error rolls the whole statement back.
-- SQLSTATE SV429 is ours (class SV is not one of PostgreSQL's); hook.ts answers it with 429.
create function svc_trigger_rate_limited() returns boolean language plpgsql volatile as $$
begin
  raise exception 'the trigger''s rate bucket is empty' using errcode = 'SV429';
end
$$;
