// Payload placeholders of inbound triggers (spec: Limits "Placeholder", "Placeholder value",
// "Rendered args", "Paths used in placeholders"). Pure: templates are parsed once, rendered against a
// parsed JSON payload, and every refusal is a value with a code — nothing here throws.
//   placeholder  exactly `{{payload.<path>}}`, 1–10 dotted segments of [A-Za-z0-9_-]; a numeric segment
//                indexes an array; no expressions, filters or defaults; any other `{{` or `}}` refused
//   value        string, number or boolean; at most 500 characters once stringified; the WHOLE value
//                must match the trigger's value pattern (default ^[\w .,:/#@+-]*$; RE2 syntax, matched
//                in linear time: pattern.ts); never NUL or a lone surrogate whatever the pattern (they
//                cannot be passed on or stored); the values of one payload get MATCH_BUDGET_MS of
//                matching in all, so no payload holds the main thread longer whatever the pattern
//   rendered     all args together at most 4096 bytes of UTF-8
//   paths        every placeholder path must be one of the trigger's allowed paths
// In protocol/ because the Integrations page checks a sample payload against the same rules (web-static/trigger-snippets.ts).
import { compileValuePattern, valuePatternProblem } from './pattern.ts';
import type { ValuePattern } from './pattern.ts';

export { compileValuePattern, valuePatternProblem };
export type { ValuePattern };
export const DEFAULT_VALUE_PATTERN = '^[\\w .,:/#@+-]*$';
export const MAX_SEGMENTS = 10;
export const MAX_VALUE_CHARS = 500;
export const MAX_RENDERED_BYTES = 4096;
/**
 * Matching time one payload's values may take in all. RE2 is linear, but a large pattern that defeats
 * its DFA still costs ~90 µs a character: 100 allowed paths of 500 characters would be seconds. The
 * default pattern matches that worst payload in ~3 ms, so only a pathological pattern reaches this.
 */
export const MATCH_BUDGET_MS = 100;

const SEGMENT = '[A-Za-z0-9_-]+';
const PATH = new RegExp(`^${SEGMENT}(?:\\.${SEGMENT})*$`);
const PLACEHOLDER = new RegExp(`\\{\\{payload\\.(${SEGMENT}(?:\\.${SEGMENT})*)\\}\\}`, 'y');
const UNSTORABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const utf8 = new TextEncoder();

export type Part = string | { path: string };
export type Template = Part[];

export interface Reason {
  /** Where: `args.<n>` for one arg, `args` for the whole. */
  field: string;
  code: 'invalid_utf8' | 'invalid_json' | 'not_object' | 'syntax' | 'path_not_allowed' | 'missing' | 'not_scalar' | 'too_long' | 'pattern' | 'unstorable' | 'too_large';
  /** The placeholder path when one is concerned. */
  path?: string;
  message: string;
}

export type Parsed = { ok: true; template: Template } | { ok: false; message: string };

/** A path as allowed paths and placeholders write it: 1–10 dotted segments of [A-Za-z0-9_-]. */
export function pathProblem(path: string): string | null {
  if (!PATH.test(path)) return 'must be dotted segments of letters, digits, _ or -';
  if (path.split('.').length > MAX_SEGMENTS) return `must have at most ${MAX_SEGMENTS} segments`;
  return null;
}

/** Split a template into text and placeholders, or say what is wrong with it. */
export function parseTemplate(text: string): Parsed {
  const parts: Part[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('{{', i)) {
      PLACEHOLDER.lastIndex = i;
      const m = PLACEHOLDER.exec(text);
      if (!m) return { ok: false, message: `"{{" at ${i} does not start a placeholder {{payload.<path>}}` };
      const problem = pathProblem(m[1]);
      if (problem) return { ok: false, message: `placeholder at ${i}: the path ${problem}` };
      if (literal) parts.push(literal);
      literal = '';
      parts.push({ path: m[1] });
      i += m[0].length;
    } else if (text.startsWith('}}', i)) {
      return { ok: false, message: `"}}" at ${i} does not end a placeholder` };
    } else {
      literal += text[i++];
    }
  }
  if (literal) parts.push(literal);
  return { ok: true, template: parts };
}

/** Templates as the admin API checks them: each parses, and every path is allowed. Reasons name `args.<n>`. */
export function checkTemplates(args: readonly string[], allowedPaths: readonly string[]): { templates: Template[]; reasons: Reason[] } {
  const allowed = new Set(allowedPaths);
  const templates: Template[] = [];
  const reasons: Reason[] = [];
  args.forEach((arg, n) => {
    const parsed = parseTemplate(arg);
    if (!parsed.ok) {
      templates.push([]); // keeps templates[n] aligned with args[n]
      return void reasons.push({ field: `args.${n}`, code: 'syntax', message: parsed.message });
    }
    for (const part of parsed.template) {
      if (typeof part !== 'string' && !allowed.has(part.path)) {
        reasons.push({ field: `args.${n}`, code: 'path_not_allowed', path: part.path, message: `payload.${part.path} is not in allowedPaths` });
      }
    }
    templates.push(parsed.template);
  });
  const fixed = templates.reduce((n, t) => n + t.reduce((m, p) => m + (typeof p === 'string' ? utf8.encode(p).length : 0), 0), 0);
  if (fixed > MAX_RENDERED_BYTES) reasons.push({ field: 'args', code: 'too_large', message: `the text of the args alone is ${fixed} bytes; rendered args may be at most ${MAX_RENDERED_BYTES}` });
  return { templates, reasons };
}

