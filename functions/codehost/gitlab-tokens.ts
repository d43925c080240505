// The stored GitLab tokens a runner is handed (issue 42; docs/gitlab.md "Credentials"): for the GitLab
// projects of the runner (or one of them, for a command), each project's access token as a
// `{kind: 'gitlab', repo: <project path>, token, expiresAt}` entry of the frame's `codehost` field — only
// to runners that announced CODEHOST_GITLAB_CAPABILITY (and codehost.tokens, checked by the caller), never
// in args, rows or logs. A stored token has no expiry the server knows: it is sent as valid for
// GITLAB_TOKEN_TTL_MS and sent again before that (AppTokenRefresher's resend window).
import { CODEHOST_GITLAB_CAPABILITY } from '../../protocol/frames.ts';
import type { CodehostToken } from '../../protocol/frames.ts';
import { decryptSecret } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { gitlabTokenAad } from './gitlab-config.ts';

export const GITLAB_TOKEN_TTL_MS = 60 * 60_000;

export async function gitlabTokens(q: Queryable, key: Buffer | null, runnerId: string, projectId?: string): Promise<CodehostToken[]> {
  if (!key) return [];
  const rows = await q.query<{ project_id: string; project_path: string; token_ciphertext: string }>(sql`
    select c.project_id, c.project_path, c.token_ciphertext from project_codehosts c
      join projects p on p.id = c.project_id join runners r on r.id = p.runner_id
     where p.runner_id = ${runnerId} and c.token_ciphertext is not null
       and coalesce(r.capabilities, '[]'::jsonb) @> ${sql.json([CODEHOST_GITLAB_CAPABILITY])}
       and (${projectId ?? null}::text is null or p.id = ${projectId ?? null})`);
  const expiresAt = new Date(Date.now() + GITLAB_TOKEN_TTL_MS).toISOString();
  return rows.flatMap((r) => {
    try {
      return [{ kind: 'gitlab' as const, repo: r.project_path, token: decryptSecret(key, r.token_ciphertext, gitlabTokenAad(r.project_id)), expiresAt }];
    } catch {
      return []; // another key: the runner uses its own GITLAB_TOKEN; the Projects page's check says why
    }
  });
}
