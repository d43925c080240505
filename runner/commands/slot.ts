// slot.stop, slot.resume and slot.message (spec: Server commands to a runner; docs/orchestrator.md). A slot is a
// worker agent in tmux session svc-P-slot-S, working in the worktree `.wt-<repo>-S` beside the root.
// slot.stop kills the session only; the worktree and its branch stay (with `hold`, the issue is held:
// slot-start refuses it until slot.resume, which starts the worker again in that worktree). slot.message writes
// `.orchestrator-msg.md` in the worktree (atomically; an unread earlier message is kept above the new
// one) and nudges the worker by typing a fixed sentence into its pane — except while the pane shows a
// prompt a person must answer (typed text would answer it) or a usage limit.
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CommandArgs } from '../../protocol/commands.ts';
import { reportFleetEvent } from '../fleet.ts';
import { writeFileAtomic } from '../config.ts';
import { appendEventLine } from '../events-file.ts';
import { confined, heldIssuePath, MESSAGE_FILE, projectOf, worktreePath } from '../fleet-paths.ts';
import { chooseProfile, launchAgent, PROMPTS } from '../launch.ts';
import { readPane } from '../pane-text.ts';
import { expectSession } from '../panes.ts';
import { capturePane, killSession, listSessions, sendKeys, sessionName } from '../tmux.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';

export async function slotStop(args: CommandArgs<'slot.stop'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  if (args.hold) {
    // Before the kill: an orchestrator round in between must not dispatch the issue again.
    const file = await confined(project, heldIssuePath(project.root, args.hold.issue));
    mkdirSync(dirname(file), { recursive: true });
    // The profile the worker ran with, so slot.resume starts the same one.
    const running = (await listSessions(ctx.env)).find((s) => s.name === sessionName.slot(project.id, args.slot));
    const profile = running?.profile || readHold(file)?.profile || null;
    writeFileAtomic(file, JSON.stringify({ issue: args.hold.issue, slot: args.slot, reason: args.hold.reason, profile, at: new Date().toISOString() }) + '\n');
  }
  const session = sessionName.slot(project.id, args.slot);
  expectSession(session, 'stopped');
  const stopped = await killSession(ctx.env, session);
  if (stopped) reportFleetEvent(ctx.env, ctx.config.runnerId, { projectId: project.id, type: 'slot.stopped', slot: args.slot, data: { reason: 'stopped', session, origin: 'command' } });
  return { stopped, session, slot: args.slot, ...(args.hold ? { held: args.hold.issue } : {}) };
}

/**
 * slot.resume: the hold on the issue goes and its worker starts again in the slot's existing worktree
 * (same branch, same files), with the worker prompt of that issue (docs/cost.md "Caps": raise and continue).
 */
export async function slotResume(args: CommandArgs<'slot.resume'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const worktree = await confined(project, worktreePath(project.root, args.slot));
  if (!statSync(worktree, { throwIfNoEntry: false })?.isDirectory()) throw new CommandError('unknown_slot', `slot ${args.slot} has no worktree .wt-<repo>-${args.slot} beside the project root`);
  const held = await confined(project, heldIssuePath(project.root, args.issue));
  const session = sessionName.slot(project.id, args.slot);
  // The profile it had, when it is still configured; else the first usable one.
  const had = readHold(held)?.profile;
  const chosen = chooseProfile(ctx.config, ctx.env, had && ctx.config.profiles.some((p) => p.id === had) ? had : undefined);
  await launchAgent({ session, cwd: worktree, chosen, config: ctx.config, meta: { projectId: project.id, root: project.root, role: 'worker', slot: args.slot, issue: args.issue }, prompt: PROMPTS.resume(args.issue), env: ctx.env });
  rmSync(held, { force: true }); // after the start: a worker that could not start leaves the issue held
  appendEventLine(project.root, { time: new Date().toISOString(), type: 'slot.dispatched', slot: args.slot, issue: args.issue, data: { profile: chosen.profile.id, resumed: true } });
  return { resumed: true, session, slot: args.slot, issue: args.issue, worktree };
}

/** A hold file's contents; null when there is none or it does not parse. */
function readHold(file: string): { profile?: string | null } | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

export async function slotMessage(args: CommandArgs<'slot.message'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const worktree = await confined(project, worktreePath(project.root, args.slot));
  if (!statSync(worktree, { throwIfNoEntry: false })?.isDirectory()) throw new CommandError('unknown_slot', `slot ${args.slot} has no worktree .wt-<repo>-${args.slot} beside the project root`);
  const file = await confined(project, join(worktree, MESSAGE_FILE));
  let earlier = '';
  try {
    earlier = readFileSync(file, 'utf8');
  } catch {}
  const entry = `<!-- svc: message for slot ${args.slot}, ${new Date().toISOString()} -->\n${args.message.replace(/\r\n/g, '\n').trimEnd()}\n`;
  writeFileAtomic(file, earlier ? `${earlier.trimEnd()}\n\n${entry}` : entry);

  const session = sessionName.slot(project.id, args.slot);
  const text = await capturePane(ctx.env, session);
  if (text === null) return { written: true, nudged: false, reason: 'not_running' };
  const state = readPane(text).state;
  if (state === 'waiting' || state === 'quota') return { written: true, nudged: false, reason: state, state };
  const nudged = await sendKeys(ctx.env, session, PROMPTS.message);
  return { written: true, nudged, state };
}
