// Shared by the code-host app tests and bench/ghapp.mjs's test twin: a webhook POST signed exactly as
// GitHub signs it (X-Hub-Signature-256 over the raw bytes), with GitHub's delivery and event headers.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { githubSignature } from '../../functions/codehost/verify.ts';

export interface GithubPost {
  status: number;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function postGithub(
  url: string,
  secret: string,
  event: string,
  payload: unknown,
  opts: { delivery?: string; signature?: string | null; headers?: Record<string, string | null> } = {},
): Promise<GithubPost> {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const h = new Headers({ 'content-type': 'application/json', 'user-agent': 'GitHub-Hookshot/test', 'x-github-event': event, 'x-github-delivery': opts.delivery ?? randomUUID() });
  if (opts.signature !== null) h.set('x-hub-signature-256', opts.signature ?? githubSignature(secret, raw));
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === null) h.delete(k);
    else h.set(k, v);
  }
  const res = await fetch(url, { method: 'POST', headers: h, body: raw });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, text, body };
}

/** A push event of a repository as GitHub sends it (the fields the server reads, and a few more). */
export const pushEvent = (fullName: string) => ({
  ref: 'refs/heads/main',
  before: '0'.repeat(40),
  after: '1'.repeat(40),
  repository: { id: 1, name: fullName.split('/')[1], full_name: fullName, private: true, owner: { login: fullName.split('/')[0] } },
  installation: { id: 42 },
  commits: [],
});

/**
 * A webhook body as GitHub sends it, from test/fixtures/github-webhooks/<name>.json (GitHub's own
 * example deliveries, for Codertocat/Hello-World), moved to `repo` and changed by `edit`.
 */
export function webhookBody(name: string, repo: string, edit: (b: any) => void = () => {}): any { // eslint-disable-line @typescript-eslint/no-explicit-any
  const text = readFileSync(new URL(`../fixtures/github-webhooks/${name}.json`, import.meta.url), 'utf8');
  const [owner, short] = repo.split('/');
  const body = JSON.parse(text.replaceAll('Codertocat/Hello-World', repo).replaceAll('"Hello-World"', JSON.stringify(short)).replaceAll('"login": "Codertocat"', `"login": ${JSON.stringify(owner)}`));
  edit(body);
  return body;
}
