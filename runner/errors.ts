// The error value a command handler fails with. Its own file so the modules that handlers call (tmux,
// terminals, fleet paths…) can throw it without importing the command context that imports them.

/** A command failure with its own code (for example `path_not_allowed`), answered as `ok: false`. */
export class CommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
