// What every command handler gets, and the error value a handler fails with.
import type { ProjectEntry, RunnerConfig } from '../config.ts';
import type { Env } from '../paths.ts';
import type { Terminals } from '../terminal.ts';
import type { Ingest } from '../usage/ingest.ts';

export interface CommandContext {
  config: RunnerConfig;
  /** The current watch list (welcome/projects frames), for confinement. */
  projects: () => readonly ProjectEntry[];
  env: Env;
  startedAt: number;
  /** Open terminals (terminal.attach); absent where no daemon connection relays them. */
  terminals?: Terminals;
  /** The transcript ingest (session.backfill); absent outside the daemon. */
  ingest?: Ingest;
}

/** A command failure with its own code (for example `path_not_allowed`), answered as `ok: false`. */
export class CommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Capabilities this runner announces: `terminal` unless `terminal.attach` is disabled. */
export function capabilities(config: RunnerConfig): string[] {
  return config.disabledCommands.includes('terminal.attach') ? [] : ['terminal'];
}
