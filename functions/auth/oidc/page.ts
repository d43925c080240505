// What a person sees when a single sign-on ends anywhere but signed in: a small page of its own (the
// browser arrived from the provider, not from the app), saying what happened and offering the way back.
import { respond } from '../../lib/respond.ts';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function problemPage(status: number, title: string, message: string, back: string, setCookie?: string): Response {
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · svc</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:10vh auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}a{color:#0550ae}</style>
</head><body><main>
<h1 id="title">${escape(title)}</h1>
<p id="message">${escape(message)}</p>
<p><a href="${escape(back)}">Back to sign-in</a></p>
</main></body></html>
`;
  const headers: Record<string, string> = {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    'referrer-policy': 'no-referrer',
  };
  if (setCookie) headers['set-cookie'] = setCookie;
  return respond(body, status, headers);
}
