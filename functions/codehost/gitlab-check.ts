// Checking a project's GitLab credential (issue 42; docs/gitlab.md), for the Projects page: the base URL
// through the outbound address guard (functions/webhooks/guard.ts, the webhooks' allowlist: a loopback or
// private address only when listed), then, with the token, `GET <base>/api/v4/projects/<path>` (can it
// see the project?) and `GET <base>/api/v4/personal_access_tokens/self` (its scopes: api and
// write_repository are needed to open merge requests and push). GitLab's own error text is shown when
// it refuses; the token never is. Every failure ends in {ok: false, error}.
// CODEHOST_CA_FILE (a self-managed instance's own CA, PEM) is trusted here, beside the system's roots,
// and nowhere else on the server: webhook deliveries and the GitHub App's calls do not get it.
import { readFileSync } from 'node:fs';
import type https from 'node:https';
import { rootCertificates } from 'node:tls';
import { checkTarget, compileAllowlist } from '../webhooks/guard.ts';
import type { Allowlist, Resolver } from '../webhooks/guard.ts';
import { requestJson } from '../webhooks/request.ts';
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

const bundles = new Map<string, string[]>();

/** TLS options for code-host calls: the system's roots plus CODEHOST_CA_FILE's certificates (read once). */
export function codehostTls(config: { CODEHOST_CA_FILE?: string }): https.RequestOptions | undefined {
  const file = config.CODEHOST_CA_FILE;
  if (!file) return undefined;
  let ca = bundles.get(file);
  if (!ca) bundles.set(file, (ca = [...rootCertificates, readFileSync(file, 'utf8')]));
  return { ca };
}

/** One GET through the guard, sent to the checked address (webhooks/request.ts: pinned, no redirects). */
async function get(url: string, token: string, allowlist: Allowlist, tls: https.RequestOptions | undefined): Promise<{ status: number; body: unknown }> {
  const a = await requestJson({ url: new URL(url), method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': 'svc' }, allowlist, tls });
  if (!a.ok) throw new Error(`${a.error}: ${a.detail}`);
  return { status: a.status, body: a.json };
}

export async function checkGitlab(q: Queryable, baseUrl: string, projectPath: string, token: string | null, tls?: https.RequestOptions): Promise<GitlabCheck> {
  const allowlist = compileAllowlist(await loadAllowlist(q));
  const refused = await checkTarget(new URL(baseUrl), allowlist);
  if (!refused.ok) return { ok: false, error: `the base URL is refused by the outbound address guard: ${refused.detail}` };
  if (!token) return { ok: false, error: 'no token stored: the runners use their own GITLAB_TOKEN, which the server cannot check' };
  const api = `${baseUrl.replace(/\/+$/, '')}/api/v4`;
  try {
    const project = await get(`${api}/projects/${encodeURIComponent(projectPath)}`, token, allowlist, tls);
    if (project.status !== 200) return { ok: false, error: `GitLab answered HTTP ${project.status} for ${projectPath}${say(project.body) ? `: ${say(project.body)}` : ''}` };
    const self = await get(`${api}/personal_access_tokens/self`, token, allowlist, tls);
    const scopes = (self.body as { scopes?: unknown } | null)?.scopes;
    if (self.status === 200 && Array.isArray(scopes)) {
      const missing = NEEDED_SCOPES.filter((s) => !scopes.includes(s));
      if (missing.length) return { ok: false, error: `the token can read ${projectPath} but lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(' and ')} (needed to open merge requests and push)` };
    }
    return { ok: true };
  } catch (e) {
    return { ok: false, error: `GitLab at ${baseUrl} did not answer (${(e as Error).message.slice(0, 300)})` };
  }
}
