// A runner's watch list (spec: Runner connection, `welcome` and `projects` frames): the projects assigned
// to it that have a root. `repo` only for a runner that announced `codehost` (an older runner's strict
// schema would refuse it).
import { REPO } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

export async function watchList(q: Queryable, runnerId: string, withRepo = false): Promise<{ id: string; root: string; repo?: string }[]> {
  const rows = await q.query<{ id: string; root: string; repo: string }>(sql`
    select id, root_path as root, repo from projects where runner_id = ${runnerId} and root_path is not null order by id`);
  return rows.map((r) => (withRepo && REPO.test(r.repo) ? { id: r.id, root: r.root, repo: r.repo } : { id: r.id, root: r.root }));
}
