// CODEHOST_CA_FILE on the runner (docs/gitlab.md, "A self-managed instance with its own CA"): the
// runner's environment may name a PEM file with the code host's own CA. The code-host clients
// (poller.ts: GitHub's and every GitLab instance's) then fetch through https.request with the system's
// roots plus that file's certificates; nothing else in the runner (the server connection, OTLP) trusts
// it. A skill run's `git push` gets the same bundle as `http.sslCAInfo` (bundleFile).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { writeFileAtomic } from '../config.ts';
import { stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';

function caOf(env: Env): string[] | null {
  const file = env.CODEHOST_CA_FILE?.trim();
  if (!file) return null;
  const pem = readFileSync(file, 'utf8'); // a missing file fails the code-host calls loudly, not silently without it
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`CODEHOST_CA_FILE ${file} has no PEM certificate`);
  return [...rootCertificates, pem];
}

/** A fetch for the code-host clients that trusts CODEHOST_CA_FILE too; undefined without one (the global fetch). */
export function codehostFetch(env: Env): typeof fetch | undefined {
  if (!env.CODEHOST_CA_FILE?.trim()) return undefined;
  let ca: string[] | null = null;
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    ca ??= caOf(env);
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(init.headers);
    const body = typeof init.body === 'string' ? init.body : undefined;
    return new Promise<Response>((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : http).request(
        url,
        { method: init.method ?? 'GET', headers: Object.fromEntries(headers), ...(url.protocol === 'https:' ? { ca: ca! } : {}), signal: init.signal ?? undefined },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) for (const x of Array.isArray(v) ? v : [v]) h.append(k, x);
            const status = res.statusCode ?? 502;
            resolve(new Response([101, 204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: h }));
          });
        },
      );
      // fetch's failures carry the cause's code (ECONNREFUSED, a TLS code): the client reports it.
      req.on('error', (e) => reject(Object.assign(new TypeError('fetch failed'), { cause: e })));
      req.end(body);
    });
  }) as typeof fetch;
}

/** The bundle (system roots + CODEHOST_CA_FILE) as a file for git's http.sslCAInfo; null without one. */
export function bundleFile(env: Env): string | null {
  const ca = caOf(env);
  if (!ca) return null;
  const file = join(stateDir(env), 'codehost', 'ca-bundle.pem');
  writeFileAtomic(file, ca.join('\n') + '\n');
  return file;
}
