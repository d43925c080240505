-- 0038: the steps of a pull request's record (issue #40 part 3; functions/codehost/record.ts,
-- docs/orchestrator.md "A record per pull request"): each approval done through svc and each merge, with
-- the pull request's checks as the server knew them at that moment (they change afterwards) and the
-- audit record that says it happened (its seq; its hash is read from audit_records, which never change).
--
-- Written by a trigger on the audit log itself, so every way a step is audited records it, in the same
-- transaction: an approval through the commands API (action `pr.approve`, via `page` or `api`,
-- functions/runners/routes.ts), through an action link (`pr.approve` via `link`, functions/act/), and a
-- merge the code host reported (`pr.merged`, via `runner` or `app`, functions/codehost/pulls.ts). The
-- audit record names the project (target) and the pull request (`diff.number`).
create table pull_steps (
  id bigserial primary key,
  project_id text not null references projects (id) on delete cascade,
  number integer not null,
  step text not null check (step in ('approved', 'merged')),
  via text not null,
  user_id text references users (id) on delete set null,
  actor_label text not null,
  at timestamptz not null,
  -- the pull request as codehost_pulls held it then (null: svc had not seen it)
  opens integer,
  state text,
  head_sha text,
  checks text,
  checks_sha text,
  checks_summary text,
  checks_at timestamptz,
  audit_seq bigint not null unique
);
create index pull_steps_pull on pull_steps (project_id, number, audit_seq);

create function audit_records_pull_step() returns trigger language plpgsql as $$
begin
  insert into pull_steps (project_id, number, step, via, user_id, actor_label, at, opens, state, head_sha, checks, checks_sha, checks_summary, checks_at, audit_seq)
  select new.target_id, (new.diff ->> 'number')::integer, case when new.action = 'pr.merged' then 'merged' else 'approved' end,
         coalesce(new.diff ->> 'via', 'api'), u.id, new.actor_label, new.at, p.opens, p.state, p.head_sha, p.checks, p.checks_sha, p.checks_summary,
         p.checks_at, new.seq
    from projects pr
    left join codehost_pulls p on p.project_id = pr.id and p.number = (new.diff ->> 'number')::integer
    left join users u on u.id = new.actor_id
   where pr.id = new.target_id;
  return null;
end $$;

create trigger audit_records_pull_steps after insert on audit_records for each row
  when (new.action in ('pr.approve', 'pr.merged') and new.target_type = 'project' and jsonb_typeof(new.diff -> 'number') = 'number')
  execute function audit_records_pull_step();

-- Approvals audited before this migration (action links, since 0036): their steps, with the checks
-- unknown (null: not stored at the time).
insert into pull_steps (project_id, number, step, via, user_id, actor_label, at, audit_seq)
select a.target_id, (a.diff ->> 'number')::integer, 'approved', coalesce(a.diff ->> 'via', 'api'), u.id, a.actor_label, a.at, a.seq
  from audit_records a join projects pr on pr.id = a.target_id left join users u on u.id = a.actor_id
 where a.action = 'pr.approve' and a.target_type = 'project' and jsonb_typeof(a.diff -> 'number') = 'number'
 order by a.seq;
