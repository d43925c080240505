-- 0023: whether a project's root path was checked on its runner (issue #34, "a project on a path that
-- does not exist"; functions/projects/root-check.ts). On create and on a change of runner or root the
-- server asks the runner (project.inspect) whether the root is the top directory of a git work tree.
--   ok         the runner answered: a repository is there
--   unchecked  the runner was offline (or did not answer): checked again when it connects
--   failed     a later check found no repository there; root_check_message says what to do
-- Null while the project has no runner or no root. Projects made before this migration are checked the
-- next time their runner connects.
alter table projects
  add column root_check text check (root_check in ('ok', 'unchecked', 'failed')),
  add column root_check_message text,
  add column root_checked_at timestamptz;

update projects set root_check = 'unchecked' where runner_id is not null and root_path is not null;

-- The runner's connection looks up the roots it must check (few rows; most projects are 'ok').
create index projects_root_unchecked on projects (runner_id) where root_check in ('unchecked', 'failed');
