// Responses built so the HTTP adapter writes them at once (docs/performance.md, GET /health).
// @whatwg-node/server sends its own Response (the ponyfill it exports) the cheap way: a string or byte
// body is written in one call, and a plain-object header record goes to Node's writeHead whole. A
// Node built-in Response instead has a ReadableStream body that the adapter pumps through a reader,
// and Headers it copies one by one. So every answer of ours is made here, with a plain header record
// that holds everything the answer needs (a Content-Length too, so nothing is added later).
import { Response as AdapterResponse } from '@whatwg-node/server';

/** The header record an answer was built with, while it may still be completed (withHeaders). */
const OWN_HEADERS = Symbol('svc.headers');

type Body = string | Uint8Array | null;

/** An answer with `body` and exactly `headers` (lower-case names); Content-Length is added for a body. */
export function respond(body: Body, status: number, headers: Record<string, string> = {}): Response {
  if (body !== null) headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  const response = new AdapterResponse(body as string | null, { status, headers }) as unknown as Response;
  (response as unknown as Record<symbol, unknown>)[OWN_HEADERS] = headers;
  return response;
}

/** A JSON answer (`application/json`), sized. */
export function json(data: unknown, init: { status?: number; headers?: Record<string, string> } = {}): Response {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.headers) for (const k in init.headers) headers[k.toLowerCase()] = init.headers[k];
  return respond(JSON.stringify(data), init.status ?? 200, headers);
}

/** An answer without a body. */
export const empty = (status: number, headers: Record<string, string> = {}): Response => respond(null, status, headers);

/**
 * Add headers to an answer before it is sent (the app's X-Request-Id and nosniff). An answer from
 * respond() has them written into its record, which the adapter hands to writeHead whole (and its
 * Headers read from, so `response.headers.get` sees them too); any other Response gets them one by one.
 * A header already present is replaced.
 */
export function withHeaders(response: Response, extra: Record<string, string>): Response {
  const own = (response as unknown as Record<symbol, Record<string, string> | undefined>)[OWN_HEADERS];
  if (own) {
    Object.assign(own, extra);
    // The record is the answer's headers until someone set one through `headers` (then the adapter
    // sends its copy): check that they still read through, else set them there too.
    let through = true;
    for (const k in extra) through &&= response.headers.get(k) === extra[k];
    if (through) return response;
  }
  for (const k in extra) response.headers.set(k, extra[k]);
  return response;
}
