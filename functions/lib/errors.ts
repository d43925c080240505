// Errors are values with a code; one place maps them to responses (DESIGN §4):
// { "error": { "code": "snake_case", "message": "…", "fields": {…}? } }
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields?: Record<string, string>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string, fields?: Record<string, string>) =>
  new HttpError(400, code, message, fields);
export const notFound = (message = 'no such resource') => new HttpError(404, 'not_found', message);
export const conflict = (code: string, message: string) => new HttpError(409, code, message);

export function errorResponse(err: HttpError): Response {
  const body = { error: { code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}) } };
  return json(body, { status: err.status, headers: err.headers });
}

/** A JSON response with its Content-Length, so Node sends it sized rather than chunked. */
export function json(data: unknown, init: ResponseInit = {}): Response {
  const text = JSON.stringify(data);
  const headers = new Headers(init.headers);
  headers.set('content-type', 'application/json');
  headers.set('content-length', String(Buffer.byteLength(text)));
  return new Response(text, { ...init, headers });
}
