// The event envelope (spec: Events → Envelope): built once per event, serialized once, and sent as
// those exact bytes to every webhook that wants it. Pure functions; no I/O.
import { createHash } from 'node:crypto';
import { cut } from '../../protocol/text.ts';
import { CATALOGUE, FREE_TEXT_LIMIT, TEXT_LIMIT } from './catalogue.ts';
import type { EventType, FieldKind } from './catalogue.ts';

export interface Envelope {
  id: string;
  type: EventType;
  ts: string;
  project: { id: string; repo: string } | null;
  slot?: string;
  issue?: number;
  data: Record<string, unknown>;
}

/**
 * The stable id of an event: a hash of where it came from, so the same event (a runner re-sending
 * an unacknowledged batch, a job retried after a crash) always gets the same id and envelope.
 */
export function eventId(...origin: string[]): string {
  return 'evt_' + createHash('sha256').update(origin.join('\u0000')).digest('hex').slice(0, 32);
}

export { cut };

const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const LEADING = /^[("'`<[{]+/;
const TRAILING = /[)"'`>\]},.;:!?]+$/;

/** Does this word (no spaces) look like a file system path rather than prose or a web address? */
function isPathLike(word: string): boolean {
  if (URL_SCHEME.test(word)) return /^file:/i.test(word);
  if (/^(~[\w.-]*|\.{1,2})?[/\\]/.test(word)) return true; // /abs, ~/x, ~user/x, ./x, ../x, \x, \\server
  if (/^[a-z]:[/\\]/i.test(word)) return true; // C:\ or C:/
  const separators = (word.match(/[/\\]/g) ?? []).length;
  if (separators === 0) return false;
  // One slash is usually prose or a name ("and/or", "owner/repo"); two, or a file name at the end, is a path.
  return separators >= 2 || /\.[A-Za-z0-9]{1,8}$/.test(word);
}

/**
 * Replace every file system path in a text with `[path]` (spec: "file system paths are never
 * included"). Web addresses stay; `file:` URLs go. Applied to every string `data` carries.
 */
export function scrubPaths(text: string): string {
  return text.replace(/\S*[/\\]\S*/g, (token) => {
    const lead = LEADING.exec(token)?.[0] ?? '';
    const rest = token.slice(lead.length);
    const trail = TRAILING.exec(rest)?.[0] ?? '';
    const core = rest.slice(0, rest.length - trail.length);
    return core && isPathLike(core) ? `${lead}[path]${trail}` : token;
  });
}

function text(value: unknown, limit: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  const clean = cut(scrubPaths(value), limit);
  return clean === '' ? undefined : clean;
}

function webUrl(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > TEXT_LIMIT) return undefined;
  try {
    const u = new URL(value);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.toString() : undefined;
  } catch {
    return undefined;
  }
}

function field(kind: FieldKind, value: unknown): unknown {
  switch (kind) {
    case 'text':
      return text(value, TEXT_LIMIT);
    case 'free':
      return text(value, FREE_TEXT_LIMIT);
    case 'int':
      return Number.isSafeInteger(value) ? value : undefined;
    case 'time': {
      if (typeof value !== 'string' && typeof value !== 'number') return undefined;
      const d = new Date(value);
      return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
    }
    case 'pr': {
      if (!value || typeof value !== 'object') return undefined;
      const pr = value as Record<string, unknown>;
      if (!Number.isSafeInteger(pr.number) || (pr.number as number) < 1) return undefined;
      const url = webUrl(pr.url);
      return url ? { number: pr.number, url } : { number: pr.number };
    }
  }
}

/**
 * `data` for one event type: only the type's allowlisted keys, each read from the raw event's
 * `data` object (or, failing that, its top level) and checked and cut by kind. Nothing else passes.
 */
export function buildData(type: EventType, raw: Record<string, unknown>): Record<string, unknown> {
  const nested = raw.data && typeof raw.data === 'object' && !Array.isArray(raw.data) ? (raw.data as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [key, kind] of Object.entries(CATALOGUE[type].data) as [string, FieldKind][]) {
    const value = field(kind, Object.hasOwn(nested, key) ? nested[key] : Object.hasOwn(raw, key) ? raw[key] : undefined);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

export interface EnvelopeInput {
  id: string;
  type: EventType;
  ts: Date | string;
  project: { id: string; repo: string } | null;
  /** The raw event's fields: `slot`, `issue` and `data` (or top-level keys) are read from it. */
  raw: Record<string, unknown>;
}

/** The envelope of one event, in the spec's field order. */
export function buildEnvelope(input: EnvelopeInput): Envelope {
  const slot = text(input.raw.slot, TEXT_LIMIT);
  const issue = input.raw.issue;
  return {
    id: input.id,
    type: input.type,
    ts: new Date(input.ts).toISOString(),
    project: input.project ? { id: input.project.id, repo: input.project.repo } : null,
    ...(slot !== undefined ? { slot } : {}),
    ...(Number.isSafeInteger(issue) && (issue as number) >= 1 ? { issue: issue as number } : {}),
    data: buildData(input.type, input.raw),
  };
}
