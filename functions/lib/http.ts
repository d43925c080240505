// Request-body helpers shared by every route: a byte limit enforced while streaming, strict JSON, zod,
// and the one check every input passes (no text PostgreSQL cannot store, see protocol/text.ts).
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { UNSTORABLE_MESSAGE, fieldPath, unstorablePaths } from '../../protocol/text.ts';
import { HttpError, badRequest } from './errors.ts';
import { humanIssue } from './issues.ts';

/**
 * 413, and the connection is closed after it (functions/server.ts destroys the socket once the answer
 * is flushed): the rest of an oversized body is never read, only refused.
 */
export const tooLarge = (limit: number) =>
  new HttpError(413, 'payload_too_large', `request body is larger than ${limit} bytes`, undefined, { connection: 'close' });

/** 408: the body was not all there in time; the connection is closed after it, as for 413. */
const bodyTimeout = (timeoutMs: number) =>
  new HttpError(408, 'request_timeout', `the request body did not arrive within ${timeoutMs / 1000} s`, undefined, { connection: 'close' });

/** Largest body a route that takes none accepts (and ignores); larger ones get 413. */
export const NO_BODY_BYTES = 4096;

/** Does the request carry a body (declared length above zero, or chunked)? */
export const hasBody = (request: Request): boolean =>
  Number(request.headers.get('content-length') ?? 0) > 0 || request.headers.has('transfer-encoding');

/** 413 at once when the declared Content-Length is over `limit`: nothing is read, the connection closes. */
export function refuseDeclaredLength(declared: string | null | undefined, limit: number): void {
  if (declared != null && Number(declared) > limit) throw tooLarge(limit);
}

/** hasBody for Node's own request: a length or chunking is declared (HTTP/1.1: neither = no body). */
export const nodeHasBody = (req: IncomingMessage): boolean =>
  req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;

/**
 * Read the raw body, refusing it with 413 as soon as it passes `limit` — from Content-Length before
 * reading anything, otherwise while streaming, so an oversized body is never buffered whole.
 */
export async function readBody(request: Request, limit: number, timeoutMs?: number): Promise<Uint8Array> {
  refuseDeclaredLength(request.headers.get('content-length'), limit);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  // A deadline for the whole body (when given): a client that trickles bytes cannot hold the request.
  let timer: NodeJS.Timeout | undefined;
  const deadline = timeoutMs === undefined ? null : new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
  for (;;) {
    const next = deadline ? await Promise.race([reader.read(), deadline]) : await reader.read();
    if (next === 'timeout') {
      reader.releaseLock(); // as for 413: the server closes the connection after the answer
      throw bodyTimeout(timeoutMs!);
    }
    const { done, value } = next;
    if (done) {
      clearTimeout(timer);
      break;
    }
    size += value.byteLength;
    if (size > limit) {
      clearTimeout(timer);
      // Not cancel(): that destroys the request and its socket before the 413 is sent. The stream
      // stays paused, and the server closes the connection after the answer.
      reader.releaseLock();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/** Checks waiting for the end of this event-loop turn's I/O callbacks. */
let afterReadsQueue: (() => void)[] = [];

/**
 * Run `fn` once the socket reads of this event-loop turn have been handled (one setImmediate for all the
 * calls of a turn), in the order of the calls. Node parses a request's body after its 'request' event has
 * run, and with the process.nextTick of the event in between, so a deadline checked on the next tick found
 * nearly every body incomplete and armed a timer for each request (docs/performance.md, Inbound triggers).
 * The hook's door (app.ts) also writes its answers here, all of a turn's together.
 */
export function afterReads(fn: () => void): void {
  if (afterReadsQueue.push(fn) > 1) return;
  setImmediate(() => {
    const queue = afterReadsQueue;
    afterReadsQueue = [];
    for (const f of queue) f();
  });
}

/**
 * readBody for Node's own request (the server's front door for POST /hooks/…, app.ts createHookDoor): the
 * same limit, deadline and answers, read from the stream's events rather than through a web stream. On
 * 413 or 408 the request is paused, not drained: the server closes the connection after the answer.
 */
export function readNodeBody(req: IncomingMessage, limit: number, timeoutMs?: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    refuseDeclaredLength(req.headers['content-length'], limit); // a throw here rejects
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    // The deadline's timer is armed only for a body still incomplete once this turn's reads are parsed
    // (see afterReads), not for every request: a small body comes in the segment of its headers.
    if (timeoutMs !== undefined) {
      afterReads(() => {
        if (!done && !req.complete) timer = setTimeout(() => stop(bodyTimeout(timeoutMs)), timeoutMs);
      });
    }
    const stop = (err?: HttpError) => {
      done = true;
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onCut).off('close', onCut);
      if (!err) return resolve(size === 0 ? new Uint8Array(0) : Buffer.concat(chunks, size));
      req.pause();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) return stop(tooLarge(limit));
      chunks.push(chunk);
    };
    const onEnd = () => stop();
    // The client went away (or the socket failed) before the body was complete: nobody reads the answer.
    const onCut = () => stop(new HttpError(400, 'request_aborted', 'the request body ended before it was complete', undefined, { connection: 'close' }));
    req.on('data', onData).on('end', onEnd).on('error', onCut).on('close', onCut);
  });
}

