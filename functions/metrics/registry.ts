// The Prometheus metrics of this process (issue #39 part 3; docs/operations.md, "Metrics"): one
// prom-client registry with the instruments the areas feed as things happen (HTTP answers, trigger calls,
// webhook attempts, runner events, job runs) and Node's default metrics. What is read from the database
// at scrape time (tokens, cost, circuits, queued runs, audit state) is in collectors.ts; GET /metrics in
// routes.ts. This module imports nothing of the server, so every area may import it.
// Label values are bounded: route templates (never raw paths), status classes, and closed sets of
// outcomes and reasons; anything else is folded into `other`.
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });
// Gauges prom-client names `_total`, which `promtool check metrics` refuses (only counters end so): the
// sums of their by-type twins (nodejs_active_handles{type}, …), which stay.
for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `2xx`…`5xx`: the status class, the only form a status takes as a label. */
export const statusClass = (status: number): string => (status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other');

const httpRequests = new Counter({
  name: 'svc_http_requests_total',
  help: 'HTTP requests answered, by method, route template (route="none": no route) and status class',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});
const httpDuration = new Histogram({
  name: 'svc_http_request_duration_seconds',
  help: 'Time from routing a request to its answer, by method and route template',
  labelNames: ['method', 'route'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** One answered request: `route` is the route's template (`/api/projects/:projectId`), or `none`. */
export function observeRequest(method: string, route: string, status: number, seconds: number): void {
  const m = METHODS.has(method) ? method : 'other';
  httpRequests.inc({ method: m, route, status: statusClass(status) });
  httpDuration.observe({ method: m, route }, seconds);
}

/** Why an inbound trigger call was not accepted, by its answer's status (docs/triggers.md). */
const TRIGGER_REASONS: Record<number, string> = {
  202: 'accepted',
  401: 'signature',
  404: 'unknown_trigger',
  408: 'body_timeout',
  409: 'replayed',
  413: 'body_too_large',
  415: 'media_type',
  422: 'invalid_payload',
  429: 'rate_limited',
  503: 'database_unavailable',
};
const triggerCalls = new Counter({
  name: 'svc_trigger_calls_total',
  help: 'Inbound trigger calls (POST /hooks/…) by outcome (accepted, refused, error) and reason',
  labelNames: ['outcome', 'reason'] as const,
  registers: [registry],
});

/** One answered trigger call, by the status it was answered with. */
export function countTriggerCall(status: number): void {
  const outcome = status === 202 ? 'accepted' : status >= 500 ? 'error' : 'refused';
  triggerCalls.inc({ outcome, reason: TRIGGER_REASONS[status] ?? (status >= 500 ? 'internal_error' : 'other') });
}

/** The recorded errors of an attempt (webhooks/send.ts SendError and the worker's own); others → other. */
const ATTEMPT_ERRORS = new Set([
  'timeout', 'connection_refused', 'connection_reset', 'connection_error', 'tls_error', 'aborted', 'secret_unavailable', 'invalid_url',
  'blocked_address', 'dns_error', 'redirect', 'http_status',
]);
const webhookAttempts = new Counter({
  name: 'svc_webhook_attempts_total',
  help: 'Outbound delivery attempts (webhooks and chat channels) by outcome (success, failure) and error (none, http_status, timeout, …)',
  labelNames: ['outcome', 'error'] as const,
  registers: [registry],
});
const webhookLatency = new Histogram({
  name: 'svc_webhook_attempt_duration_seconds',
  help: 'Time of an outbound attempt from the address check to the receiver\'s answer (or the failure), by outcome',
  labelNames: ['outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** One finished outbound attempt: `error` is null on success, the receiver's failure is `http_status`. */
export function countWebhookAttempt(ok: boolean, error: string | null, status: number | null, seconds: number): void {
  const outcome = ok ? 'success' : 'failure';
  const why = ok ? 'none' : error === null ? (status !== null ? 'http_status' : 'other') : ATTEMPT_ERRORS.has(error) ? error : 'other';
  webhookAttempts.inc({ outcome, error: why });
  webhookLatency.observe({ outcome }, seconds);
}

const spoolAcks = new Counter({
  name: 'svc_runner_events_acked_total',
  help: 'Runner events acknowledged to runners (stored and fed to the sinks; the runner then drops them from its spool)',
  registers: [registry],
});
const ackFrames = new Counter({
  name: 'svc_runner_event_batches_acked_total',
  help: 'Runner `events` frames acknowledged (spool acks)',
  registers: [registry],
});
const ingestLag = new Histogram({
  name: 'svc_runner_event_ingest_lag_seconds',
  help: 'Ingest lag of runner events: the time they were stored here minus the time the runner made them',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 3600],
  registers: [registry],
});

/** A batch of runner events stored and acked: counts the ack and each event's lag (`ts` = made at). */
export function countEventsAcked(events: readonly { ts: string }[], storedAtMs: number): void {
  ackFrames.inc();
  spoolAcks.inc(events.length);
  for (const e of events) {
    const made = Date.parse(e.ts);
    if (Number.isFinite(made)) ingestLag.observe(Math.max(0, (storedAtMs - made) / 1000));
  }
}

const jobRuns = new Counter({
  name: 'svc_job_runs_total',
  help: 'System job runs finished on this replica, by job name and outcome (ok, failed)',
  labelNames: ['job', 'outcome'] as const,
  registers: [registry],
});
const jobDuration = new Histogram({
  name: 'svc_job_run_duration_seconds',
  help: 'Duration of system job runs on this replica, by job name',
  labelNames: ['job'] as const,
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
  registers: [registry],
});

/** One job run ended (job names are the registered jobs': a closed set). */
export function countJobRun(job: string, outcome: 'ok' | 'failed', seconds: number): void {
  jobRuns.inc({ job, outcome });
  jobDuration.observe({ job }, seconds);
}
