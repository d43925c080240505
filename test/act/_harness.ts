// Shared by the action link tests: signing in as a browser does (the session cookie and its CSRF
// token: action links refuse API tokens), and calling /api/act/:token with that session.
import type { RunningServer } from '../helpers/server.ts';
import type { Answer } from '../helpers/users.ts';

export interface Session {
  cookie: string;
  csrf: string;
}

export async function signIn(server: RunningServer, email: string, password: string): Promise<Session> {
  const res = await fetch(`${server.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (res.status !== 200) throw new Error(`signing ${email} in failed: ${res.status}`);
  const { csrfToken } = await res.json();
  return { cookie: res.headers.get('set-cookie')!.split(';')[0], csrf: csrfToken };
}

/** GET or POST /api/act/<token> with a session (or a bearer token, or nobody). */
export async function act(server: RunningServer, method: 'GET' | 'POST', token: string, who: Session | { bearer: string } | null): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (who && 'cookie' in who) Object.assign(headers, { cookie: who.cookie, 'x-csrf-token': who.csrf });
  if (who && 'bearer' in who) headers.authorization = `Bearer ${who.bearer}`;
  const res = await fetch(`${server.url}/api/act/${token}`, { method, headers });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, body };
}

/** The token of an action link `<base>/#/act/<token>`. */
export const tokenOf = (url: string) => /#\/act\/([A-Za-z0-9_.-]+)$/.exec(url)![1];
