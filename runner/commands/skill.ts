// skill.* commands (spec: Server commands to a runner; docs/skill-runs.md).
//   skill.run     validate (project, profile and its agent binary, the skill installed, tmux), then
//                 queue the run; answers once it started (or waits as queued) with its run id; a pool
//                 run's `runId` (chosen by the server) is used as the id, and a second skill.run with it
//                 answers the first run as it stands (runner/runs/manager.ts submit)
//   skill.cancel  stop a queued, starting or running run → cancelled
//   skill.search / skill.inspect / skill.install / skill.uninstall / skill.list: the catalog
import type { CommandArgs } from '../../protocol/commands.ts';
import { inspectSource, searchCatalog } from '../catalog.ts';
import { projectOf } from '../fleet-paths.ts';
import { chooseProfile } from '../launch.ts';
import { findSkill, installSkill, listSkills, skillsDir, uninstallSkill } from '../skills.ts';
import { requireTmux } from '../tmux.ts';
import { CommandError } from '../errors.ts';
import type { CommandContext } from './context.ts';
import { workTreeTop } from './git.ts';

function manager(ctx: CommandContext): NonNullable<CommandContext['runs']> {
  if (!ctx.runs) throw new CommandError('failed', 'skill runs need the runner daemon (svc-runner run)');
  return ctx.runs;
}

export async function skillRun(args: CommandArgs<'skill.run'>, ctx: CommandContext) {
  const runs = manager(ctx);
  const project = await projectOf(ctx, args.projectId);
  // A pool run sent again (the server resends until it has an answer): answered as it stands, before the
  // checks below, which may no longer hold (a skill uninstalled since) for a run that already started.
  const known = args.runId ? await runs.existing(args.runId, project.id) : null;
  if (known) return { ...known, projectId: project.id };
  const chosen = chooseProfile(ctx.config, ctx.env, args.profileId);
  if (!findSkill(args.skill, chosen.profile, ctx.env, project.root)) {
    throw new CommandError('unknown_skill', `no skill ${args.skill} is installed for profile ${chosen.profile.id} (looked in ${skillsDir(chosen.profile.runtime, ctx.env, chosen.profile)}, ${skillsDir(chosen.profile.runtime, ctx.env)} and the project's .${chosen.profile.runtime}/skills)`);
  }
  if (args.output === 'pull_request' && (await workTreeTop(project.root)) !== project.root) {
    throw new CommandError('not_a_repository', `a pull request run needs the project root to be the top of a git repository`);
  }
  await requireTmux(ctx.env);
  const max = ctx.config.skills.maxTimeoutSec;
  const timeoutSec = Math.min(args.timeoutSec ?? max, max);
  const submitted = await runs.submit({ projectId: project.id, root: project.root, skill: args.skill, args: args.args, output: args.output, model: args.model, timeoutSec, runId: args.runId }, chosen);
  return { ...submitted, projectId: project.id, profileId: chosen.profile.id, runtime: chosen.profile.runtime, timeoutSec, ...(args.timeoutSec && args.timeoutSec > max ? { timeoutCut: true } : {}) };
}

export async function skillCancel(args: CommandArgs<'skill.cancel'>, ctx: CommandContext) {
  const project = await projectOf(ctx, args.projectId);
  return manager(ctx).cancel(project.id, args.runId);
}

export async function skillSearch(args: CommandArgs<'skill.search'>, ctx: CommandContext) {
  if (ctx.config.skills.catalog.length === 0) return { skills: [], total: 0, errors: [], note: 'no catalog is configured (skills.catalog in runner.json)' };
  return searchCatalog(ctx.config, ctx.env, args.query);
}

export async function skillInspect(args: CommandArgs<'skill.inspect'>, ctx: CommandContext) {
  const { contents: _files, ...skill } = await inspectSource(ctx.config, ctx.env, args.source);
  return skill;
}

export async function skillInstall(args: CommandArgs<'skill.install'>, ctx: CommandContext) {
  return installSkill(ctx.config, ctx.env, args);
}

export async function skillUninstall(args: CommandArgs<'skill.uninstall'>, ctx: CommandContext) {
  return uninstallSkill(ctx.config, ctx.env, args);
}

export async function skillList(_args: CommandArgs<'skill.list'>, ctx: CommandContext) {
  return listSkills(ctx.config, ctx.env);
}
