// What the command line needs before it loads a command: each command's flags, the check of a JSON-object
// flag (emit --data, spool-append --payload) and the two errors it turns
// into exit codes. cli.ts imports a command's module only when it runs that command, so that `emit`,
// `usage` or `status` do not load and evaluate the daemon's code (the WebSocket client, the OTLP
// receiver's protobuf descriptors); this module imports nothing.

/** Wrong arguments: exit 2 with the usage text. */
export class UsageError extends Error {}

/** A flag's value that must be a JSON object (`--data`, `--payload`); `{}` when the flag is absent.
 *  `UsageError(message)` when it is not valid JSON or not an object. */
export function jsonObjectFlag(text: string | undefined, message: string): Record<string, unknown> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(message);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(message);
  return value as Record<string, unknown>;
}

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
export const USAGE_FLAGS = ['json', 'since', 'until', 'tz', 'runtime', 'rescan'];
