// What the command line needs before it loads a command: each command's flags and the two errors it turns
// into exit codes. cli.ts imports a command's module only when it runs that command, so that `emit`,
// `usage` or `status` do not load and evaluate the daemon's code (the WebSocket client, the OTLP
// receiver's protobuf descriptors); this module imports nothing.

/** Wrong arguments: exit 2 with the usage text. */
export class UsageError extends Error {}

/** runner.json exists and is invalid: exit 1 with one line per bad field. */
export class ConfigError extends Error {
  constructor(
    readonly path: string,
    readonly problems: string[],
  ) {
    super(`${path} is invalid and was not used:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** `emit`: flags that become `data` keys as text; the others are read as numbers, JSON or paths. */
export const EMIT_TEXT_FLAGS = ['summary', 'checkpoint', 'reason', 'question', 'title', 'branch', 'state', 'profile'] as const;
export const EMIT_FLAGS = ['slot', 'issue', 'data', 'pr', 'url', 'project-root', ...EMIT_TEXT_FLAGS];
export const SLOT_START_FLAGS = ['issue', 'profile', 'branch', 'base', 'title', 'project-root'];
export const USAGE_FLAGS = ['json', 'since', 'until', 'tz', 'runtime'];
