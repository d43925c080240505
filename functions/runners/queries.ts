// The runners API's statements (functions/runners/routes.ts reads as validate → call → present): rows of
// runners (sql/0003_runners.sql) with their presence, the projects a runner serves and its last events.
// Pairing codes are pairing.ts's; presence (onlineSql) is presence.ts's.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { onlineSql } from './presence.ts';

export interface RunnerRow {
  id: string;
  name: string;
  hostname: string;
  version: string;
  target: string;
  capabilities: string[];
  paired_at: Date | null;
  revoked_at: Date | null;
  last_seen_at: Date | null;
  online: boolean;
  profiles: unknown;
  profiles_reported_at: Date | null;
  tags: string[];
  max_concurrent_runs: number | null;
  running_runs: number | null;
}

const selectRunners = sql`select r.*, ${onlineSql} as online from runners r`;

/** The runners not removed, by name. */
export const listRunners = (q: Queryable) => q.query<RunnerRow>(sql`${selectRunners} where r.removed_at is null order by lower(r.name), r.created_at`);

/** A runner not removed, with its presence; null when there is none. */
export async function runnerRow(q: Queryable, id: string): Promise<RunnerRow | null> {
  const [row] = await q.query<RunnerRow>(sql`${selectRunners} where r.id = ${id} and r.removed_at is null`);
  return row ?? null;
}

/** Whether a runner exists and was not removed. */
export async function runnerExists(q: Queryable, id: string): Promise<boolean> {
  const [r] = await q.query(sql`select 1 from runners where id = ${id} and removed_at is null`);
  return Boolean(r);
}

export async function insertRunner(q: Queryable, id: string, name: string): Promise<void> {
  await q.query(sql`insert into runners (id, name) values (${id}, ${name})`);
}

/** How many other runners (not removed) have this name, case-insensitive. */
export async function sameNameCount(q: Queryable, name: string, except: string): Promise<number> {
  const [dup] = await q.query<{ n: number }>(sql`
    select count(*)::int as n from runners where lower(name) = lower(${name}) and id <> ${except} and removed_at is null`);
  return dup.n;
}

/** The projects a runner serves, by name. */
export const runnerProjects = (q: Queryable, runnerId: string) =>
  q.query<{ id: string; name: string; root_path: string | null }>(sql`select id, name, root_path from projects where runner_id = ${runnerId} order by lower(name)`);

/** The projects whose pool a runner is a member of (project_runners), by name. */
export const poolProjects = (q: Queryable, runnerId: string) =>
  q.query<{ id: string; name: string; root_path: string }>(sql`
    select p.id, p.name, m.root_path from project_runners m join projects p on p.id = m.project_id where m.runner_id = ${runnerId} order by lower(p.name)`);

/** A runner's last events, newest first. */
export const lastEvents = (q: Queryable, runnerId: string, limit: number) =>
  q.query<{ kind: string; source: string; ts: Date; received_at: Date }>(sql`
    select kind, source, ts, received_at from runner_events where runner_id = ${runnerId} order by received_at desc, event_id desc limit ${limit}`);

/** The runner serving a project (null: none); undefined when there is no such project. */
export async function projectRunner(q: Queryable, projectId: string): Promise<string | null | undefined> {
  const [p] = await q.query<{ runner_id: string | null }>(sql`select runner_id from projects where id = ${projectId}`);
  return p?.runner_id;
}

/** The project a skill run belongs to; undefined when there is no such run. */
export async function runProject(q: Queryable, runId: string): Promise<string | undefined> {
  const [run] = await q.query<{ project_id: string }>(sql`select project_id from skill_runs where id = ${runId}`);
  return run?.project_id;
}

/** Whether a user is a member of a project this runner serves. */
export async function memberOnRunner(q: Queryable, runnerId: string, userId: string): Promise<boolean> {
  const [member] = await q.query(sql`
    select 1 from project_members m join projects p on p.id = m.project_id
     where p.runner_id = ${runnerId} and m.user_id = ${userId} limit 1`);
  return Boolean(member);
}

/** Revokes a runner; false when it is gone or revoked already. The token's hash is kept (see the route). */
export async function revokeRunner(q: Queryable, id: string): Promise<boolean> {
  const [r] = await q.query(sql`update runners set revoked_at = now() where id = ${id} and revoked_at is null returning 1`);
  return Boolean(r);
}

/** Removes an unpaired or revoked runner and uses up its pairing codes; false when it was paired (or removed) meanwhile. */
export async function removeRunner(q: Queryable, id: string): Promise<boolean> {
  await q.query(sql`update pairing_codes set used_at = coalesce(used_at, now()) where runner_id = ${id}`);
  const [r] = await q.query(sql`update runners set removed_at = now(), token_hash = null where id = ${id} and removed_at is null and (paired_at is null or revoked_at is not null) returning 1`);
  return Boolean(r);
}

/** The runner holding a token (by its hash), removed or not. */
export async function runnerByToken(q: Queryable, tokenHash: string): Promise<{ id: string; name: string; revoked_at: Date | null } | null> {
  const [runner] = await q.query<{ id: string; name: string; revoked_at: Date | null }>(sql`select id, name, revoked_at from runners where token_hash = ${tokenHash}`);
  return runner ?? null;
}

/** Replace a runner's tags (deduplicated and sorted); false when there is no such runner. */
export async function setRunnerTags(q: Queryable, id: string, tags: string[]): Promise<boolean> {
  const [r] = await q.query(sql`update runners set tags = ${sql.json(normalTags(tags))}::jsonb where id = ${id} and removed_at is null returning 1`);
  return Boolean(r);
}

/** Tags as stored: each once, sorted, so two runners with the same tags compare equal. */
export const normalTags = (tags: readonly string[]): string[] => [...new Set(tags)].sort();
