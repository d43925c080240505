// Where people and runners reach this server, for every link the server (or its CLI) builds: PUBLIC_URL
// when set (a path prefix included), else what the server listens on or what the request came to.
import { isIP } from 'node:net';
import type { Config } from './config.ts';

/** A wildcard listen address → loopback; IPv6 literals bracketed. */
export function listeningBase(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${isIP(shown) === 6 ? `[${shown}]` : shown}:${port}`;
}

export { isLoopback } from './http-url.ts';

/** The base of links built without a request (the admin CLI): PUBLIC_URL, else the listening address. */
export const configuredBase = (config: Pick<Config, 'PUBLIC_URL' | 'HOST' | 'PORT'>): string =>
  config.PUBLIC_URL ?? listeningBase(config.HOST, config.PORT);

/** The base of links built while answering a request: PUBLIC_URL, else the origin the request came to. */
export const publicBase = (config: Pick<Config, 'PUBLIC_URL'>, request: Request): string =>
  (config.PUBLIC_URL ?? new URL(request.url).origin).replace(/\/+$/, '');
