// Answers of the projects API (docs/projects.md): the shapes functions/projects/routes.ts sends (declared
// in its `responses`, so the OpenAPI document shows them and CHECK_ANSWERS holds the handlers to them) and
// the pages read (web-static/pages/projects.ts, fleet.ts and the pages that list projects: type imports
// only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { budgetAction, iso, role } from './common.ts';

/** Whether the runner confirmed the root is a git repository (functions/projects/root-check.ts); null without runner or root. */
export const rootCheckView = z.object({
  state: z.enum(['ok', 'unchecked', 'failed']),
  message: z.string().nullable(),
  checkedAt: iso.nullable(),
});
export type RootCheckView = z.output<typeof rootCheckView>;

/** A project (GET, POST, PATCH /api/projects…). */
export const projectAnswer = z.object({
  id: z.string(),
  name: z.string(),
  repo: z.string(),
  /** The runner that works on it and the repository's root there. */
  ...{ runnerId: z.string().nullable(), rootPath: z.string().nullable() },
  budgetUsd: z.number().nullable(), budgetAction,
  /** Spend caps on the unit of work (docs/cost.md, "Caps"): null = none. */
  caps: z.object({ perIssueUSD: z.number().nullable(), perRunUSD: z.number().nullable() }),
  rootCheck: rootCheckView.nullable(),
});
export type ProjectAnswer = z.output<typeof projectAnswer>;

/** GET /api/projects: the projects the caller sees, each with the caller's role on it. */
export const projectList = z.object({ projects: z.array(projectAnswer.extend({ role })) });
export type ProjectList = z.output<typeof projectList>;
export type ListedProject = ProjectList['projects'][number];

/** A member of a project and their role. */
export const memberAnswer = z.object({ userId: z.string(), email: z.string(), name: z.string(), role });
export type MemberAnswer = z.output<typeof memberAnswer>;
export const memberList = z.object({ members: z.array(memberAnswer) });
export type MemberList = z.output<typeof memberList>;

/** POST /api/projects/:projectId/members: the user added (or whose role changed). */
export const memberAdded = memberAnswer.extend({ projectId: z.string() });
/** PUT /api/projects/:projectId/members/:userId: the role given. */
export const memberRole = z.object({ projectId: z.string(), userId: z.string(), role });

const pr = z.object({ number: z.number().int(), url: z.string().optional(), title: z.string().optional(), state: z.enum(['open', 'merged', 'closed']) });
/** One slot of the fleet as its runner's events recorded it (functions/projects/fleet.ts). */
export const slotView = z.object({
  slot: z.string(),
  issue: z.number().int().nullable(),
  title: z.string().nullable(),
  branch: z.string().nullable(),
  checkpoint: z.object({ name: z.string(), summary: z.string().nullable(), at: iso }).nullable(),
  pr: pr.nullable(),
  checks: z.object({ state: z.string(), summary: z.string().nullable(), at: iso }).nullable(),
  stopped: z.object({ reason: z.string().nullable(), at: iso }).nullable(),
  /** The slot's issue reached its cost cap (docs/cost.md, "Caps"): paused_cap until raised, stopped once an admin stopped it. */
  cap: z.object({ state: z.enum(['paused_cap', 'stopped']), costUsd: z.number().nullable(), capUsd: z.number().nullable(), at: iso.nullable(), pause: z.number().int() }).nullable().optional(),
  lastEventAt: iso,
});
export type SlotView = z.output<typeof slotView>;

/** The recorded fleet: the orchestrator's last start or stop and the slots. */
export const fleetView = z.object({
  orchestrator: z.object({ state: z.enum(['started', 'stopped']), at: iso, reason: z.string().nullable() }).nullable(),
  slots: z.array(slotView),
});
export type FleetView = z.output<typeof fleetView>;

/** GET /api/projects/:projectId/fleet. */
export const projectFleet = fleetView.extend({ projectId: z.string(), runnerId: z.string().nullable() });
export type ProjectFleet = z.output<typeof projectFleet>;

/**
 * A runner of a project's pool (GET /api/projects/:projectId/runners, docs/runner.md "Runner pools"): the
 * primary runner first (`primary: true`, its root the project's), then the members, each with its own clone.
 */
export const poolRunnerView = z.object({
  runnerId: z.string(),
  name: z.string(),
  primary: z.boolean(),
  status: z.enum(['online', 'offline']),
  tags: z.array(z.string()),
  rootPath: z.string().nullable(),
  rootState: z.enum(['ok', 'unchecked', 'failed']).describe('Whether the runner confirmed the root is a clone of the repository (unchecked: not yet, e.g. it was offline)'),
  rootMessage: z.string().nullable(),
  maxConcurrentRuns: z.number().int().nullable().describe('Its reported capacity for pool runs (skills.maxConcurrentRuns); null = not reported'),
  runningRuns: z.number().int().nullable().describe('The skill runs it holds now, as last reported; null = not reported'),
  takesPoolRuns: z.boolean().describe('It announced the skills.pool capability: only such runners get pool runs (update svc-runner otherwise)'),
});
export type PoolRunnerView = z.output<typeof poolRunnerView>;
export const poolRunnerList = z.object({ runners: z.array(poolRunnerView) });
export type PoolRunnerList = z.output<typeof poolRunnerList>;
