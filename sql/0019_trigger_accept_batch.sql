-- 0019: deliveries of one trigger are recorded in batches (functions/triggers/hook.ts accept()): while one
-- statement of a trigger is in flight, the deliveries that arrive in the same process wait, and go
-- together in the next. This function is that statement: in ONE call it locks the trigger's bucket row
-- once, then for each delivery in arrival order decides exactly what one-at-a-time recording would:
--   replayed      the delivery id was used within 24 h (also by an earlier delivery of the same batch)
--   accepted      the id is claimed for 24 h, a token taken, the `accepted` row inserted
--   rate_limited  the bucket is empty: nothing claimed, nothing recorded (the id stays usable)
-- and writes the bucket back. Before, every accepted delivery locked the bucket row until its own commit,
-- so one trigger's deliveries were recorded strictly one commit after another (docs/performance.md,
-- "Inbound triggers"). Returns null when the trigger is no longer enabled at the verified version (xmin):
-- nothing is recorded, and the caller checks again from the database.
create function svc_trigger_accept(p_trigger text, p_version text, p_items jsonb, p_now timestamptz,
                                   p_capacity double precision, p_cutoff timestamptz)
returns jsonb language plpgsql volatile as $$
declare
  v_tokens double precision;
  v_updated timestamptz;
  v_item jsonb;
  v_claimed text;
  v_out jsonb := '[]';
begin
  if not exists (select 1 from triggers where id = p_trigger and enabled and xmin::text = p_version) then
    return null;
  end if;
  insert into trigger_rate (trigger_id, tokens, updated_at) values (p_trigger, p_capacity, p_now)
    on conflict (trigger_id) do nothing;
  select tokens, updated_at into v_tokens, v_updated from trigger_rate where trigger_id = p_trigger for update;
  -- Refilled continuously at capacity per hour, up to the capacity.
  v_tokens := least(p_capacity, v_tokens + greatest(0, extract(epoch from (p_now - v_updated)))::double precision * p_capacity / 3600);
  for v_item in select value from jsonb_array_elements(p_items) loop
    if v_tokens >= 1 then
      v_claimed := null;
      insert into trigger_delivery_ids (trigger_id, delivery_id, seen_at) values (p_trigger, v_item->>'d', p_now)
        on conflict (trigger_id, delivery_id) do update set seen_at = excluded.seen_at
         where trigger_delivery_ids.seen_at <= p_cutoff
        returning delivery_id into v_claimed;
      if v_claimed is null then
        v_out := v_out || '"replayed"'::jsonb;
      else
        insert into inbound_deliveries (id, trigger_id, delivery_id, status, args, created_at, updated_at)
          values (gen_random_uuid()::text, p_trigger, v_claimed, 'accepted', v_item->'a', p_now, p_now);
        v_tokens := v_tokens - 1;
        v_out := v_out || '"accepted"'::jsonb;
      end if;
    elsif exists (select 1 from trigger_delivery_ids
                   where trigger_id = p_trigger and delivery_id = v_item->>'d' and seen_at > p_cutoff) then
      v_out := v_out || '"replayed"'::jsonb;
    else
      v_out := v_out || '"rate_limited"'::jsonb;
    end if;
  end loop;
  update trigger_rate set tokens = v_tokens, updated_at = greatest(v_updated, p_now) where trigger_id = p_trigger;
  return v_out;
end
$$;
