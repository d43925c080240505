// The admin pages: static files prebuilt by esbuild into dist/web, served by the same process.
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve } from 'node:path';
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
      'cache-control': extname(file) === '.html' ? 'no-cache' : 'public, max-age=300',
      'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    };
    if (body === null) headers['content-length'] = String(info.size);
    return respond(body, 200, headers);
  } catch {
    return null;
  }
}
