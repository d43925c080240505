// Request-body helpers shared by every route: a byte limit enforced while streaming, strict JSON, zod.
import type { z } from 'zod';
import { HttpError, badRequest } from './errors.ts';

export const tooLarge = (limit: number) =>
  new HttpError(413, 'payload_too_large', `request body is larger than ${limit} bytes`);

/**
 * Read the raw body, refusing it with 413 as soon as it passes `limit` — from Content-Length before
 * reading anything, otherwise while streaming, so an oversized body is never buffered whole.
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
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

/** Parse a JSON body with a limit and validate it; 415, 400 `invalid_json` or 400 `invalid_body` naming fields. */
export async function readJson<S extends z.ZodType>(request: Request, schema: S, limit: number): Promise<z.infer<S>> {
  const type = request.headers.get('content-type') ?? '';
  if (!/^application\/json\b/i.test(type)) {
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

/** Validate any input (body, query, path) with zod; the 400 names each bad field, never its value. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, code = 'invalid_request'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const fields: Record<string, string> = {};
  for (const issue of result.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) fields[[...issue.path, key].join('.')] = 'unknown field';
    } else {
      fields[issue.path.join('.') || '(root)'] = issue.message;
    }
  }
  throw badRequest(code, `invalid fields: ${Object.keys(fields).join(', ')}`, fields);
}
