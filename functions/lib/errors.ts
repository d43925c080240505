// Errors are values with a code; one place maps them to responses (DESIGN §4):
// { "error": { "code": "snake_case", "message": "…", "fields": {…}? } }
import { json } from './respond.ts';

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

/** Unique constraints whose violation means "that name is taken": a race the pre-check cannot close. */
const UNIQUE: Record<string, [code: string, message: string]> = {
  projects_name: ['name_taken', 'a project with that name exists already'],
  users_email: ['email_taken', 'a user with that e-mail exists already'],
};

/** Map a database unique violation (SQLSTATE 23505) to 409; anything else stays as it is. */
export function fromDatabaseError(err: unknown): HttpError | null {
  const e = err as { code?: string; constraint_name?: string; constraint?: string };
  if (e?.code !== '23505') return null;
  const [code, message] = UNIQUE[e.constraint_name ?? e.constraint ?? ''] ?? ['conflict', 'that value exists already'];
  return conflict(code, message);
}

export function errorResponse(err: HttpError): Response {
  const body = { error: { code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}) } };
  return json(body, { status: err.status, headers: err.headers });
}

export { json } from './respond.ts';