/** A web Headers' `get`/`has` over Node's request headers (lower-case names; repeated ones joined with `, `, as Headers does). */
export function nodeHeaders(req: IncomingMessage): Pick<Headers, 'get' | 'has'> {
  return {
    get: (name) => {
      const v = req.headers[name.toLowerCase()];
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
    },
    has: (name) => req.headers[name.toLowerCase()] !== undefined,
  };
}

/** `application/json`, with or without parameters (`; charset=utf-8`); not `application/json-patch+json`. */
export const isJsonType = (type: string | null): boolean =>
  type === 'application/json' || (type ?? '').split(';')[0].trim().toLowerCase() === 'application/json';

/** Parse a JSON body with a limit and validate it; 415, 400 `invalid_json` or 400 `invalid_body` naming fields. */
export async function readJson<S extends z.ZodType>(request: Request, schema: S, limit: number): Promise<z.infer<S>> {
  if (!isJsonType(request.headers.get('content-type'))) {
    throw new HttpError(415, 'unsupported_media_type', 'request body must be application/json');
  }
  const raw = await readBody(request, limit);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    throw badRequest('invalid_json', 'request body is not valid JSON');
  }
  return parseWith(schema, value, 'invalid_body');
}

/** Most fields one 400 names; a body with thousands of bad keys gets a short answer. */
const MAX_FIELDS = 20;

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * Validate any input (body, query, path) with zod; the 400 names each bad field (cut, see
 * protocol/text.ts), never its value. Unstorable text anywhere, keys included, is refused first.
 * The message repeats only the schema's own field names; unknown keys appear once, in `fields`.
 */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, code = 'invalid_request'): z.infer<S> {
  const unstorable = unstorablePaths(value, MAX_FIELDS);
  if (unstorable.length) {
    const fields = Object.fromEntries(unstorable.map((p) => [p, UNSTORABLE_MESSAGE]));
    throw badRequest(code, `${plural(unstorable.length, 'field')} with U+0000 or unpaired surrogates`, fields);
  }
  const result = schema.safeParse(value, { error: humanIssue });
  if (result.success) return result.data;
  const fields: Record<string, string> = {};
  const named: string[] = [];
  let unknown = 0;
  for (const issue of result.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      unknown += issue.keys.length;
      for (const key of issue.keys.slice(0, MAX_FIELDS)) fields[fieldPath([...issue.path, key])] = 'unknown field';
    } else {
      const path = fieldPath(issue.path);
      if (!(path in fields)) named.push(path);
      fields[path] = issue.message;
    }
  }
  const kept = Object.fromEntries(Object.entries(fields).slice(0, MAX_FIELDS));
  const parts = [...(named.length ? [`invalid fields: ${named.slice(0, MAX_FIELDS).join(', ')}`] : []), ...(unknown ? [plural(unknown, 'unknown field')] : [])];
  throw badRequest(code, parts.join('; '), kept);
}
