// "The projects this runner serves" (issue #37): the projects it is the primary runner of, and those whose
// pool it is a member of (project_runners). Runner events that a pool run makes — its agent sessions and
// LLM requests (cost/ingest.ts), a quota hit or a question of its session (notifications/capture.ts,
// webhooks/capture.ts) — count for those projects. Events only a primary makes (orchestrator, slots,
// code-host polling: events/sinks/codehost.ts and fleet.ts) keep reading projects.runner_id.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

/** The SQL set of those project ids, for `id in ${servedProjects(runnerId)}`. */
export const servedProjects = (runnerId: string) => sql`(
  select id from projects where runner_id = ${runnerId}
  union select project_id from project_runners where runner_id = ${runnerId})`;

/** Their ids and repositories. */
export const servedProjectRows = (q: Queryable, runnerId: string) =>
  q.query<{ id: string; repo: string }>(sql`select id, repo from projects where id in ${servedProjects(runnerId)}`);