/** The value at a dotted path: own properties only; a numeric segment also indexes an array. */
export function lookup(payload: unknown, path: string): { found: true; value: unknown } | { found: false } {
  let current: unknown = payload;
  for (const segment of path.split('.')) {
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(segment) || Number(segment) >= current.length) return { found: false };
      current = current[Number(segment)];
    } else if (current !== null && typeof current === 'object' && Object.hasOwn(current, segment)) {
      current = (current as Record<string, unknown>)[segment];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: current };
}

/** Does a value match? null once the payload's matching budget is spent (the value was not checked). */
type Matcher = (text: string) => boolean | null;

/** The pattern's verdicts for one payload: a value used by several placeholders is matched once. */
function budgeted(pattern: ValuePattern, now: () => number): Matcher {
  const verdicts = new Map<string, boolean>();
  let spent = 0;
  return (text) => {
    const known = verdicts.get(text);
    if (known !== undefined) return known;
    if (spent > MATCH_BUDGET_MS) return null;
    const started = now();
    const verdict = pattern.test(text);
    spent += now() - started;
    verdicts.set(text, verdict);
    return verdict;
  };
}

function valueOf(payload: unknown, path: string, matches: Matcher): { text: string } | Omit<Reason, 'field'> {
  const at = lookup(payload, path);
  const ref = `payload.${path}`;
  if (!at.found) return { code: 'missing', path, message: `${ref} is not in the payload` };
  const v = at.value;
  const scalar = typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
  if (!scalar) return { code: 'not_scalar', path, message: `${ref} must be a string, number or boolean` };
  const text = String(v);
  // Counted in characters (code points); the length is checked before the pattern runs.
  let chars = 0;
  for (const _ of text) if (++chars > MAX_VALUE_CHARS) return { code: 'too_long', path, message: `${ref} is longer than ${MAX_VALUE_CHARS} characters` };
  if (UNSTORABLE.test(text)) return { code: 'unstorable', path, message: `${ref} contains NUL or an unpaired surrogate` };
  const verdict = matches(text);
  if (verdict === null) return { code: 'pattern', path, message: `${ref} was not checked: this payload's values took the value pattern over ${MATCH_BUDGET_MS} ms in all; simplify the pattern` };
  if (!verdict) return { code: 'pattern', path, message: `${ref} does not match the value pattern` };
  return { text };
}

export type Rendered = { ok: true; args: string[] } | { ok: false; reasons: Reason[] };

/** Render parsed templates against a payload; every problem is reported, not only the first. */
export function render(templates: readonly Template[], payload: unknown, pattern: ValuePattern, allowedPaths: readonly string[], now: () => number = () => performance.now()): Rendered {
  const allowed = new Set(allowedPaths);
  const matches = budgeted(pattern, now);
  const reasons: Reason[] = [];
  const args = templates.map((template, n) => {
    let out = '';
    for (const part of template) {
      if (typeof part === 'string') {
        out += part;
        continue;
      }
      if (!allowed.has(part.path)) {
        reasons.push({ field: `args.${n}`, code: 'path_not_allowed', path: part.path, message: `payload.${part.path} is not in allowedPaths` });
        continue;
      }
      const value = valueOf(payload, part.path, matches);
      if ('text' in value) out += value.text;
      else reasons.push({ field: `args.${n}`, ...value });
    }
    return out;
  });
  if (reasons.length) return { ok: false, reasons };
  const bytes = args.reduce((n, a) => n + utf8.encode(a).length, 0);
  if (bytes > MAX_RENDERED_BYTES) return { ok: false, reasons: [{ field: 'args', code: 'too_large', message: `rendered args are ${bytes} bytes; at most ${MAX_RENDERED_BYTES}` }] };
  return { ok: true, args };
}

/** Parse and render in one go (dry run, deliveries): a template that does not parse is a reason too. */
export function renderArgs(args: readonly string[], payload: unknown, valuePattern: string, allowedPaths: readonly string[]): Rendered {
  // A pattern saved before it had to be RE2's (or the size limit) is refused here with the reason.
  const pattern = compileValuePattern(valuePattern);
  if (!pattern) return { ok: false, reasons: [{ field: 'valuePattern', code: 'syntax', message: `the value pattern ${valuePatternProblem(valuePattern)}` }] };
  const checked = checkTemplates(args, allowedPaths);
  const syntax = checked.reasons.filter((r) => r.code === 'syntax');
  if (syntax.length) return { ok: false, reasons: syntax };
  return render(checked.templates, payload, pattern, allowedPaths);
}

/** The payload must be a JSON object (not an array, a string, a number, true, false or null). */
export function payloadReasons(payload: unknown): Reason[] {
  return payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? [] : [{ field: 'body', code: 'not_object', message: 'the payload must be a JSON object' }];
}

/** The raw body as a payload: strict UTF-8, then JSON, then an object; else the reason. */
export function parsePayload(raw: Uint8Array): { ok: true; payload: Record<string, unknown> } | { ok: false; reasons: Reason[] } {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    return { ok: false, reasons: [{ field: 'body', code: 'invalid_utf8', message: 'the body is not valid UTF-8' }] };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return { ok: false, reasons: [{ field: 'body', code: 'invalid_json', message: 'the body is not valid JSON' }] };
  }
  const reasons = payloadReasons(payload);
  return reasons.length ? { ok: false, reasons } : { ok: true, payload: payload as Record<string, unknown> };
}
