// The command registry (spec: Server commands to a runner): the shared allowlist of
// protocol/commands.ts with this runner's handlers. Order of checks: unknown name → `unknown_command`;
// listed in `disabledCommands` → `disabled`; arguments that fail the shared zod schema → `invalid_args`
// (naming the fields); no handler in this version → `not_implemented`; a project this runner serves only as
// a pool member (watch-list `pool: true`) and a command that is not a skill run's → `not_primary`. A handler fails with a
// CommandError (its own code) or anything else (`failed`). No handler ever runs a shell string.
import { COMMANDS, COMMAND_ERRORS, isCommandName } from '../../protocol/commands.ts';
import type { CommandArgs, CommandName } from '../../protocol/commands.ts';
import { describeIssues } from '../config.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';
import { collectorPoll, issueCreate, issuesRefresh, prInspect } from './codehost.ts';
import { runnerDescribe } from './describe.ts';
import { orchestratorStart, orchestratorStatus, orchestratorStop } from './orchestrator.ts';
import { runnerPing } from './ping.ts';
import { projectInspect, projectRefresh } from './project.ts';
import { prApprove, prDescribe, prRequestChanges, prVoidApproval } from './pr.ts';
import { skillCancel, skillInspect, skillInstall, skillList, skillRun, skillSearch, skillUninstall } from './skill.ts';
import { sessionBackfill } from './session.ts';
import { slotMessage, slotResume, slotStop } from './slot.ts';
import { terminalAttach } from './terminal.ts';

export { CommandError } from '../errors.ts';
export { capabilities } from './context.ts';
export type { CommandContext } from './context.ts';

type Handler<N extends CommandName> = (args: CommandArgs<N>, ctx: CommandContext) => Promise<unknown>;
type Handlers = { [N in CommandName]?: Handler<N> };

export const HANDLERS: Handlers = {
  'runner.ping': runnerPing,
  'terminal.attach': terminalAttach,
  'runner.describe': runnerDescribe,
  'project.inspect': projectInspect,
  'project.refresh': projectRefresh,
  'session.backfill': sessionBackfill,
  'orchestrator.start': orchestratorStart,
  'orchestrator.stop': orchestratorStop,
  'orchestrator.status': orchestratorStatus,
  'slot.stop': slotStop,
  'slot.message': slotMessage,
  'slot.resume': slotResume,
  'issue.create': issueCreate,
  'issues.refresh': issuesRefresh,
  'collector.poll': collectorPoll,
  'pr.inspect': prInspect,
  'pr.approve': prApprove,
  'pr.requestChanges': prRequestChanges,
  'pr.voidApproval': prVoidApproval,
  'pr.describe': prDescribe,
  'skill.run': skillRun,
  'skill.cancel': skillCancel,
  'skill.search': skillSearch,
  'skill.inspect': skillInspect,
  'skill.install': skillInstall,
  'skill.uninstall': skillUninstall,
  'skill.list': skillList,
};

/**
 * What a pool member serves for a project (docs/runner.md "Runner pools"): its skill runs, the session
 * transcripts they leave (session.backfill) and a read of the clone (project.refresh). The orchestrator,
 * slots, terminal, issues and pull requests of the project stay on its primary runner.
 */
const POOL_SERVED: ReadonlySet<CommandName> = new Set(['skill.run', 'skill.cancel', 'session.backfill', 'project.refresh']);

export type CommandResult = { ok: true; data: unknown } | { ok: false; error: { code: string; message: string } };
const fail = (code: string, message: string): CommandResult => ({ ok: false, error: { code, message: message.slice(0, 2000) } });

export async function runCommand(name: string, args: unknown, ctx: CommandContext): Promise<CommandResult> {
  if (!isCommandName(name)) return fail('unknown_command', `${COMMAND_ERRORS.unknown_command}: ${name.slice(0, 64)}`);
  if (ctx.config.disabledCommands.includes(name)) return fail('disabled', `${name}: ${COMMAND_ERRORS.disabled}`);
  const parsed = COMMANDS[name].args.safeParse(args ?? {});
  if (!parsed.success) return fail('invalid_args', `${name}: ${describeIssues(parsed.error.issues).join('; ')}`);
  const projectId = (parsed.data as { projectId?: string }).projectId;
  if (projectId && !POOL_SERVED.has(name) && ctx.projects().some((p) => p.id === projectId && p.pool)) {
    return fail('not_primary', `${name}: this runner serves project ${projectId} only as a pool member (skill runs); its orchestrator, slots, terminal, issues and pull requests are on its primary runner`);
  }
  const handler = HANDLERS[name] as Handler<typeof name> | undefined;
  if (!handler) return fail('not_implemented', `${name}: ${COMMAND_ERRORS.not_implemented}`);
  try {
    return { ok: true, data: (await handler(parsed.data as never, ctx)) ?? null };
  } catch (err) {
    if (err instanceof CommandError) return fail(err.code, err.message);
    return fail('failed', `${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
