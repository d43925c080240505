// GET /api/github-apps/:appId/check (docs/github-app.md, "App mode"): does the App's key work? It signs
// the App JWT and lists the App's installations (`GET {apiUrl}/app/installations`); with `?repo=owner/name`
// it also gets that repository's installation token (the shared cached one, or a new one) and tries it on
// the repository. Answers 200 `{ok, installations, error?, repository?}` either way: a failure is GitHub's
// own message (bad key, clock skew, suspended app, not installed on the repository), never the token.
// Instance admins only, like the other app routes.
import type { GithubAppCheck } from '../../protocol/api/github-app-check.ts';
import { githubAppCheck } from '../../protocol/api/github-app-check.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { json, notFound } from '../lib/errors.ts';
import { forgetToken, appJwt, githubCall, installationToken } from './app-token.ts';
import type { AppDeps } from './app-token.ts';
import { appRow } from './apps.ts';
import type { AppRow } from './apps.ts';
import { appParams, checkQuery } from './schema.ts';

interface Installation {
  id: number;
  account: { login?: string } | null;
}

/** A token for the repository that GitHub accepts on it: a cached one GitHub refuses is dropped and minted again, once. */
export async function checkRepository(deps: AppDeps, app: AppRow, repo: string): Promise<Pick<GithubAppCheck, 'error' | 'repository'>> {
  for (let attempt = 1; ; attempt++) {
    const token = await installationToken(deps, app, repo);
    if (!token.ok) return { error: token.error };
    const [owner, name] = repo.split('/');
    const tried = await githubCall(deps, app, 'GET', `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}`, token.value.token, `the installation token on ${repo}`);
    if (tried.ok) return { repository: { repo, installationId: token.value.installationId, tokenExpiresAt: token.value.expiresAt, minted: token.value.minted } };
    if (tried.error.status !== 401 || attempt === 2) return { error: tried.error };
    await forgetToken(deps.db, app.id, repo); // revoked before its expiry: the next ask mints
  }
}

export async function checkApp(deps: AppDeps, app: AppRow, repo?: string): Promise<GithubAppCheck> {
  const jwt = await appJwt(app, deps.key, deps.clock.now());
  if (!jwt.ok) return { ok: false, installations: [], error: jwt.error };
  const listed = await githubCall(deps, app, 'GET', '/app/installations?per_page=100', jwt.value, "listing the App's installations");
  if (!listed.ok) return { ok: false, installations: [], error: listed.error };
  const installations = (Array.isArray(listed.value) ? (listed.value as Installation[]) : []).map((i) => ({ id: Number(i.id), account: i.account?.login ?? null }));
  if (!repo) return { ok: true, installations };
  const checked = await checkRepository(deps, app, repo);
  return { ok: !checked.error, installations, ...checked };
}

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/github-apps/:appId/check', tag: 'codehost', access: 'instanceAdmin', params: appParams,
    summary: "Check the App's key: sign a JWT and list the App's installations; with ?repo=owner/name also get and try that repository's installation token (never shown). GitHub's own error when it fails",
    query: checkQuery,
    responses: { 200: { description: 'whether the key works, the installations, and the error when it does not', schema: githubAppCheck } },
    async handler({ params, query }, ctx) {
      const app = await appRow(ctx.db, params.appId);
      if (!app) throw notFound('no such code-host app');
      return json(await checkApp({ db: ctx.db, key: ctx.keys.encryption, clock: ctx.clock, log: ctx.log }, app, query.repo));
    },
  }),
];
