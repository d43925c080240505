// The project's `events.jsonl` (docs/orchestrator.md): one JSON object per line, appended by agents
// through `svc-runner emit` and tailed by the daemon into the spool.
//   {"v":1,"time":"2026-11-23T10:00:00.000Z","type":"slot.checkpoint","slot":"a","issue":12,"data":{…}}
// `type` is a name of the spec's outbound event catalogue or an internal dotted name; a few catalogue
// names are the runner's own (it observes them itself) and agents may not write them.
import { closeSync, fsyncSync, mkdirSync, openSync, writeSync, constants } from 'node:fs';
import { dirname } from 'node:path';
import * as z from 'zod';
import { eventsPath } from './fleet-paths.ts';

/** The catalogue names an agent writes (spec: Outbound webhook events). */
export const AGENT_TYPES = [
  'slot.dispatched',
  'slot.checkpoint',
  'slot.stopped',
  'pr.opened',
  'pr.checks_changed',
  'pr.merged',
  'pr.closed',
  'issue.blocked',
  'person.needed',
] as const;
/** Catalogue names only the runner (or the server) produces: refused in the file. */
export const RESERVED_TYPES = new Set(['orchestrator.started', 'orchestrator.stopped', 'pane.prompt', 'pane.quota_hit', 'schedule.failed', 'schedule.disabled', 'webhook.test']);
/** Catalogue names that go to the spool with the type as the event kind; other types become `fleet.<type>`. */
export const CATALOGUE_TYPES = new Set<string>([...AGENT_TYPES, ...RESERVED_TYPES]);
/** Internal types: lower-case dotted names, e.g. `round.started`, `round.finished`, `slot.progress`. */
export const TYPE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){1,3}$/;
export const SLOT = /^[A-Za-z0-9_-]{1,32}$/;
export const MAX_LINE_BYTES = 16 * 1024;

export const eventLine = z.strictObject({
  v: z.literal(1).optional(),
  time: z.iso.datetime({ offset: true }),
  type: z
    .string()
    .max(56)
    .regex(TYPE, { message: 'must be a lower-case dotted name like slot.checkpoint' })
    .refine((t) => !RESERVED_TYPES.has(t), { message: 'is reported by the runner itself' }),
  slot: z.string().regex(SLOT, { message: 'must be 1-32 letters, digits, _ or -' }).optional(),
  issue: z.number().int().min(1).max(2 ** 31 - 1).optional(),
  data: z.record(z.string(), z.unknown()).default({}),
});
export type EventLine = z.output<typeof eventLine>;

/** The spool event kind of a line's type. */
export const spoolKind = (type: string): string => (CATALOGUE_TYPES.has(type) ? type : `fleet.${type}`);

const CHECKPOINT = /^[a-z][a-z0-9_]{0,31}$/;
const isPr = (v: unknown) => typeof v === 'object' && v !== null && Number.isInteger((v as { number?: unknown }).number) && (v as { number: number }).number > 0;

/** What `emit` checks beyond the line shape, per catalogue type: the fields a receiver needs. */
export function typeProblems(e: EventLine): string[] {
  const p: string[] = [];
  const need = (ok: boolean, what: string) => ok || p.push(what);
  const str = (k: string) => typeof e.data[k] === 'string' && (e.data[k] as string).length > 0;
  if (e.type.startsWith('slot.')) need(e.slot !== undefined, `${e.type} needs --slot (or run it inside the slot's worktree)`);
  switch (e.type) {
    case 'slot.dispatched':
      need(e.issue !== undefined, 'slot.dispatched needs --issue');
      break;
    case 'slot.checkpoint':
      need(typeof e.data.checkpoint === 'string' && CHECKPOINT.test(e.data.checkpoint), 'slot.checkpoint needs --checkpoint (plan_ready, pr_open, done, blocked, …)');
      if (e.data.checkpoint === 'pr_open') need(isPr(e.data.pr), 'checkpoint pr_open needs --pr <number>');
      break;
    case 'pr.opened':
    case 'pr.merged':
    case 'pr.closed':
      need(isPr(e.data.pr), `${e.type} needs --pr <number>`);
      break;
    case 'pr.checks_changed':
      need(isPr(e.data.pr), 'pr.checks_changed needs --pr <number>');
      need(['passed', 'failed', 'restarted', 'pending'].includes(String(e.data.state)), 'pr.checks_changed needs --state passed|failed|restarted|pending');
      break;
    case 'issue.blocked':
      need(e.issue !== undefined, 'issue.blocked needs --issue');
      need(str('reason') || str('summary'), 'issue.blocked needs --reason or --summary');
      break;
    case 'person.needed':
      need(str('question') || str('summary'), 'person.needed needs --question or --summary');
      break;
  }
  return p;
}

/** Append one line with a single write on an O_APPEND descriptor (whole lines never interleave). */
export function appendEventLine(root: string, line: EventLine): string {
  const text = JSON.stringify({ v: 1, ...line }) + '\n';
  if (Buffer.byteLength(text) > MAX_LINE_BYTES) throw new Error(`the event line is larger than ${MAX_LINE_BYTES} bytes`);
  const path = eventsPath(root);
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o644);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return text;
}
