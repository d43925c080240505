// The outbound event catalogue (spec: Events → Outbound webhook events). It is closed: a type not
// listed here never reaches a receiver. Each type's `data` is built from its allowlist of keys only
// (spec: Envelope), never copied from the raw event.

/** How a `data` value is read from the raw event and cut (spec: Limits, Event `data` strings). */
export type FieldKind =
  | 'text' //   a string, cut to 500 characters, file system paths removed
  | 'free' //   a summary or free text, cut to 1000 characters, file system paths removed
  | 'int' //    a safe integer
  | 'time' //   a timestamp, sent as ISO 8601 UTC with milliseconds
  | 'pr'; //    a pull request: {number: integer, url: http(s) URL}

interface EventSpec {
  description: string;
  /** Who may emit it: a runner (through the hub's ingest), the server itself (pr.*: the PR state, codehost/pulls.ts, from the runner's poll and App deliveries alike), or Send test only. */
  from: 'runner' | 'server' | 'test';
  data: Record<string, FieldKind>;
}

export const CATALOGUE = {
  'orchestrator.started': { description: "A project's orchestrator started", from: 'runner', data: { profile: 'text', model: 'text', round: 'int' } },
  'orchestrator.stopped': { description: "A project's orchestrator stopped", from: 'runner', data: { reason: 'free', exitCode: 'int' } },
  'slot.dispatched': { description: 'The orchestrator handed an issue to a worker session', from: 'runner', data: { title: 'text', profile: 'text', branch: 'text' } },
  'slot.checkpoint': {
    description: 'A worker reported progress: plan ready, done, pull request open, blocked',
    from: 'runner',
    data: { checkpoint: 'text', summary: 'free', pr: 'pr' },
  },
  'slot.stopped': { description: 'A worker session ended', from: 'runner', data: { reason: 'free', exitCode: 'int', summary: 'free' } },
  'pr.opened': { description: 'A worker opened a pull request', from: 'server', data: { pr: 'pr', title: 'text', branch: 'text' } },
  'pr.checks_changed': { description: "A pull request's checks passed, failed or restarted", from: 'server', data: { pr: 'pr', state: 'text', summary: 'free' } },
  'pr.merged': { description: 'A pull request was merged', from: 'server', data: { pr: 'pr', title: 'text' } },
  'pr.closed': { description: 'A pull request was closed without merging', from: 'server', data: { pr: 'pr', title: 'text' } },
  'issue.blocked': { description: 'A worker stopped on an issue it cannot finish alone', from: 'runner', data: { reason: 'free', summary: 'free' } },
  'person.needed': { description: 'An agent waits for a person to answer', from: 'runner', data: { question: 'free', summary: 'free' } },
  // Never the pane's text (spec): only what kind of prompt it is and which session shows it.
  'pane.prompt': { description: 'A session shows a prompt only a person can answer', from: 'runner', data: { session: 'text', promptKind: 'text' } },
  'pane.quota_hit': { description: "A session hit its model provider's usage limit", from: 'runner', data: { session: 'text', provider: 'text', resetsAt: 'time' } },
  'schedule.failed': { description: 'A scheduled run failed', from: 'server', data: { schedule: 'text', error: 'free', scheduledFor: 'time' } },
  'schedule.disabled': { description: 'A schedule turned itself off, for example after repeated failures', from: 'server', data: { schedule: 'text', reason: 'free' } },
  'webhook.test': { description: 'Sent only by Send test', from: 'test', data: { message: 'text' } },
} as const satisfies Record<string, EventSpec>;

export type EventType = keyof typeof CATALOGUE;
export const EVENT_TYPES = Object.keys(CATALOGUE) as EventType[];
/** What a webhook may subscribe to: everything but `webhook.test`, which only Send test sends. */
export const SUBSCRIBABLE_TYPES = EVENT_TYPES.filter((t) => CATALOGUE[t].from !== 'test') as Exclude<EventType, 'webhook.test'>[];
/** Runner event kinds that become catalogue events: exactly the catalogue names a runner may emit. */
export const RUNNER_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES.filter((t) => CATALOGUE[t].from === 'runner'));

export const isEventType = (s: string): s is EventType => Object.hasOwn(CATALOGUE, s);

/** Characters kept of a `data` string (spec: Limits). */
export const TEXT_LIMIT = 500;
export const FREE_TEXT_LIMIT = 1000;
