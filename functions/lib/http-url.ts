// The http(s) URL check of the settings that take one (PUBLIC_URL, a webhook's url, a code-host app's
// API URL): parseable, http: or https:, no user name or password, no fragment, and no query where the
// setting refuses one.
import * as z from 'zod';

/** Is `text` an http(s) URL without credentials or fragment (and, unless `query` is allowed, without a
 *  query)? A refused part is refused even when empty: a bare `#` or `?`. */
export function isHttpUrl(text: string, allow: { query: boolean }): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && !text.includes('#') && (allow.query || !text.includes('?'));
  } catch {
    return false;
  }
}

/** A string schema that refuses with `message` what isHttpUrl refuses. */
export const httpUrl = (string: z.ZodString, allow: { query: boolean }, message: string) => string.refine((text) => isHttpUrl(text, allow), { message });

/** Does this host name or address only ever reach the same machine? */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}
