// The names of the closed allowlist of server commands to a runner (spec: Server commands to a runner),
// apart from their argument schemas (commands.ts): runner.json's `disabledCommands` is checked against
// them, and reading runner.json — which every `svc-runner` command does — should not build the 25
// commands' zod schemas. commands.ts' table must have exactly these keys (checked by the compiler).
export const COMMAND_NAMES = [
  'runner.ping',
  'runner.describe',
  'project.inspect',
  'project.refresh',
  'session.backfill',
  'orchestrator.start',
  'orchestrator.stop',
  'orchestrator.status',
  'slot.stop',
  'slot.message',
  'slot.resume',
  'issue.create',
  'issues.refresh',
  'collector.poll',
  'pr.inspect',
  'pr.approve',
  'pr.requestChanges',
  'pr.voidApproval',
  'pr.describe',
  'terminal.attach',
  'skill.search',
  'skill.inspect',
  'skill.install',
  'skill.uninstall',
  'skill.list',
  'skill.run',
  'skill.cancel',
] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];
