// Shapes of the runner answers (GET /api/runners, GET /api/runners/:runnerId) for the OpenAPI document.
import * as z from 'zod';
import { reportedProfile } from '../../protocol/frames.ts';

export const runnerView = z.object({
  id: z.string(),
  name: z.string(),
  hostname: z.string(),
  version: z.string(),
  updateAvailable: z.boolean(),
  target: z.string(),
  capabilities: z.array(z.string()),
  pairedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  lastSeenAt: z.string().nullable(),
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
  profilesReportedAt: z.string().nullable(),
});

export const runnerDetail = runnerView.extend({
  bundleVersion: z.string().nullable(),
  projects: z.array(z.object({ id: z.string(), name: z.string(), rootPath: z.string().nullable() })),
  lastEvents: z.array(z.object({ kind: z.string(), source: z.string(), ts: z.string().nullable(), receivedAt: z.string().nullable() })),
});
