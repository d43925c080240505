// Shapes of the code-host app admin API (docs/github-app.md), validated at the boundary; every refusal
// is a 400 naming its field.
import { createPrivateKey } from 'node:crypto';
import * as z from 'zod';
import { httpUrl } from '../lib/http-url.ts';

/** The hook's path: never refused here (a malformed id is hashed and looked up like any other, and answers 404). */
export const hookParams = z.strictObject({ appPublicId: z.string().describe("The app's 24-character public id (appPublicId)") });

export const appParams = z.strictObject({ appId: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be an app id' }) });

/** The .pem GitHub gives for an app: it must parse as a private key (never echoed in the error). */
const privateKey = z
  .string()
  .max(16 * 1024)
  .superRefine((pem, ctx) => {
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) return void ctx.addIssue({ code: 'custom', message: 'must be a PEM private key (the .pem file GitHub generated for the app)' });
    try {
      createPrivateKey(pem);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is not a readable PEM private key' });
    }
  })
  .describe("The app's private key (PEM); stored encrypted, never shown again");

/**
 * The App's REST API: `https://api.github.com`, or a GitHub Enterprise Server's `https://<host>/api/v3`.
 * http:// and private addresses are reached only when the webhooks' address allowlist allows them (the
 * outbound address guard runs before every call); kept without a trailing slash.
 */
const apiUrl = httpUrl(z.string().trim().max(2048), { query: false }, 'must be an https:// URL without credentials, query or fragment (e.g. https://github.example.com/api/v3)')
  .transform((text) => text.replace(/\/+$/, ''))
  .describe("The App's REST API: https://api.github.com (the default) or https://<host>/api/v3 for GitHub Enterprise Server");

const fields = {
  name: z.string().trim().min(1).max(100).describe('A name to tell apps apart'),
  githubAppId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).nullable().describe("The GitHub App's numeric App ID (on its settings page)"),
};

export const appCreate = z.strictObject({
  name: fields.name,
  githubAppId: fields.githubAppId.optional(),
  privateKey: privateKey.optional(),
  apiUrl: apiUrl.optional(),
});
export const appPatch = z.strictObject({
  name: fields.name.optional(),
  githubAppId: fields.githubAppId.optional(),
  privateKey: privateKey.nullable().optional().describe('A new private key (PEM), or null to remove the stored one'),
  apiUrl: apiUrl.optional(),
});
/** `repo`: also mint (or reuse) the installation token of this repository and try it. */
export const checkQuery = z.strictObject({
  repo: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/, { message: 'must be owner/name' })
    .optional(),
});
export const deliveryQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
/** A pull request's number in a path: 1 to 2^31 − 1. */
export const pullNumber = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, { message: 'must be a pull request number' })
  .transform(Number)
  .pipe(z.number().int().max(2 ** 31 - 1, { message: 'must be a pull request number' }));
