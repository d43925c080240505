// orchestrator.start / .stop / .status (spec: Server commands to a runner; docs/orchestrator.md).
// The orchestrator of project P is the agent of P's orchestrator profile in tmux session svc-P-orch,
// started in the project root. `next: true` is the "next round" action (fleet page, inbound trigger):
// it starts the orchestrator when it is not running and nudges it when it sits idle; when it is
// working, waiting for a person or out of quota it is left alone and the answer says why.
import type { CommandArgs } from '../../protocol/commands.ts';
import { reportFleetEvent } from '../fleet.ts';
import { projectOf } from '../fleet-paths.ts';
import { chooseProfile, ensureExcluded, launchAgent, PROMPTS } from '../launch.ts';
import { readPane } from '../pane-text.ts';
import { ORCHESTRATOR_OPTIONS, exitedData, expectSession, ownerOf, reapDead } from '../panes.ts';
import { capturePanes, clearRecordedEnd, hasSession, killSession, listSessions, paneEnd, requireTmux, sendKeys, sessionName } from '../tmux.ts';
import type { SessionInfo } from '../tmux.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';

export async function orchestratorStart(args: CommandArgs<'orchestrator.start'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const session = sessionName.orchestrator(project.id);
  await requireTmux(ctx.env);
  // A session whose agent exited (its pane kept, see panes.ts) is not running: report how it ended
  // (unless the watcher got there first) and start afresh.
  const dead = await reapDead(ctx.env, session);
  if (dead) {
    expectSession(session, 'stopped');
    reportFleetEvent(ctx.env, ctx.config.runnerId, { projectId: project.id, type: 'orchestrator.stopped', data: exitedData(session, dead) });
  }
  if (await hasSession(ctx.env, session)) {
    if (!args.next) throw new CommandError('already_running', `the orchestrator of project ${project.id} is already running (tmux session ${session})`);
    const text = (await capturePanes(ctx.env, [session])).get(session);
    const state = text === null || text === undefined ? 'starting' : readPane(text).state;
    if (state !== 'idle') return { action: 'none', session, state };
    const nudged = await sendKeys(ctx.env, session, PROMPTS.orchestrator);
    return { action: nudged ? 'nudged' : 'none', session, state };
  }
  const chosen = chooseProfile(ctx.config, ctx.env, args.profileId);
  await ensureExcluded(project.root).catch(() => {});
  expectSession(session, 'started');
  await launchAgent({
    session,
    cwd: project.root,
    chosen,
    config: ctx.config,
    meta: { projectId: project.id, root: project.root, role: 'orchestrator' },
    prompt: PROMPTS.orchestrator,
    env: ctx.env,
    options: ORCHESTRATOR_OPTIONS,
    recordExit: true,
  });
  // launchAgent's check sees the session; with remain-on-exit it stays even when the agent exited.
  const early = await reapDead(ctx.env, session);
  if (early) {
    expectSession(session, 'stopped');
    const how = early.exitCode !== null ? `with code ${early.exitCode}` : early.signal !== null ? `on signal ${early.signal}` : '';
    throw new CommandError('agent_exited', `${chosen.binaryPath} (profile ${chosen.profile.id}) exited right after it started in ${session}${how ? ` ${how}` : ''}`);
  }
  const data = { profile: chosen.profile.id, runtime: chosen.profile.runtime, session, origin: 'command' };
  reportFleetEvent(ctx.env, ctx.config.runnerId, { projectId: project.id, type: 'orchestrator.started', data });
  return { action: 'started', session, profileId: chosen.profile.id, runtime: chosen.profile.runtime };
}

export async function orchestratorStop(args: CommandArgs<'orchestrator.stop'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const session = sessionName.orchestrator(project.id);
  expectSession(session, 'stopped');
  const end = await paneEnd(ctx.env, session, 0);
  const stopped = await killSession(ctx.env, session);
  clearRecordedEnd(ctx.env, session);
  const code = end?.exitCode != null ? { exitCode: end.exitCode } : {};
  if (stopped) reportFleetEvent(ctx.env, ctx.config.runnerId, { projectId: project.id, type: 'orchestrator.stopped', data: { reason: 'stopped', session, origin: 'command', ...code } });
  return { stopped, session };
}

/** State of one session as the status answer gives it: never the pane's text. */
function describe(info: SessionInfo, text: string | null | undefined) {
  const r = text ? readPane(text) : null;
  return {
    session: info.name,
    state: info.paneDead ? 'exited' : (r?.state ?? 'starting'),
    ...(r?.prompt ? { promptKind: r.prompt.kind } : {}),
    ...(r?.quota ? { quota: { provider: r.quota.provider, resetsAt: r.quota.resetsAt } } : {}),
    ...(info.runtime ? { runtime: info.runtime } : {}),
    ...(info.profile ? { profileId: info.profile } : {}),
    startedAt: new Date(info.created * 1000).toISOString(),
    lastOutputAt: new Date(info.activity * 1000).toISOString(),
  };
}

export async function orchestratorStatus(args: CommandArgs<'orchestrator.status'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  const mine = (await listSessions(ctx.env)).filter((s) => ownerOf(s.name, ctx.projects())?.projectId === project.id);
  const texts = await capturePanes(ctx.env, mine.filter((s) => !s.paneDead).map((s) => s.name));
  const orch = mine.find((s) => s.name === sessionName.orchestrator(project.id));
  const slots = mine
    .filter((s) => s !== orch)
    .map((s) => ({ slot: ownerOf(s.name, ctx.projects())!.slot!, ...(Number(s.issue) ? { issue: Number(s.issue) } : {}), ...describe(s, texts.get(s.name)) }));
  return {
    projectId: project.id,
    present: Boolean(orch),
    ...(orch ? describe(orch, texts.get(orch.name)) : { session: sessionName.orchestrator(project.id), state: 'absent' }),
    slots,
  };
}
