// The admin pages: static files prebuilt by esbuild into dist/web, served by the same process.
// Cache lifetimes: the built scripts and style sheets carry a hash of their content in their name
// (assets/<name>-<hash>.js|css and their .map, esbuild.config.mjs), so a name always means the same bytes:
// cached for a year, immutable. index.html names the current ones and is revalidated on every load
// (no-cache), so a new deploy is picked up at once. Anything else (the icon, the runner bundle): 5 minutes.
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, normalize, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from './lib/config.ts';
import { respond } from './lib/respond.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** A content-hashed build output: esbuild's [hash] is 8 characters of A–Z and 2–7. */
const HASHED = /^\/assets\/[\w.-]+-[A-Z2-7]{8}\.(?:js|css)(?:\.map)?$/;
export const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The Cache-Control of a static file, by its path under the web directory. */
export function cacheControl(rel: string): string {
  if (extname(rel) === '.html') return 'no-cache';
  return HASHED.test(rel) ? IMMUTABLE : 'public, max-age=300';
}

export function webDir(config: Config): string {
  return resolve(config.WEB_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'web'));
}

export async function serveStatic(config: Config, pathname: string, method: string): Promise<Response | null> {
  const root = webDir(config);
  let rel: string;
  try {
    rel = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (rel.includes('\0')) return null;
  if (rel.endsWith('/')) rel += 'index.html';
  const file = normalize(join(root, rel));
  if (!file.startsWith(root + '/')) return null; // never outside the web directory
  try {
    const info = await stat(file);
    if (!info.isFile()) return null;
    const body = method === 'HEAD' ? null : await readFile(file);
    // Sized, written at once (lib/respond.ts); a HEAD answer carries the file's length too.
    const headers: Record<string, string> = {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'cache-control': cacheControl(`/${relative(root, file)}`),
      'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    };
    if (body === null) headers['content-length'] = String(info.size);
    return respond(body, 200, headers);
  } catch {
    return null;
  }
}
