// Answers of the runners API (docs/runners.md): the shapes functions/runners/routes.ts sends (declared in
// its `responses`, so the OpenAPI document shows them and CHECK_ANSWERS holds the handlers to them) and
// the pages read (web-static/pages/runners.ts, start.ts, terminal.ts, projects.ts: type imports only, so
// zod stays out of the pages' bundle).
import * as z from 'zod';
import { reportedProfile } from '../frames.ts';
import { iso } from './common.ts';

/** A runner as GET /api/runners lists it. */
export const runnerView = z.object({
  id: z.string(),
  name: z.string(),
  hostname: z.string(),
  version: z.string(),
  updateAvailable: z.boolean(),
  target: z.string(),
  capabilities: z.array(z.string()),
  pairedAt: iso.nullable(),
  revokedAt: iso.nullable(),
  lastSeenAt: iso.nullable(),
  status: z.enum(['online', 'offline', 'unpaired', 'revoked']),
  remedy: z.string().nullable(),
  profiles: z
    .array(reportedProfile)
    .nullable()
    .describe(
      'The usable runtime profiles the runner last reported (configured in runner.json and their CLI found), each with `authenticated`; ' +
        '[] = it has none; null = not reported (a runner older than the `profiles` capability): unknown, not none',
    ),
  agentRuntime: z.enum(['ready', 'none', 'unknown']).describe('ready: a reported profile is signed in; none: no usable profile ("no agent runtime"); unknown: not reported'),
  profilesReportedAt: iso.nullable(),
  tags: z.array(z.string()).describe('Tags set by instance admins or at pairing (a pool target\'s targetTags must all be among them)'),
  maxConcurrentRuns: z.number().int().nullable().describe('The pool runs the runner takes at once (skills.maxConcurrentRuns), as it last reported; null = not reported'),
  runningRuns: z.number().int().nullable().describe('The skill runs it holds now (starting or running), as it last reported; null = not reported'),
});
export type RunnerView = z.output<typeof runnerView>;

/** GET /api/runners: the runners and the runner bundle version this server serves (null: none). */
export const runnerList = z.object({ runners: z.array(runnerView), bundleVersion: z.string().nullable() });
export type RunnerList = z.output<typeof runnerList>;

/** GET /api/runners/:runnerId: one runner with the projects it serves and its last events. */
export const runnerDetail = runnerView.extend({
  bundleVersion: z.string().nullable(),
  projects: z.array(z.object({ id: z.string(), name: z.string(), rootPath: z.string().nullable() })),
  poolProjects: z
    .array(z.object({ id: z.string(), name: z.string(), rootPath: z.string() }))
    .describe('Projects whose pool this runner is a member of (skill runs of a pool target only), with its clone\'s root there'),
  lastEvents: z.array(z.object({ kind: z.string(), source: z.string(), ts: iso.nullable(), receivedAt: iso.nullable() })),
});
export type RunnerDetail = z.output<typeof runnerDetail>;

/** A one-time pairing code for `svc-runner pair`. */
export const pairingCode = z.object({ code: z.string(), expiresAt: iso });
export type PairingCode = z.output<typeof pairingCode>;

/** POST /api/runners: the new runner, its pairing code and warnings (another runner has the same name). */
export const runnerCreated = pairingCode.extend({
  runner: z.object({ id: z.string(), name: z.string() }),
  warnings: z.array(z.string()),
});
export type RunnerCreated = z.output<typeof runnerCreated>;

/** POST /runners/pair: the runner's id and token. */
export const pairAnswer = z.object({ runnerId: z.string(), token: z.string() });

/** GET /runners/self: the token is still accepted. */
export const runnerSelf = z.object({ runnerId: z.string(), name: z.string() });

/** A command the runner carried out (200): its answer's data, which each command shapes its own way. */
export const commandDone = z.object({ name: z.string(), ok: z.literal(true), data: z.unknown() });
/** A command's 200 answer with the data `D` the caller expects of it (a 502 is thrown by the pages' api()). */
export type CommandDone<D = unknown> = Omit<z.output<typeof commandDone>, 'data'> & { data: D };
/** A command the runner refused or failed (502). */
export const commandFailed = z.object({ name: z.string(), ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) });
/**
 * The answer to a command (POST /api/runners/:runnerId/commands, /api/projects/:projectId/commands); `D` is
 * the data the caller expects of that command. Each side names the other's field as absent, so a page
 * reads `out.error?.message` or `out.data` without narrowing first.
 */
export type CommandAnswer<D = unknown> =
  | (CommandDone<D> & { error?: undefined })
  | (z.output<typeof commandFailed> & { data?: undefined });
