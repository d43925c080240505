// Checking a project's root on its runner (issue #34, "a project on a path that does not exist").
//
// 1. On create, and on a change of runner or root path, the route asks the runner with project.inspect
//    whether the root is the top directory of a git work tree (checkRoot). A refusal is a 422 naming
//    `rootPath` with what to do; an answer records `ok`.
// 2. When the runner is offline, does not answer in time, or does not announce ROOTS_CAPABILITY (it has
//    project.inspect disabled, or is an older release), the project is accepted and recorded `unchecked`.
// 3. When a runner that announces the capability connects (hello), its unchecked and failed roots are
//    checked again (recheckRoots) and the result recorded; a failure shows on the Projects page. The
//    roots of its clones in projects' pools (project_runners) are checked the same way.
// project.inspect does not tell a path that does not exist from a directory that is not a repository
// (runner/commands/project.ts: it does not probe paths outside the registered roots), so one sentence
// covers both, and `git clone` fixes both.
import { ROOTS_CAPABILITY } from '../../protocol/frames.ts';
import type { CommandName } from '../../protocol/commands.ts';
import { publish } from '../live/publish.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { HttpError } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
import type { CommandOutcome } from '../lib/context.ts';

/** The one thing this file needs of the hub: send a command and wait for its outcome. */
export interface Commander {
  command(runnerId: string, name: CommandName, args: unknown, userId: string | null): Promise<CommandOutcome>;
}

export type RootCheck =
  | { state: 'ok'; real: string }
  | { state: 'unchecked'; message: string }
  | { state: 'failed'; message: string };

/** The runner's refusals that mean "no repository at this path" (anything else leaves the root unchecked). */
const NO_REPOSITORY = new Set(['not_a_repository', 'path_not_allowed']);

export function noRepositoryMessage(path: string, repo: string): string {
  return `${path} is not a git repository on the runner: run \`git clone <URL of ${repo}> ${path}\` there first, or give the top directory of an existing clone`;
}

/** Ask the runner whether `path` is the top directory of a git work tree. */
export async function checkRoot(db: Queryable, hub: Commander, runnerId: string, path: string, repo: string, userId: string | null): Promise<RootCheck> {
  const [runner] = await db.query<{ capabilities: string[] | null }>(sql`select capabilities from runners where id = ${runnerId}`);
  if (!runner?.capabilities?.includes(ROOTS_CAPABILITY)) {
    return { state: 'unchecked', message: 'the runner has not announced that it checks project roots (project.inspect disabled, or an older release)' };
  }
  const outcome = await hub.command(runnerId, 'project.inspect', { path }, userId);
  switch (outcome.status) {
    case 'done':
      return { state: 'ok', real: String((outcome.data as { root?: unknown })?.root ?? path) };
    case 'offline':
      return { state: 'unchecked', message: 'the runner is offline: the root is checked when it connects' };
    case 'timeout':
      return { state: 'unchecked', message: 'the runner did not answer in time: the root is checked when it connects again' };
    case 'failed':
      if (NO_REPOSITORY.has(outcome.error.code)) return { state: 'failed', message: noRepositoryMessage(path, repo) };
      if (outcome.error.code === 'git_not_found') return { state: 'failed', message: `git is not installed on the runner's machine: install it there, then save the project again` };
      return { state: 'unchecked', message: `the runner could not check the root: ${outcome.error.message}` };
  }
}

/** A failed check on create or change: 422 naming rootPath. */
export const rootRefused = (message: string) => new HttpError(422, 'root_not_a_repository', `invalid fields: rootPath: ${message}`, { rootPath: message });

/** Record a check's result on the project (state, message, when). */
export async function recordRootCheck(db: Queryable, projectId: string, check: RootCheck | null): Promise<void> {
  const message = check && check.state !== 'ok' ? check.message : null;
  await db.query(sql`
    update projects set root_check = ${check?.state ?? null}, root_check_message = ${message},
           root_checked_at = case when ${check !== null && check.state !== 'unchecked'} then now() end
     where id = ${projectId}`);
}

/**
 * Check again the roots of a runner that just connected: those never checked (it was offline) and those
 * that failed (someone may have cloned the repository since). Runs beside the connection, never in its way.
 */
export async function recheckRoots(db: Queryable, hub: Commander, log: Logger, runnerId: string): Promise<void> {
  const rows = await db.query<{ id: string; root_path: string; repo: string; root_check: string }>(sql`
    select id, root_path, repo, root_check from projects
     where runner_id = ${runnerId} and root_path is not null and root_check in ('unchecked', 'failed') order by id`);
  for (const p of rows) {
    const check = await checkRoot(db, hub, runnerId, p.root_path, p.repo, null);
    if (check.state === 'unchecked') continue; // still unknown: keep what was recorded
    // Only if the project still has this runner and root: it may have been moved while the runner answered.
    const [updated] = await db.query(sql`
      update projects set root_check = ${check.state}, root_check_message = ${check.state === 'failed' ? check.message : null}, root_checked_at = now()
       where id = ${p.id} and runner_id = ${runnerId} and root_path = ${p.root_path} returning 1`);
    if (!updated) continue;
    if (check.state === 'failed') log.warn('project root check failed', { projectId: p.id, runnerId, reason: check.message });
    await publish(db, { type: 'project', projectId: p.id, change: 'updated' }, { projectId: p.id });
  }
  await recheckPoolRoots(db, hub, log, runnerId);
}

/** The same for the roots of the pools the runner is a member of (project_runners; docs/runner.md "Runner pools"). */
async function recheckPoolRoots(db: Queryable, hub: Commander, log: Logger, runnerId: string): Promise<void> {
  const rows = await db.query<{ project_id: string; root_path: string; repo: string }>(sql`
    select m.project_id, m.root_path, p.repo from project_runners m join projects p on p.id = m.project_id
     where m.runner_id = ${runnerId} and m.root_state in ('unchecked', 'failed') order by m.project_id`);
  for (const m of rows) {
    const check = await checkRoot(db, hub, runnerId, m.root_path, m.repo, null);
    if (check.state === 'unchecked') continue;
    // Only if the member still has this root: an admin may have changed it while the runner answered.
    const [updated] = await db.query(sql`
      update project_runners set root_state = ${check.state}, root_message = ${check.state === 'failed' ? check.message : null}
       where project_id = ${m.project_id} and runner_id = ${runnerId} and root_path = ${m.root_path} returning 1`);
    if (!updated) continue;
    if (check.state === 'failed') log.warn('pool root check failed', { projectId: m.project_id, runnerId, reason: check.message });
    await publish(db, { type: 'project', projectId: m.project_id, change: 'updated' }, { projectId: m.project_id });
  }
}
