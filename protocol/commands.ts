// The closed allowlist of server commands to a runner (spec: Server commands to a runner), shared by
// the server (role check, argument validation, timeout) and the runner (validation again, dispatch).
// A command's timeout is how long the server waits for the answer, not how long the work may run.
import * as z from 'zod';
import { COMMAND_NAMES } from './command-names.ts';
import type { CommandName } from './command-names.ts';
import { RUNTIMES } from './runtimes.ts';
import { skillSource } from './skill-source.ts';

export const ROLE_NAMES = ['viewer', 'operator', 'admin'] as const;
export type CommandRole = (typeof ROLE_NAMES)[number];

const id = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be 1-64 letters, digits, _ or -' });
const projectId = id;
const slot = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, { message: 'must be a slot label' });
/** An absolute path without `..` segments or NUL; the runner confines it further to project roots. */
export const absolutePath = z
  .string()
  .max(4096)
  .refine((p) => p.startsWith('/') && !p.includes('\0') && !p.split('/').includes('..'), { message: 'must be an absolute path without ..' });
const prNumber = z.number().int().min(1).max(2 ** 31 - 1);
const text = (max: number) => z.string().max(max);
const none = z.strictObject({});

/** Agent runtimes (protocol/runtimes.ts, runner/runtimes/): skills install into each one's skills directory. */
const runtime = z.enum(RUNTIMES);
export { skillSource } from './skill-source.ts';
export type { SkillSource } from './skill-source.ts';
const utf8 = new TextEncoder();
/** Arguments of a skill run: passed to the agent literally, never through a shell. */
const skillArgs = z
  .array(z.string().max(4096).refine((a) => !a.includes('\0'), { message: 'must not contain NUL' }))
  .max(64)
  .refine((a) => a.reduce((n, x) => n + utf8.encode(x).length, 0) <= 16384, { message: 'must be at most 16384 bytes in all' })
  .default([]);

interface Spec<A extends z.ZodType> {
  minRole: CommandRole;
  timeoutMs: number;
  args: A;
  /** Whether the command acts on one project (args.projectId); others act on the runner. */
  project: boolean;
}
const spec = <A extends z.ZodType>(minRole: CommandRole, timeoutMs: number, args: A, project: boolean): Spec<A> => ({ minRole, timeoutMs, args, project });
const s = 1000;

