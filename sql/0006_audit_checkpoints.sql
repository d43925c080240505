-- 0006: anchor the audit chain with a key and a memory (docs/security.md, "The audit log").
-- mac = HMAC-SHA256 under a key derived from APP_ENCRYPTION_KEY (null when it is unset), in the form
-- v1.<key id>.<hex>; see functions/audit/mac.ts.

-- Each record appended with the key carries a MAC over (seq, hash): a record inserted or re-hashed
-- without the key has none, or a wrong one. Records from before this migration have none.
alter table audit_records add column mac text;

-- Checkpoints: the head of the chain (seq, hash) seen by a verification or the periodic check, and when.
-- A copy of the newest one lives outside the database (AUDIT_ANCHOR_PATH and the log), so deleting
-- records, or these rows, is noticed.
create table audit_checkpoints (
  id bigserial primary key,
  seq bigint not null,
  hash text not null,
  at timestamptz(3) not null,
  chain text not null,                -- hash of record 1 (64 zeros while the log is empty)
  mac text,
  scope text not null check (scope in ('full', 'since_checkpoint'))
);
create index audit_checkpoints_seq on audit_checkpoints (seq desc, id desc);

create function append_only() returns trigger language plpgsql as $$
begin
  raise exception '% is append-only: % is not allowed', tg_table_name, tg_op using errcode = 'insufficient_privilege';
end $$;
create trigger audit_checkpoints_no_update before update on audit_checkpoints for each row execute function append_only();
create trigger audit_checkpoints_no_delete before delete on audit_checkpoints for each row execute function append_only();
create trigger audit_checkpoints_no_truncate before truncate on audit_checkpoints for each statement execute function append_only();

-- 'full' walks the chain from record 1; 'since_checkpoint' only the records after the last checkpoint.
alter table audit_verifications add column scope text not null default 'full' check (scope in ('full', 'since_checkpoint'));
