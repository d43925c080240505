-- 0029: every fleet event in the activity feed (issue #36 item 4; functions/activity/record.ts). Each
-- catalogue envelope (webhooks/capture.ts), run end, trigger, runner presence change, approval and
-- schedule run writes one item. `dedupe_key` makes the writers idempotent: a runner re-sending a batch,
-- or a job retried after a crash, makes no second item. `runner_id` is set on runner items
-- (runner.online, runner.offline), which have no project: instance admins and the admins of the
-- projects on that runner see them.
alter table activity_items add column runner_id text;
alter table activity_items add column dedupe_key text;
create unique index activity_items_dedupe_key on activity_items (dedupe_key) where dedupe_key is not null;
create index activity_items_kind on activity_items (kind, id desc);
create index activity_items_runner on activity_items (runner_id, id desc) where runner_id is not null;

-- Instance secrets (`chat.bot_token`, `codehost.app_private_key`, `codehost.webhook_secret`) were stored
-- and shown on the Settings page, but nothing ever read them: a GitHub App keeps its own key and webhook
-- secret, a chat channel its own token (issue #36 item 4: a setting that does nothing must not exist).
-- The API and the page no longer have them. The table stays for one release: the previous release reads it
-- at start-up (its key check), and a rolling upgrade runs both (docs/operations.md, "expand, then contract
-- one release later"); the release after this one drops it.
-- Their stored values go now (an empty table is what the previous release shows when none was set).
delete from instance_secrets;
