// A client of GET /api/live for black-box tests: connect with a cookie or a token, collect notices,
// wait for one that matches.
import WebSocket from 'ws';

export interface LiveClient {
  ws: WebSocket;
  notices: Record<string, any>[];
  /** Resolves with the first notice (already received ones count) that matches. */
  next: (match: (n: Record<string, any>) => boolean, timeoutMs?: number) => Promise<Record<string, any>>;
  closed: Promise<{ code: number; reason: string }>;
  close: () => void;
}

export function openLive(baseUrl: string, auth: { cookie?: string; token?: string; origin?: string | null } = {}): LiveClient {
  const headers: Record<string, string> = {};
  if (auth.cookie) headers.cookie = auth.cookie;
  if (auth.token) headers.authorization = `Bearer ${auth.token}`;
  const origin = auth.origin === undefined ? baseUrl : auth.origin;
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/api/live`, { headers, ...(origin ? { origin } : {}) });
  const notices: Record<string, any>[] = [];
  const waiting: { match: (n: Record<string, any>) => boolean; resolve: (n: Record<string, any>) => void }[] = [];
  ws.on('message', (d) => {
    const n = JSON.parse(d.toString());
    notices.push(n);
    for (const w of [...waiting]) {
      if (w.match(n)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(n);
      }
    }
  });
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  return {
    ws,
    notices,
    closed,
    close: () => ws.close(),
    next: (match, timeoutMs = 30_000) => {
      const seen = notices.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching live notice within ${timeoutMs} ms (got ${JSON.stringify(notices).slice(0, 800)})`)), timeoutMs);
        waiting.push({ match, resolve: (n) => (clearTimeout(timer), resolve(n)) });
      });
    },
  };
}

/** Sign in through the API; the session cookie (name=value) and the CSRF token. */
export async function signIn(baseUrl: string, email: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${baseUrl}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status}`);
  return { cookie: res.headers.get('set-cookie')!.split(';')[0], csrf: (await res.json()).csrfToken };
}
