// Answer of GET /api/github-apps/:appId/check (docs/github-app.md, "App mode"): whether the App's key
// works, the App's installations, and with `?repo=owner/name` whether a token for that repository can be
// had. Declared in the route's `responses` (functions/codehost/app-check.ts), so the OpenAPI document
// shows it and CHECK_ANSWERS holds the handler to it; pages import the type only.
import * as z from 'zod';

export const githubAppCheck = z.object({
  ok: z.boolean(),
  /** The App's installations (first 100): the installation id and the account it is installed on. */
  installations: z.array(z.object({ id: z.number().int(), account: z.string().nullable() })),
  /** Why it failed: GitHub's own message when GitHub answered (`status` is its HTTP status). */
  error: z.object({ code: z.string(), message: z.string(), status: z.number().int().optional() }).optional(),
  /** With `?repo=`: the repository's installation and its token's expiry (never the token). */
  repository: z
    .object({ repo: z.string(), installationId: z.number().int(), tokenExpiresAt: z.string(), minted: z.boolean() })
    .optional(),
});
export type GithubAppCheck = z.output<typeof githubAppCheck>;
