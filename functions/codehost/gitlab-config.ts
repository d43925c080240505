// A project's code host on GitLab (issue 42; docs/gitlab.md): PUT/GET /api/projects/:projectId/codehost
// (project admins). PUT stores the base URL (through the outbound address guard), the project path and
// an optional access token (encrypted under APP_ENCRYPTION_KEY; 409 encryption_key_missing without it),
// makes the project's webhook (/hooks/gitlab/<publicId>, its secret token in the PUT answer only) and
// checks the credential (gitlab-check.ts). GET answers the same without the secret and checks again.
import * as z from 'zod';
import { projectCodehostAnswer } from '../../protocol/api/codehost.ts';
import { GITLAB_PATH } from '../../protocol/frames.ts';
import { audited } from '../audit/audit.ts';
import { decryptSecret, encryptSecret, requireEncryptionKey, sha256Hex } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { badRequest, json, notFound } from '../lib/errors.ts';
import { httpUrl } from '../lib/http-url.ts';
import { projectRoute } from '../lib/project-routes.ts';
import { publicBase } from '../lib/urls.ts';
import { newPublicId, newWebhookSecret } from './apps.ts';
import { checkGitlab, codehostTls, guardRefusal } from './gitlab-check.ts';

export const gitlabTokenAad = (projectId: string) => `project_codehost_token:${projectId}`;
export const gitlabSecretAad = (projectId: string) => `project_codehost_webhook_secret:${projectId}`;
export const gitlabPublicIdHash = (publicId: string) => sha256Hex(`gitlab_hook:${publicId}`);

export const codehostBody = z.strictObject({
  kind: z.literal('gitlab'),
  baseUrl: httpUrl(z.string().max(2048), { query: false }, 'must be an http(s) URL without credentials, query or fragment').transform((u) => u.replace(/\/+$/, '')),
  projectPath: z.string().max(1024).regex(GITLAB_PATH, { message: 'must be the project path with its groups (group/sub/app)' }),
  token: z.string().regex(/^[\x21-\x7e]{8,1024}$/, { message: 'must be a GitLab access token' }).optional(),
});

export interface CodehostRow {
  project_id: string;
  kind: 'gitlab';
  base_url: string;
  project_path: string;
  token_ciphertext: string | null;
  public_id: string;
  webhook_secret_ciphertext: string;
  check_ok: boolean | null;
  check_error: string | null;
  checked_at: Date | null;
}

export async function codehostRow(q: Queryable, projectId: string): Promise<CodehostRow | null> {
  const [row] = await q.query<CodehostRow>(sql`select * from project_codehosts where project_id = ${projectId}`);
  return row ?? null;
}

/** The stored token, or null (none, or it cannot be decrypted with the current key). */
export function storedToken(r: CodehostRow, key: Buffer | null): string | null {
  if (!r.token_ciphertext) return null;
  try {
    return decryptSecret(key, r.token_ciphertext, gitlabTokenAad(r.project_id));
  } catch {
    return null;
  }
}

const answer = (r: CodehostRow, base: string) => ({
  kind: r.kind,
  baseUrl: r.base_url,
  projectPath: r.project_path,
  webhookUrl: `${base}/hooks/gitlab/${r.public_id}`,
  credential: r.token_ciphertext ? ('stored' as const) : ('runner' as const),
  check: { ok: r.check_ok ?? false, ...(r.check_error ? { error: r.check_error } : {}), at: r.checked_at?.toISOString() ?? null },
});

async function recheck(q: Queryable, r: CodehostRow, key: Buffer | null, caFile: string | undefined): Promise<CodehostRow> {
  const c = await checkGitlab(q, r.base_url, r.project_path, storedToken(r, key), codehostTls({ CODEHOST_CA_FILE: caFile }));
  const [row] = await q.query<CodehostRow>(sql`
    update project_codehosts set check_ok = ${c.ok}, check_error = ${c.error ?? null}, checked_at = now() where project_id = ${r.project_id} returning *`);
  return row;
}

export const routes = [
  projectRoute('admin', { method: 'PUT', path: '/codehost', tag: 'codehost',
    summary: "Set the project's code host to GitLab (base URL, project path, optional access token): answers the webhook URL and its secret token (this answer only) and the credential's check",
    body: codehostBody,
    responses: { 200: { description: 'the code host, its webhook secret (this answer only) and the check', schema: projectCodehostAnswer } },
    async handler({ params, body, principal, requestId, request }, ctx) {
      const refused = await guardRefusal(ctx.db, body.baseUrl);
      if (refused) throw badRequest('invalid_request', 'the base URL is refused by the outbound address guard', { baseUrl: refused });
      const key = requireEncryptionKey(ctx);
      const secret = newWebhookSecret();
      const publicId = newPublicId();
      const id = params.projectId;
      await audited(
        ctx.db,
        { actor: principal!, action: 'project.codehost_set', target: { type: 'project', id }, diff: { after: { kind: body.kind, baseUrl: body.baseUrl, projectPath: body.projectPath, token: body.token ? 'set' : 'none' } }, requestId },
        async (tx) => {
          const [p] = await tx.query(sql`select id from projects where id = ${id} for update`);
          if (!p) throw notFound('no such project');
          await tx.query(sql`
            insert into project_codehosts (project_id, kind, base_url, project_path, token_ciphertext, public_id, public_id_hash, webhook_secret_ciphertext, updated_by)
            values (${id}, 'gitlab', ${body.baseUrl}, ${body.projectPath}, ${body.token ? encryptSecret(key, body.token, gitlabTokenAad(id)) : null}, ${publicId}, ${gitlabPublicIdHash(publicId)},
                    ${encryptSecret(key, secret, gitlabSecretAad(id))}, ${principal!.user.id})
            on conflict (project_id) do update set kind = excluded.kind, base_url = excluded.base_url, project_path = excluded.project_path,
              token_ciphertext = excluded.token_ciphertext, public_id = excluded.public_id, public_id_hash = excluded.public_id_hash,
              webhook_secret_ciphertext = excluded.webhook_secret_ciphertext, check_ok = null, check_error = null, checked_at = null,
              updated_by = excluded.updated_by, updated_at = now()`);
        },
      );
      const row = await recheck(ctx.db, (await codehostRow(ctx.db, id))!, key, ctx.config.CODEHOST_CA_FILE);
      return json({ ...answer(row, publicBase(ctx.config, request)), webhookSecret: secret }, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  projectRoute('admin', { method: 'GET', path: '/codehost', tag: 'codehost',
    summary: "The project's GitLab code host, which credential the runners use, and that credential checked now (never the token or the webhook secret)",
    responses: { 200: { description: 'the code host and the check', schema: projectCodehostAnswer } },
    async handler({ params, request }, ctx) {
      const row = await codehostRow(ctx.db, params.projectId);
      if (!row) throw notFound('the project has no GitLab code host (its code host is GitHub)');
      return json(answer(await recheck(ctx.db, row, ctx.keys.encryption, ctx.config.CODEHOST_CA_FILE), publicBase(ctx.config, request)));
    },
  }),
];
