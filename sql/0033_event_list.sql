-- 0033: the event list (issue #39 part 1; functions/event-list/, docs/webhooks.md "Reading the event
-- list"). Every catalogue envelope, exactly as an outbound webhook sends it (`body`), whether or not a
-- webhook subscribes: written by functions/event-list/store.ts in the transaction that stores the
-- envelope's outbox row and activity item, as that transaction's last statement.
--
-- `seq` is the list's order and its cursor. It is assigned at commit order: the insert takes one
-- advisory lock (store.ts EVENTS_LOCK) just before COMMIT and holds it until the commit is visible, so a
-- transaction that takes a seq after another one commits after it too — a reader that sees seq n has
-- seen every committed seq below n, and a cursor never skips an event committed late by another replica.
-- The sequence must keep CACHE 1 (the default): a per-session cache would hand out numbers out of order.
create table catalogue_events (
  seq bigint generated always as identity primary key,
  id text not null unique,
  type text not null,
  project_id text,
  body text not null,
  created_at timestamptz not null default now()
);
create index catalogue_events_project on catalogue_events (project_id, seq);
create index catalogue_events_created_at on catalogue_events (created_at);

-- How far retention (retention.events, EVENTS_RETENTION_DAYS) has deleted: every seq up to and
-- including `pruned_through` is gone, so a cursor below it answers 410 with the cursor of this value.
create table catalogue_events_horizon (
  id integer primary key default 1 check (id = 1),
  pruned_through bigint not null default 0
);
insert into catalogue_events_horizon (id) values (1);
