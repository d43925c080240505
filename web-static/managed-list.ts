// A list an instance admin manages on the Settings page (chat channels, GitHub Apps): loaded on mount and
// after every change, the last failure's text (a successful load clears it), and the fields the API
// refused in the last form sent. One hook, so each section writes only its own rows and forms.
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from './api.ts';

export function useManagedList<A, T>(path: string, pick: (answer: A) => T[]) {
  const [items, setItems] = useState<T[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const load = () =>
    api<A>(path)
      .then((r) => (setItems(pick(r)), setError(null)))
      .catch((e) => setError(errorText(e)));
  useEffect(() => void load(), []);
  /**
   * POSTs `body` to the list's path: on success the form is reset, the refused fields cleared, `then`
   * sees the answer and the list is loaded again; on failure the refused fields and the error show.
   */
  const create = async <R>(form: HTMLFormElement, body: unknown, then?: (answer: R) => void): Promise<void> => {
    try {
      const r = await api<R>(path, { method: 'POST', body });
      form.reset();
      setFields(null);
      then?.(r);
      await load();
    } catch (e) {
      setFields((e as { fields?: Record<string, string> }).fields ?? null);
      setError(errorText(e));
    }
  };
  return { items, error, setError, fields, load, create };
}
