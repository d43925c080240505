// Shapes of the triggers admin API (docs/triggers.md): request bodies validated at the boundary, and the
// cross-field rules zod cannot say alone (the skill fields belong to the skill action; templates use
// only allowed paths; the value pattern compiles with RE2 — pattern.ts). Every refusal is a 400 naming
// its field.
import * as z from 'zod';
import { capUsd } from '../cost/schema.ts';
import { badRequest } from '../lib/errors.ts';
import { idParam } from '../lib/project-routes.ts';
import { model, profile, skill } from '../runs/schema.ts';
import { poolTargetDefaults, poolTargetPatch, settlePoolTarget } from '../runs/pool-target.ts';
import type { TriggerSettings } from '../../protocol/api/triggers.ts';
import { DEFAULT_VALUE_PATTERN, checkTemplates, pathProblem, valuePatternProblem } from '../../protocol/placeholders.ts';


export const args = z.array(z.string().max(4096)).max(64);
const allowedPaths = z
  .array(z.string().superRefine((p, ctx) => {
    const problem = pathProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }))
  .max(100)
  .transform((list) => [...new Set(list)]);
const valuePattern = z.string().min(1).max(1000);

const fields = {
  name: z.string().trim().min(1).max(100),
  action: z.enum(['skill', 'next_round']),
  skill: skill.nullable(),
  args,
  profile: profile.nullable(),
  model: model.nullable(),
  output: z.enum(['report', 'pull_request']),
  allowedPaths,
  valuePattern,
  enabled: z.boolean(),
  capUSD: capUsd,
};

export const triggerCreate = z.strictObject({
  ...fields,
  skill: fields.skill.optional(),
  args: args.default([]),
  profile: fields.profile.optional(),
  model: fields.model.optional(),
  output: fields.output.default('report'),
  allowedPaths: allowedPaths.default([]),
  valuePattern: valuePattern.default(DEFAULT_VALUE_PATTERN),
  enabled: z.boolean().default(true),
  capUSD: capUsd.default(null),
  ...poolTargetDefaults,
});
export const triggerPatch = z.strictObject({
  name: fields.name.optional(),
  action: fields.action.optional(),
  skill: fields.skill.optional(),
  args: args.optional(),
  profile: fields.profile.optional(),
  model: fields.model.optional(),
  output: fields.output.optional(),
  allowedPaths: allowedPaths.optional(),
  valuePattern: valuePattern.optional(),
  enabled: z.boolean().optional(),
  capUSD: capUsd.optional(),
  ...poolTargetPatch,
});
export const dryRunBody = z.strictObject({ payload: z.unknown().describe('A sample payload: what a caller would POST') });
export const deliveryQuery = z.strictObject({
  status: z.enum(['refused', 'accepted', 'firing', 'fired', 'skipped', 'failed']).optional(),
  before: idParam('delivery').optional().describe('The last id of the previous page (nextBefore)'),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** A trigger's settings once create or edit has been applied (protocol/api/triggers.ts). */
export type { TriggerSettings };

/**
 * The rules across fields: a skill action names its skill; skill, args, profile and model are for the
 * skill action only (spec: Inbound trigger) — given with next_round they are refused, and switching
 * to next_round clears them (and the pool target: a round runs on the primary runner); the
 * pool target's own rule (runs/pool-target.ts); each template parses and uses allowed paths only; the pattern compiles.
 */
export function settle(merged: TriggerSettings, given: Partial<TriggerSettings>): TriggerSettings {
  const problems: Record<string, string> = {};
  if (merged.action === 'skill' && !merged.skill) problems.skill = 'is required for the skill action';
  if (merged.action === 'next_round') {
    for (const k of ['skill', 'profile', 'model'] as const) if (given[k]) problems[k] = 'is only for the skill action';
    if (given.args?.length) problems.args = 'is only for the skill action';
    if (given.capUSD != null) problems.capUSD = 'is only for the skill action (a cap is on the runs a trigger starts)';
    // A round of the orchestrator runs where the orchestrator is: the primary runner.
    if (given.target === 'pool') problems.target = 'is only for the skill action (a round runs on the primary runner)';
    merged = { ...merged, skill: null, args: [], profile: null, model: null, output: 'report', target: 'primary', capUSD: null };
  }
  const target = settlePoolTarget(merged, given);
  merged = target.settled;
  Object.assign(problems, target.problems);
  const patternProblem = valuePatternProblem(merged.valuePattern);
  if (patternProblem) problems.valuePattern = patternProblem;
  for (const r of checkTemplates(merged.args, merged.allowedPaths).reasons) problems[r.field] ??= r.message;
  if (Object.keys(problems).length) throw badRequest('invalid_body', `invalid fields: ${Object.keys(problems).join(', ')}`, problems);
  return merged;
}
