// Shapes of the project schedules API (docs/schedules.md): request bodies validated at the boundary. The
// skill, profile and model rules are the skill.run command's (runs/schema.ts, shared with triggers) and args are exactly the
// skill.run command's arguments, since a schedule's args are sent as they are; cron and time zone are
// checked with croner and the platform's IANA database. Every refusal is a 400 naming its field.
import { Cron } from 'croner';
import * as z from 'zod';
import { capUsd } from '../cost/schema.ts';
import { COMMANDS } from '../../protocol/commands.ts';
import { model, profile, skill } from '../runs/schema.ts';
import { poolTargetDefaults, poolTargetPatch, settlePoolTarget } from '../runs/pool-target.ts';
import type { PoolTarget } from '../runs/pool-target.ts';
import { badRequest } from '../lib/errors.ts';

const id = (what: string) => z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: `must be a ${what} id` });
export const projectParams = z.strictObject({ projectId: id('project') });
export const scheduleParams = z.strictObject({ projectId: id('project'), scheduleId: id('schedule') });

/** Whether `zone` is an IANA time zone name this platform knows (Europe/Berlin, UTC). */
export function isTimeZone(zone: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/.test(zone) || zone.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** A cron pattern croner accepts (5 fields, or 6 with seconds first), or the problem. */
export function cronProblem(pattern: string): string | null {
  try {
    new Cron(pattern, { paused: true });
    return null;
  } catch (err) {
    return (err instanceof Error ? err.message : String(err)).replace(/^CronPattern: /, '').slice(0, 200);
  }
}

const cron = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .superRefine((p, ctx) => {
    const problem = cronProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: `must be a cron expression (5 fields, or 6 with seconds first; e.g. "0 3 * * 1-5"): ${problem}` });
  });
const timezone = z.string().refine(isTimeZone, { message: 'must be an IANA time zone (e.g. Europe/Berlin, UTC)' });

const fields = {
  name: z.string().trim().min(1).max(100),
  cron,
  timezone,
  skill,
  args: COMMANDS['skill.run'].args.shape.args,
  profile: profile.nullable(),
  model: model.nullable(),
  output: z.enum(['report', 'pull_request']),
  enabled: z.boolean(),
  capUSD: capUsd,
};

export const scheduleCreate = z.strictObject({
  ...fields,
  timezone: timezone.default('UTC'),
  args: fields.args.default([]),
  profile: fields.profile.default(null),
  model: fields.model.default(null),
  output: fields.output.default('report'),
  enabled: fields.enabled.default(true),
  capUSD: fields.capUSD.default(null),
  ...poolTargetDefaults,
});
export const schedulePatch = z.strictObject({
  name: fields.name.optional(),
  cron: fields.cron.optional(),
  timezone: fields.timezone.optional(),
  skill: fields.skill.optional(),
  args: fields.args.optional(),
  profile: fields.profile.optional(),
  model: fields.model.optional(),
  output: fields.output.optional(),
  enabled: fields.enabled.optional(),
  capUSD: fields.capUSD.optional(),
  ...poolTargetPatch,
});

export type ScheduleSettings = z.output<typeof scheduleCreate>;

/** The settings to store once the pool target's rule holds (runs/pool-target.ts): a 400 naming the field otherwise. */
export function settle(merged: ScheduleSettings, given: Partial<PoolTarget>): ScheduleSettings {
  const { settled, problems } = settlePoolTarget(merged, given);
  if (Object.keys(problems).length) throw badRequest('invalid_body', `invalid fields: ${Object.keys(problems).join(', ')}`, problems);
  return settled;
}
