// Text PostgreSQL cannot store and text that must not be echoed at length. JSON.parse turns the escapes
// `\u0000` and `\ud800` into U+0000 and unpaired surrogates, which `text` and `jsonb` refuse (a 500 if
// they reach a query); every input is checked here first (bodies, queries, path parameters, frames),
// keys as well as values, without recursion so a deeply nested body cannot overflow the stack.

/** U+0000, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

export const UNSTORABLE_MESSAGE = 'must not contain U+0000 or unpaired surrogates';

export const isStorableText = (s: string): boolean => !UNSTORABLE.test(s);

/**
 * Whether JSON text decoded from bytes may parse into unstorable text: only through a `\u` escape.
 * JSON forbids a raw U+0000 in a string, and text decoded from UTF-8 (or with U+FFFD for bad bytes)
 * holds no unpaired surrogate. False means JSON.parse of `json` gives only storable strings and keys,
 * so unstorablePaths need not walk it.
 */
export const mayHoldUnstorable = (json: string): boolean => json.includes('\\u');

/** Cut to `limit` characters (code points, so no half surrogate pair is left at the end). */
export function cut(s: string, limit: number): string {
  if (s.length <= limit) return s;
  // `limit` code points span at most 2·limit+1 code units; never spread a huge string into an array.
  return Array.from(s.slice(0, 2 * limit + 1)).slice(0, limit).join('');
}

/** Longest field name or value an error message repeats back to the caller. */
export const ECHO_LIMIT = 64;

/** A caller-supplied name made safe to echo: cut with an ellipsis, unstorable characters shown as U+FFFD. */
export function echoed(s: string, limit = ECHO_LIMIT): string {
  const head = cut(s, limit);
  return (head.length < s.length ? `${head}…` : head).replace(UNSTORABLE_ALL, '\ufffd');
}

/** A field path as echoed: each part cut, and the whole cut again (nesting is not bounded). */
export const fieldPath = (parts: readonly PropertyKey[]): string =>
  echoed(parts.map((p) => echoed(String(p))).join('.'), 4 * ECHO_LIMIT) || '(root)';

interface At {
  parent: At | null;
  key: string | number;
}
const partsOf = (at: At | null): (string | number)[] => {
  const parts: (string | number)[] = [];
  for (let a = at; a; a = a.parent) parts.push(a.key);
  return parts.reverse();
};

/**
 * The field paths (`name`, `members.0.role`, `meta.<key>`, as `fieldPath` echoes them) of the first
 * `max` strings or object keys in `value` that contain unstorable text.
 */
export function unstorablePaths(value: unknown, max = 10): string[] {
  const out: string[] = [];
  // Paths are built only for a finding: a deep body must not cost a path string per node.
  const stack: [unknown, At | null][] = [[value, null]];
  while (stack.length && out.length < max) {
    const [v, at] = stack.pop()!;
    if (typeof v === 'string') {
      if (!isStorableText(v)) out.push(fieldPath(partsOf(at)));
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], { parent: at, key: i }]);
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i];
        if (isStorableText(k)) stack.push([child, { parent: at, key: k }]);
        else out.push(fieldPath(partsOf({ parent: at, key: k })));
      }
    }
  }
  return out.slice(0, max);
}
