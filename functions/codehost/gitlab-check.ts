// Checking a project's GitLab credential (issue 42; docs/gitlab.md), for the Projects page: the base URL
// through the outbound address guard (functions/webhooks/guard.ts, the webhooks' allowlist: a loopback or
// private address only when listed), then, with the token, `GET <base>/api/v4/projects/<path>` (can it
// see the project?) and `GET <base>/api/v4/personal_access_tokens/self` (its scopes: api and
// write_repository are needed to open merge requests and push). GitLab's own error text is shown when
// it refuses; the token never is. Every failure ends in {ok: false, error}.
import { checkTarget, compileAllowlist } from '../webhooks/guard.ts';
import type { Resolver } from '../webhooks/guard.ts';
import { loadAllowlist } from '../webhooks/webhooks.ts';
import type { Queryable } from '../lib/db/index.ts';

export const NEEDED_SCOPES = ['api', 'write_repository'] as const;

export interface GitlabCheck {
  ok: boolean;
  error?: string;
}

/** The guard's verdict on a base URL: null when it may be called. */
export async function guardRefusal(q: Queryable, baseUrl: string, resolve?: Resolver): Promise<string | null> {
  const r = await checkTarget(new URL(baseUrl), compileAllowlist(await loadAllowlist(q)), resolve);
  return r.ok ? null : r.detail;
}

const say = (body: unknown) => {
  const b = body as { message?: unknown; error?: unknown; error_description?: unknown } | null;
  const m = b?.error_description ?? b?.message ?? b?.error;
  return (typeof m === 'string' ? m : m ? JSON.stringify(m) : '').slice(0, 300);
};

async function get(url: string, token: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': 'svc' }, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

export async function checkGitlab(q: Queryable, baseUrl: string, projectPath: string, token: string | null): Promise<GitlabCheck> {
  const refused = await guardRefusal(q, baseUrl);
  if (refused) return { ok: false, error: `the base URL is refused by the outbound address guard: ${refused}` };
  if (!token) return { ok: false, error: 'no token stored: the runners use their own GITLAB_TOKEN, which the server cannot check' };
  const api = `${baseUrl.replace(/\/+$/, '')}/api/v4`;
  try {
    const project = await get(`${api}/projects/${encodeURIComponent(projectPath)}`, token);
    if (project.status !== 200) return { ok: false, error: `GitLab answered HTTP ${project.status} for ${projectPath}${say(project.body) ? `: ${say(project.body)}` : ''}` };
    const self = await get(`${api}/personal_access_tokens/self`, token);
    const scopes = (self.body as { scopes?: unknown } | null)?.scopes;
    if (self.status === 200 && Array.isArray(scopes)) {
      const missing = NEEDED_SCOPES.filter((s) => !scopes.includes(s));
      if (missing.length) return { ok: false, error: `the token can read ${projectPath} but lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(' and ')} (needed to open merge requests and push)` };
    }
    return { ok: true };
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).name;
    return { ok: false, error: `GitLab at ${baseUrl} did not answer (${cause})` };
  }
}
