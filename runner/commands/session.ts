// session.backfill (spec: Server commands to a runner; docs/runner.md "Sessions ingest"): read the
// transcripts of one project that the ingest skipped for being older than sessions.ingestSince (or only
// those modified since `since`). The same dedup and event ids as the live ingest, so nothing counts twice.
import type { CommandArgs } from '../../protocol/commands.ts';
import type { BackfillResult } from '../usage/ingest.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';

export async function sessionBackfill(args: CommandArgs<'session.backfill'>, ctx: CommandContext): Promise<BackfillResult> {
  if (!ctx.config.sessions.enabled) throw new CommandError('sessions_disabled', 'session ingest is off on this runner (sessions.enabled is false)');
  if (!ctx.projects().some((p) => p.id === args.projectId)) throw new CommandError('unknown_project', `project ${args.projectId} is not on this runner's watch list`);
  if (!ctx.ingest) throw new CommandError('failed', 'session.backfill runs in the daemon only');
  return ctx.ingest.backfill(args.projectId, args.since);
}
