// Answers of the triggers admin API (docs/triggers.md): the shapes functions/triggers/routes.ts sends
// (declared in its `responses`, so the OpenAPI document shows them and CHECK_ANSWERS holds the handlers
// to them) and web-static/pages/triggers.ts and trigger-panels.ts read (type imports only, so zod stays
// out of the pages' bundle).
import * as z from 'zod';
import { iso, maybe, nextPage, poolTarget, stamps } from './common.ts';
const action = z.enum(['skill', 'next_round']);
const output = z.enum(['report', 'pull_request']);

/** A trigger's settings once create or edit has been applied (what the audit log shows). */
export const triggerSettings = z.object({
  name: z.string(),
  action,
  skill: z.string().nullable(),
  args: z.array(z.string()),
  profile: z.string().nullable(),
  model: z.string().nullable(),
  output,
  allowedPaths: z.array(z.string()),
  valuePattern: z.string(),
  enabled: z.boolean(),
  /** The cap of each run it starts (docs/cost.md, "Caps"); null: the project's perRunUSD. */
  capUSD: z.number().nullable(),
  ...poolTarget,
});
export type TriggerSettings = z.output<typeof triggerSettings>;

/** A trigger: never a secret; `url` is where callers POST. */
export const triggerAnswer = triggerSettings.extend({
  id: z.string(), projectId: z.string(),
  publicId: z.string(),
  url: z.string(),
  disabledReason: z.string().nullable(),
  previousSecretValidUntil: iso.nullable().describe('While the previous secret still verifies (24 h after a rotation): until when'),
  secretProblem: z.string().nullable(),
  createdBy: z.string(),
  ...stamps,
});
export type TriggerAnswer = z.output<typeof triggerAnswer>;

/** Why the placeholder rules refused a payload (protocol/placeholders.ts Reason). */
export const payloadReason = z.object({ field: z.string(), code: z.string(), path: z.string().optional(), message: z.string() });
export type PayloadReason = z.output<typeof payloadReason>;

export const DELIVERY_STATUSES = ['refused', 'accepted', 'firing', 'fired', 'skipped', 'failed'] as const;

/** A delivery log row: the caller's delivery id, the state with its reason(s), and the run it started. */
export const deliveryAnswer = z.object({
  id: z.string(),
  triggerId: z.string(),
  deliveryId: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  reason: maybe,
  reasons: z.array(payloadReason),
  args: z.array(z.string()).nullable(),
  detail: maybe,
  runId: maybe,
  runUrl: maybe,
  firedAt: maybe,
  ...stamps,
});
export type DeliveryAnswer = z.output<typeof deliveryAnswer>;

export const triggerList = z.object({ triggers: z.array(triggerAnswer.extend({ lastDelivery: deliveryAnswer.nullable() })) });
export type TriggerList = z.output<typeof triggerList>;

/** Create and rotate: the trigger and its new secret, in this answer only. */
export const triggerWithSecret = z.object({ trigger: triggerAnswer, secret: z.string() });
export type TriggerWithSecret = z.output<typeof triggerWithSecret>;

export const deliveryList = z.object({ deliveries: z.array(deliveryAnswer), ...nextPage });
export type DeliveryList = z.output<typeof deliveryList>;

/** Dry run of an accepted payload: would the run start now; the args as rendered (none for next_round). */
const dryRunOf = { notes: z.array(z.string()), action, skill: z.string().nullable(), args: z.array(z.string()) };
export const dryRunAnswer = z.discriminatedUnion('verdict', [
  z.object({ verdict: z.literal('would_fire'), ...dryRunOf }),
  z.object({ verdict: z.literal('would_fail'), reason: z.string(), message: z.string(), remedy: z.string().nullable(), ...dryRunOf }),
]);
export type DryRunAnswer = z.output<typeof dryRunAnswer>;

/** POST /hooks/<publicId>: the delivery was verified and recorded; the run starts after this answer. */
export const hookAccepted = z.object({ deliveryId: z.string(), status: z.literal('accepted') });
export type HookAccepted = z.output<typeof hookAccepted>;
