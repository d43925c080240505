// Answer of GET /api/projects/:projectId/codehost-mode (docs/github-app.md, "App mode on the runners"):
// which token the project's code-host work runs on and why — the App's installation token ("App
// installed on acme/app"), the runner's own ("runner token: gh auth as @alice"), or neither (a warning).
// Declared in the route's `responses` (functions/codehost/mode.ts); pages import the type only.
import * as z from 'zod';

const problem = z.object({ code: z.string(), message: z.string(), status: z.number().int().optional() });

export const codehostMode = z.object({
  projectId: z.string(),
  repo: z.string().nullable(),
  /** `app`: the App's tokens; `runner`: the runner's own token; `none`: neither works (or no repository);
   *  `gitlab`: the GitLab token stored for the project (docs/gitlab.md), `reason` saying its check. */
  mode: z.enum(['app', 'runner', 'none', 'gitlab']),
  /** One line saying which and why. */
  reason: z.string(),
  /** Set when code-host work cannot run (neither token works, no repository). */
  warning: z.string().nullable(),
  /** The App acting for the repository (never its token), or why no App does. */
  app: z.object({ id: z.string(), name: z.string(), installationId: z.number().int(), tokenExpiresAt: z.string() }).nullable(),
  appError: problem.nullable(),
  /** What the project's runner said of its own token (runner.describe), null when it could not be asked. */
  runner: z
    .object({
      online: z.boolean(),
      tokenSource: z.string().nullable(),
      tokenName: z.string().nullable(),
      login: z.string().nullable(),
      state: z.string().nullable(),
      lastError: z.string().nullable(),
    })
    .nullable(),
});
export type CodehostMode = z.output<typeof codehostMode>;
