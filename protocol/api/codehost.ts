// Answers of the code-host (GitHub) app API (docs/github-app.md): the shapes functions/codehost/routes.ts
// and hook.ts send (declared in their `responses`, so CHECK_ANSWERS holds the handlers to them) and
// web-static/pages/github-app.ts reads (type imports only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { stamps } from './common.ts';

/** A registered GitHub App: where GitHub sends its webhooks and whether its secrets decrypt (never the secrets). */
export const githubAppAnswer = z.object({
  id: z.string(),
  /** The settings an admin sets (apiUrl: GitHub's REST API, or a GitHub Enterprise Server's). */
  ...{ name: z.string(), githubAppId: z.number().int().nullable(), privateKeySet: z.boolean(), apiUrl: z.string() },
  /** Where GitHub sends the app's webhooks. */
  ...{ appPublicId: z.string(), webhookUrl: z.string() },
  /** Why a stored secret cannot be used with the current key (null: it decrypts, or there is none). */
  ...{ webhookSecretProblem: z.string().nullable(), privateKeyProblem: z.string().nullable() },
  createdBy: z.string().nullable(),
  ...stamps,
});
export type GithubAppAnswer = z.output<typeof githubAppAnswer>;

/** GET /api/github-apps. */
export const githubAppList = z.object({ apps: z.array(githubAppAnswer) });
export type GithubAppList = z.output<typeof githubAppList>;

/** POST /api/github-apps/:appId/rotate: the app and its new webhook secret (this answer only). */
export const githubAppRotated = z.object({ app: githubAppAnswer, webhookSecret: z.string() });
export type GithubAppRotated = z.output<typeof githubAppRotated>;

/** POST /api/github-apps: the new app, its webhook URL and webhook secret (this answer only). */
export const githubAppCreated = githubAppRotated.extend({ appPublicId: z.string(), webhookUrl: z.string() });
export type GithubAppCreated = z.output<typeof githubAppCreated>;

/** What became of the collector.poll sent for one matched project. */
export const pollAnswer = z.object({
  projectId: z.string(),
  runnerId: z.string().nullable(),
  status: z.enum(['done', 'failed', 'timeout', 'offline', 'no_runner', 'error']),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

/** One webhook delivery of an app, with the polls it sent. */
export const deliveryAnswer = z.object({
  id: z.string(),
  appId: z.string().nullable(),
  /** X-GitHub-Delivery, event and action as GitHub sent them; the repository's full name. */
  ...{ deliveryId: z.string().nullable(), event: z.string(), action: z.string().nullable(), repo: z.string().nullable() },
  outcome: z.string(),
  polls: z.array(pollAnswer),
  ...stamps,
});
export type DeliveryAnswer = z.output<typeof deliveryAnswer>;

/** GET /api/github-apps/:appId/deliveries. */
export const deliveryList = z.object({ deliveries: z.array(deliveryAnswer) });
export type DeliveryList = z.output<typeof deliveryList>;

/** POST /hooks/github/:appPublicId: a delivery id this app already sent (ignored). */
export const hookDuplicate = z.object({ deliveryId: z.string(), status: z.literal('duplicate') });
/** POST /hooks/github/:appPublicId: verified and recorded; collector.poll goes to `projects` projects. */
export const hookAccepted = z.object({ deliveryId: z.string(), status: z.literal('accepted'), projects: z.number().int() });

/** A project's code host (issue 42; docs/gitlab.md): GitLab at `baseUrl`, the project's full path, and the
 *  result of checking the credential that will be used (the stored token, else the runner's GITLAB_TOKEN). */
export const projectCodehostAnswer = z.object({
  kind: z.literal('gitlab'),
  baseUrl: z.string(),
  projectPath: z.string(),
  webhookUrl: z.string(),
  /** In the PUT answer only: the secret token to enter in GitLab's webhook settings. */
  webhookSecret: z.string().optional(),
  /** Which credential the runners use: the token stored here, or the runner's own (GITLAB_TOKEN). */
  credential: z.enum(['stored', 'runner']),
  check: z.object({ ok: z.boolean(), error: z.string().optional(), at: z.string().nullable() }),
});
export type ProjectCodehostAnswer = z.output<typeof projectCodehostAnswer>;
