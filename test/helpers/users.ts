// Users for black-box tests: a non-admin account made through the real API (link, password, sign-in),
// with a personal API token, and a small caller that speaks JSON with that token.
import { randomBytes } from 'node:crypto';
import type { RunningServer } from './server.ts';

export interface TestUser {
  id: string;
  email: string;
  token: string;
  /** For signing in through the admin pages. */
  password: string;
}

export interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A call to the server as its instance admin, or as the holder of `token`; the body parsed when JSON. */
export async function callAs(server: RunningServer, path: string, init: { method?: string; json?: unknown; token?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  const res = await server.api(path, { method: init.method ?? 'GET', json: init.json, headers });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, body };
}

/** A user without instance rights: created by the admin, password set through its link, token made signed in. */
export async function makeUser(server: RunningServer, label: string): Promise<TestUser> {
  const email = `${label}-${randomBytes(3).toString('hex')}@example.test`;
  const made = await callAs(server, '/api/users', { method: 'POST', json: { email, name: label } });
  if (made.status !== 201) throw new Error(`creating ${label} failed: ${made.status} ${JSON.stringify(made.body)}`);
  const linkToken = /set-password\?token=([\w-]+)/.exec(made.body.passwordSetUrl)![1];
  const password = `pw-${label}-${randomBytes(6).toString('hex')}`;
  const json = { 'content-type': 'application/json' };
  const set = await fetch(`${server.url}/api/password`, { method: 'POST', headers: json, body: JSON.stringify({ token: linkToken, password }) });
  if (set.status !== 200) throw new Error(`setting ${label}'s password failed: ${set.status}`);
  const signIn = await fetch(`${server.url}/api/session`, { method: 'POST', headers: json, body: JSON.stringify({ email, password }) });
  if (signIn.status !== 200) throw new Error(`signing ${label} in failed: ${signIn.status}`);
  const { csrfToken } = await signIn.json();
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  const tok = await fetch(`${server.url}/api/tokens`, { method: 'POST', headers: { ...json, cookie, 'x-csrf-token': csrfToken }, body: JSON.stringify({ name: label }) });
  if (tok.status !== 201) throw new Error(`making ${label}'s token failed: ${tok.status}`);
  return { id: made.body.user.id, email, password, token: (await tok.json()).token };
}
