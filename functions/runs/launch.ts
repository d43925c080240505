// Starting a run on behalf of the one who set it up (spec: Inbound delivery states; docs/schedules.md):
// the one operation the trigger firer (triggers/fire.ts) and the schedule runner (schedules/runner.ts)
// share: whether the creator may still start runs, then `skill.run` (or `orchestrator.start {next}`)
// checked against its argument schema, sent to the project's runner, and its outcome in their words.
import { COMMANDS } from '../../protocol/commands.ts';
import type { RunnerHub } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

/** Is the creator still an active user with the admin role on the project (project or instance admin)? */
export async function creatorAuthorized(q: Queryable, userId: string, projectId: string): Promise<boolean> {
  const [row] = await q.query<{ ok: boolean }>(sql`
    select u.active and (u.instance_admin or exists (
             select 1 from project_members m where m.project_id = ${projectId} and m.user_id = u.id and m.role = 'admin')) as ok
      from users u where u.id = ${userId}`);
  return Boolean(row?.ok);
}

export interface SendOutcome {
  status: 'fired' | 'failed';
  reason?: 'runner_offline' | 'command_refused' | 'command_timeout' | 'interrupted';
  detail?: string;
  runId?: string;
}

export interface SkillRunSpec {
  projectId: string;
  skill: string;
  args: string[];
  profile: string | null;
  model: string | null;
  output: 'report' | 'pull_request';
  /** A pool run's id, chosen by the server (runs/pool.ts); only to runners that announced POOL_CAPABILITY. */
  runId?: string;
}

/** `skill.run` to the project's runner on behalf of `actor`. */
export function sendSkillRun(hub: Pick<RunnerHub, 'command'>, runnerId: string | null, s: SkillRunSpec, actor: string): Promise<SendOutcome> {
  const raw = { projectId: s.projectId, skill: s.skill, args: s.args, output: s.output, ...(s.profile ? { profileId: s.profile } : {}), ...(s.model ? { model: s.model } : {}), ...(s.runId ? { runId: s.runId } : {}) };
  return sendCommand(hub, runnerId, 'skill.run', raw, actor);
}

export async function sendCommand(hub: Pick<RunnerHub, 'command'>, runnerId: string | null, name: 'skill.run' | 'orchestrator.start', raw: unknown, actor: string): Promise<SendOutcome> {
  if (!runnerId) return { status: 'failed', reason: 'runner_offline', detail: 'the project has no runner' };
  const parsed = COMMANDS[name].args.safeParse(raw);
  if (!parsed.success) return { status: 'failed', reason: 'command_refused', detail: `invalid_args: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
  const outcome = await hub.command(runnerId, name, parsed.data, actor);
  switch (outcome.status) {
    case 'done': {
      const runId = (outcome.data as { runId?: unknown } | null)?.runId;
      return { status: 'fired', runId: typeof runId === 'string' ? runId : undefined };
    }
    case 'failed':
      return { status: 'failed', reason: 'command_refused', detail: `${outcome.error.code}: ${outcome.error.message}` };
    case 'offline':
      return { status: 'failed', reason: 'runner_offline', detail: 'the runner is offline; nothing was sent' };
    case 'timeout':
      return { status: 'failed', reason: 'command_timeout', detail: `${name} got no answer within ${COMMANDS[name].timeoutMs / 1000} s` };
  }
}
