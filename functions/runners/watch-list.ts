// A runner's watch list (spec: Runner connection, `welcome` and `projects` frames): the projects assigned
// to it that have a root. `repo` only for a runner that announced `codehost` (an older runner's strict
// schema would refuse it). In App mode (docs/github-app.md, "App mode on the runners") the `projects`
// frame also carries, outside the list, the installation token of each of those repositories that an App
// acts for — only to runners that announced `codehost.tokens` — and AppTokenRefresher sends it again
// before those tokens run out, so a runner never holds an expired one. A pool member (issue #37) also gets
// the projects whose pool it is in, with its own root and `pool: true`, once it announced POOL_CAPABILITY.
import { CODEHOST_GITLAB_CAPABILITY, POOL_CAPABILITY, REPO } from '../../protocol/frames.ts';
import type { CodehostToken, GitlabHost, ServerFrame } from '../../protocol/frames.ts';
import type { AppTokenSource } from '../codehost/app-mode.ts';
import { REFRESH_BEFORE_MS } from '../codehost/app-token.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { LeaseLoop } from '../lib/lease-loop.ts';
import type { Logger } from '../lib/log.ts';

export type WatchedProject = { id: string; root: string; repo?: string; host?: GitlabHost; pool?: true };

export async function watchList(q: Queryable, runnerId: string, withRepo = false): Promise<WatchedProject[]> {
  // A GitLab project (issue 42) is sent with `host` instead of `repo`, only to a runner that announced
  // CODEHOST_GITLAB_CAPABILITY (an older runner's strict schema would refuse the field).
  const rows = await q.query<{ id: string; root: string; repo: string; base_url: string | null; project_path: string | null }>(sql`
    select p.id, p.root_path as root, p.repo, c.base_url, c.project_path
      from projects p join runners r on r.id = p.runner_id
      left join project_codehosts c on c.project_id = p.id and coalesce(r.capabilities, '[]'::jsonb) @> ${sql.json([CODEHOST_GITLAB_CAPABILITY])}
     where p.runner_id = ${runnerId} and p.root_path is not null order by p.id`);
  const own: WatchedProject[] = rows.map((r) =>
    withRepo && r.base_url && r.project_path
      ? { id: r.id, root: r.root, host: { kind: 'gitlab' as const, baseUrl: r.base_url, path: r.project_path } }
      : withRepo && REPO.test(r.repo)
        ? { id: r.id, root: r.root, repo: r.repo }
        : { id: r.id, root: r.root },
  );
  // Pool memberships (issue #37, runs/pool.ts): the project with this runner's own clone, `pool: true` (skill
  // runs only), and only to a runner that announced POOL_CAPABILITY: an older runner's strict schema refuses
  // the field. A project it is the primary of is listed once, as its own.
  const pool = await q.query<{ id: string; root: string }>(sql`
    select m.project_id as id, m.root_path as root from project_runners m join runners r on r.id = m.runner_id
     where m.runner_id = ${runnerId} and coalesce(r.capabilities, '[]'::jsonb) @> ${sql.json([POOL_CAPABILITY])}
       and not exists (select 1 from projects p where p.id = m.project_id and p.runner_id = ${runnerId})
     order by m.project_id`);
  return [...own, ...pool.map((p) => ({ id: p.id, root: p.root, pool: true as const }))];
}

/** A runner's tokens are looked at again this long before the first of them expires… */
export const RESEND_BEFORE_MS = 10 * 60_000;
/** …and at least this often (an App installed since, or removed). */
const RECHECK_MS = 5 * 60_000;
/** How often the refresher looks for runners that are due (a look at memory; only due runners cost queries). */
const TICK_MS = 5_000;

interface Sent {
  /** The repositories and expiries last sent (a changed set is sent again). */
  key: string;
  checkAt: number;
}

/**
 * The `projects` frames of the runners held by this process, with their App tokens, and the loop that
 * sends them again when due: RESEND_BEFORE_MS before the first token expires (a new one is minted once
 * the shared cache reaches REFRESH_BEFORE_MS), and every RECHECK_MS. A token set that did not change is
 * not sent again.
 */
export class AppTokenRefresher {
  private readonly sent = new Map<string, Sent>();
  private readonly loop: LeaseLoop;

  constructor(
    private readonly o: {
      db: Queryable;
      log: Logger;
      tokens: AppTokenSource;
      now: () => number;
      /** The runners whose sockets this process holds, and whether each read repos (codehost). */
      held: () => { id: string; codehost: boolean }[];
      send: (runnerId: string, frame: ServerFrame) => boolean;
    },
  ) {
    this.loop = new LeaseLoop({ log: o.log, failed: 'App token refresh failed', pass: () => this.pass(), everyMs: TICK_MS, passAtStart: false });
  }

  start(): Promise<void> {
    return this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  forget(runnerId: string): void {
    this.sent.delete(runnerId);
  }

  /** The runner's `projects` frame; with its App tokens when it takes them (a failure to get them leaves them out). */
  async frame(runnerId: string, withRepo: boolean): Promise<ServerFrame> {
    const projects = await watchList(this.o.db, runnerId, withRepo);
    const codehost = withRepo ? await this.tokensOf(runnerId) : undefined;
    return codehost ? { type: 'projects', projects, codehost } : { type: 'projects', projects };
  }

  private async tokensOf(runnerId: string): Promise<CodehostToken[] | undefined> {
    const tokens = await this.o.tokens.forRunner(runnerId).catch((err) => {
      this.o.log.warn('no App tokens for the watch list: the runner uses its own token', { runnerId, error: err instanceof Error ? err.message : String(err) });
      this.sent.set(runnerId, { key: 'failed', checkAt: this.o.now() + 60_000 }); // the loop tries again
      return undefined;
    });
    if (!tokens) return undefined;
    const now = this.o.now();
    const earliest = Math.min(...tokens.map((t) => Date.parse(t.expiresAt)));
    // Before the resend window: at its start. In it: when the shared cache mints the next token.
    const due = earliest - now > RESEND_BEFORE_MS ? earliest - RESEND_BEFORE_MS : earliest - REFRESH_BEFORE_MS + 1000;
    this.sent.set(runnerId, { key: tokens.map((t) => `${t.repo}@${t.expiresAt}`).join(','), checkAt: Math.min(now + RECHECK_MS, Math.max(now + 1000, Number.isFinite(due) ? due : Infinity)) });
    return tokens;
  }

  /** The held runners that are due get their watch list again when their tokens changed. */
  private async pass(): Promise<void> {
    const now = this.o.now();
    const held = this.o.held();
    const ids = new Set(held.map((h) => h.id));
    for (const id of this.sent.keys()) if (!ids.has(id)) this.sent.delete(id);
    for (const h of held) {
      const before = this.sent.get(h.id);
      if (!h.codehost || !before || before.checkAt > now) continue;
      const frame = await this.frame(h.id, true);
      if (this.sent.get(h.id)?.key !== before.key) this.o.send(h.id, frame);
    }
  }
}
