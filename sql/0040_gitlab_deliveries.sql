-- 0040: GitLab webhook deliveries (issue 42; docs/gitlab.md "Webhook"), in the same table and under the
-- same 14-day retention as the GitHub App's: `project_id` names the project whose hook received it,
-- `delivery_id` is X-Gitlab-Event-UUID, unique per project, so a redelivery is recorded once. A delivery
-- refused for a wrong X-Gitlab-Token is recorded too (outcome `unauthorized`, no delivery id: it must not
-- make the genuine delivery with that UUID look like a duplicate).
alter table codehost_deliveries add column project_id text references projects (id) on delete cascade;
create unique index codehost_deliveries_project_delivery on codehost_deliveries (project_id, delivery_id) where project_id is not null;
