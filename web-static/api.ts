// The admin pages' one way to call the API: JSON in and out, the session cookie, and the session's
// CSRF token on every state-changing request.
let csrfToken: string | null = null;

export function setCsrf(token: string | null) {
  csrfToken = token;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields?: Record<string, string>,
    /** The whole error answer, for pages that show more than the message (a dry run's `reasons`). */
    readonly body?: unknown,
  ) {
    super(message);
  }
}

export async function api<T = unknown>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const method = init.method ?? 'GET';
  const headers: Record<string, string> = {};
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const res = await fetch(path, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), credentials: 'same-origin' });
  if (res.status === 204) return undefined as T;
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const e = (data as { error?: { code?: string; message?: string; fields?: Record<string, string> } }).error ?? {};
    throw new ApiError(res.status, e.code ?? 'error', e.message ?? `the server answered ${res.status}`, e.fields, data);
  }
  return data as T;
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/**
 * An error for a banner, said once: with `fields`, each field's text (a full sentence alone, else
 * `field: text`) and not the summary that only lists their names; otherwise the message.
 */
export function errorText(e: unknown): string {
  if (e instanceof ApiError && e.fields && Object.keys(e.fields).length) {
    return Object.entries(e.fields)
      .map(([field, text]) => (/^[A-Z]/.test(text) ? text : `${field}: ${text}`))
      .join('; ');
  }
  return e instanceof Error ? e.message : String(e);
}

/**
 * A page's actions (integrations, triggers): each clears the banner first (and with `clear`, e.g. a
 * notice), shows its failure as the banner's text, and reloads the page's data either way.
 */
export const actions =
  (setError: (m: string | null) => void, reload: () => Promise<unknown>, clear?: () => void) =>
  async (fn: () => Promise<unknown>): Promise<void> => {
    setError(null);
    clear?.();
    try {
      await fn();
    } catch (e) {
      setError(errorText(e));
    }
    await reload();
  };
