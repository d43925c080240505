// `terminal.attach` (spec: Server commands to a runner; admin, 10 s): attach to one of the project's
// tmux sessions and relay it on a terminal channel (runner/terminal.ts). It answers {channel, session}
// once attached; the terminal then lives on term.* frames, not on this command.
import type { CommandArgs } from '../../protocol/commands.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';

export async function terminalAttach(args: CommandArgs<'terminal.attach'>, ctx: CommandContext): Promise<{ channel: string; session: string }> {
  if (!ctx.terminals) throw new CommandError('failed', 'terminals need the daemon connection');
  return ctx.terminals.attach(args, ctx);
}
