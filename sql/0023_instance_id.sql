-- 0023: which database this is (docs/security.md, "An anchor file of another instance").
-- Each replica's audit anchor file (AUDIT_ANCHOR_PATH) names the instance it was written for, so an
-- anchor file that two instances on different databases share (one directory, one default path) is
-- reported as "the anchor file belongs to instance X; this database is instance Y", not as tampering.
-- One row, made ONCE per database by the seed (sql/seed.sql: insert … on conflict do nothing), not
-- here: a new embedded database is a copy of the build's template, which holds every migration
-- already applied (scripts/pglite-template.ts), and a uuid made here would be the same in all of them.
-- A restored dump keeps it: a restore is the same instance, and its chain is checked as such.
create table instance_identity (
  singleton boolean primary key default true check (singleton),
  instance_id uuid not null,
  created_at timestamptz not null default now()
);
-- Made once, never changed: append_only() is 0006's.
create trigger instance_identity_no_update before update on instance_identity for each row execute function append_only();
create trigger instance_identity_no_delete before delete on instance_identity for each row execute function append_only();
create trigger instance_identity_no_truncate before truncate on instance_identity for each statement execute function append_only();

-- Why a verification failed, besides its sentence: 'chain_broken' (the records or checkpoints do not
-- verify) or 'other_instance' (the anchor file is another database's). Null when it passed, and on
-- rows of earlier releases (a failure there read as 'chain_broken').
alter table audit_verifications add column reason text check (reason in ('chain_broken', 'other_instance'));