export const COMMANDS = {
  'runner.ping': spec('viewer', 30 * s, none, false),
  'runner.describe': spec('viewer', 30 * s, none, false),
  'project.inspect': spec('admin', 45 * s, z.strictObject({ path: absolutePath }), false),
  'project.refresh': spec('operator', 45 * s, z.strictObject({ projectId }), true),
  'session.backfill': spec('admin', 10 * 60 * s, z.strictObject({ projectId, since: z.iso.datetime().optional() }), true),
  // `next: true` is the "next round" action: start the orchestrator, or nudge it when it is idle.
  'orchestrator.start': spec('operator', 30 * s, z.strictObject({ projectId, profileId: id.optional(), next: z.boolean().default(false) }), true),
  'orchestrator.stop': spec('operator', 10 * s, z.strictObject({ projectId }), true),
  'orchestrator.status': spec('viewer', 5 * s, z.strictObject({ projectId }), true),
  // hold: the issue may not be dispatched again until slot.resume (a reached cap, docs/cost.md "Caps").
  'slot.stop': spec('operator', 10 * s, z.strictObject({ projectId, slot, hold: z.strictObject({ issue: z.number().int().min(1).max(2 ** 31 - 1), reason: z.enum(['cap', 'stopped']) }).optional() }), true),
  'slot.resume': spec('operator', 30 * s, z.strictObject({ projectId, slot, issue: z.number().int().min(1).max(2 ** 31 - 1) }), true),
  'slot.message': spec('operator', 10 * s, z.strictObject({ projectId, slot, message: text(20_000).min(1) }), true),
  // `labels` is newer than the command: senders omit it when empty, so an older runner still accepts it.
  'issue.create': spec(
    'operator',
    45 * s,
    z.strictObject({
      projectId,
      title: text(256).min(1),
      body: text(65_536).default(''),
      labels: z.array(z.string().min(1).max(50).refine((l) => !/[\0\n\r]/.test(l), { message: 'must be one line' })).max(20).optional(),
    }),
    true,
  ),
  'issues.refresh': spec('operator', 45 * s, z.strictObject({ projectId }), true),
  'collector.poll': spec('admin', 30 * s, z.strictObject({ projectId: projectId.optional() }), false),
  'pr.inspect': spec('viewer', 30 * s, z.strictObject({ projectId, number: prNumber }), true),
  'pr.approve': spec('operator', 10 * s, z.strictObject({ projectId, number: prNumber, comment: text(10_000).optional() }), true),
  'pr.requestChanges': spec('operator', 10 * s, z.strictObject({ projectId, number: prNumber, comment: text(10_000).min(1) }), true),
  'pr.voidApproval': spec('operator', 10 * s, z.strictObject({ projectId, number: prNumber }), true),
  // The server's cost block (protocol/cost-block.ts; docs/cost.md): the runner reads the description, rewrites
  // only the marked block and writes it back when it changed. Sent by the server's job, never by a person.
  'pr.describe': spec('admin', 30 * s, z.strictObject({ projectId, number: prNumber, block: text(4000).min(1) }), true),
  'terminal.attach': spec(
    'admin',
    10 * s,
    z.strictObject({
      projectId,
      session: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, { message: 'must be a tmux session name' }),
      channel: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, { message: 'must be a terminal channel id' }),
      cols: z.number().int().min(2).max(1000).optional(),
      rows: z.number().int().min(2).max(1000).optional(),
    }),
    true,
  ),
  'skill.search': spec('operator', 15 * s, z.strictObject({ query: text(200).default('') }), false),
  'skill.inspect': spec('operator', 2 * 60 * s, z.strictObject({ source: skillSource }), false),
  // A profileId installs into that profile's config dir and needs admin (the server checks it).
  'skill.install': spec('operator', 3 * 60 * s, z.strictObject({ source: skillSource, runtime: runtime.optional(), profileId: id.optional() }), false),
  'skill.uninstall': spec('admin', 10 * s, z.strictObject({ name: id, runtime: runtime.optional(), profileId: id.optional(), force: z.boolean().default(false) }), false),
  'skill.list': spec('viewer', 60 * s, none, false),
  'skill.run': spec(
    'operator',
    30 * s,
    z.strictObject({
      projectId,
      skill: id,
      args: skillArgs,
      profileId: id.optional(),
      model: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/\[\]-]{0,99}$/, { message: 'must be a model name (letters, digits, . _ : / [ ] -)' }).optional(),
      output: z.enum(['report', 'pull_request']).default('report'),
      timeoutSec: z.number().int().min(60).max(21600).optional(),
      /** A pool run's id, chosen by the server (functions/runs/pool.ts): the runner uses it instead of picking
       *  one, and answers a second skill.run with the same id with the first run (never two runs). Sent only
       *  to runners that announce POOL_CAPABILITY (protocol/frames.ts): an older runner's strict schema refuses it. */
      runId: id.optional(),
    }),
    true,
  ),
  'skill.cancel': spec('operator', 15 * s, z.strictObject({ projectId, runId: id }), true),
} as const satisfies Record<CommandName, Spec<z.ZodType>>;

/** Commands that only read: running one twice changes nothing, so the server may send one again after its
 *  runner reconnected without knowing whether the first copy arrived (functions/runners/commands.ts sendUnanswered). */
export const READ_ONLY_COMMANDS: ReadonlySet<string> = new Set(['runner.ping', 'runner.describe', 'orchestrator.status', 'pr.inspect', 'skill.list', 'skill.search']);

/** Commands that act on a project's code-host repository: in App mode their frame carries the repository's
 *  installation token (protocol/frames.ts `codehost`), never their args (functions/runners/commands.ts). */
export const CODEHOST_COMMANDS: ReadonlySet<string> = new Set(['issues.refresh', 'issue.create', 'pr.inspect', 'pr.approve', 'pr.requestChanges', 'pr.voidApproval', 'pr.describe', 'collector.poll', 'skill.run']);

export { COMMAND_NAMES };
export type { CommandName };
export const isCommandName = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name);
export type CommandArgs<N extends CommandName> = z.output<(typeof COMMANDS)[N]['args']>;

/** Error codes a runner answers a command with (besides command-specific ones). */
export const COMMAND_ERRORS = {
  unknown_command: 'the runner does not know this command',
  disabled: 'this machine refuses the command (disabledCommands in runner.json)',
  invalid_args: 'the arguments do not match the command',
  not_implemented: 'this runner version does not implement the command yet',
  path_not_allowed: 'the path is outside the registered project roots and their worktrees',
  failed: 'the command failed',
} as const;
