// The metrics read at scrape time (docs/operations.md, "Metrics"): prom-client collect() callbacks that
// query the database, so what they show is the instance's state, the same on every replica, and the
// token and cost counters (sums over the stored LLM requests) survive restarts instead of starting at 0.
// The callbacks of one scrape share one snapshot (two statements; the token and cost sums come from the
// running totals in llm_usage_totals, sql/0034); only "runners connected" is this
// replica's own (the sockets it holds), so Prometheus scrapes every replica (each its own target).
// Labels stay bounded: projects (a set admins make), and models with a price row (cost/prices.ts);
// requests of other models are counted under model="other", and of deleted projects under project="none".
import { Counter, Gauge } from 'prom-client';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { onlineSql } from '../runners/presence.ts';
import { registry } from './registry.ts';

export interface MetricsSources {
  db: Db;
  /** Runners whose socket this replica holds. */
  connectedRunners(): number;
}

let sources: MetricsSources | null = null;
/** Called once the serving process has its database and hub (serving.ts); until then these read nothing. */
export function useMetricsSources(s: MetricsSources | null): void {
  sources = s;
  snapshot = null;
}

interface UsageRow {
  project: string;
  model: string;
  input: string;
  output: string;
  cache_read: string;
  cache_write: string;
  cost: string | null;
}
interface StateRow {
  circuits_open: number;
  circuits_half_open: number;
  circuit_open_longest: number | null;
  runners_registered: number;
  runners_offline: number;
  runner_offline_longest: number | null;
  runs_queued: number;
  run_queued_longest: number | null;
  audit_ok: boolean | null;
  audit_verified_at: number | null;
  audit_checkpoint_at: number | null;
}
interface Snapshot {
  usage: UsageRow[];
  state: StateRow;
}

// The running totals of llm_requests (sql/0034_llm_usage_totals.sql, kept by triggers): a few rows per
// project, model and runner, however many requests are stored.
const usageQuery = sql`
  select coalesce(nullif(project_id, ''), 'none') as project,
         case when model in (select model from model_prices) then model else 'other' end as model,
         sum(input_tokens)::text as input, sum(output_tokens)::text as output, sum(cache_read_tokens)::text as cache_read,
         sum(cache_write_tokens)::text as cache_write, sum(cost_usd)::text as cost
    from llm_usage_totals
   group by 1, 2`;

// A paired, unrevoked runner is offline when no replica holds its socket or it was not heard from within
// 60 s (runners/presence.ts onlineSql); "longest" counts from its last word.
const stateQuery = sql`
  select
    (select count(*)::int from webhooks where circuit_state = 'open') as circuits_open,
    (select count(*)::int from webhooks where circuit_state = 'half-open') as circuits_half_open,
    (select extract(epoch from now() - min(circuit_opened_at))::float8 from webhooks where circuit_state = 'open') as circuit_open_longest,
    (select count(*)::int from runners where revoked_at is null and paired_at is not null) as runners_registered,
    (select count(*)::int from runners r where revoked_at is null and paired_at is not null and not ${onlineSql}) as runners_offline,
    (select extract(epoch from now() - min(coalesce(last_seen_at, paired_at)))::float8 from runners r
      where revoked_at is null and paired_at is not null and not ${onlineSql}) as runner_offline_longest,
    (select count(*)::int from pool_runs where status = 'queued') as runs_queued,
    (select extract(epoch from now() - min(created_at))::float8 from pool_runs where status = 'queued') as run_queued_longest,
    (select ok from audit_verifications order by id desc limit 1) as audit_ok,
    (select extract(epoch from started_at)::float8 from audit_verifications order by id desc limit 1) as audit_verified_at,
    (select extract(epoch from max(at))::float8 from audit_checkpoints) as audit_checkpoint_at`;

let snapshot: Promise<Snapshot | null> | null = null;
/**
 * The database state for this scrape. prom-client calls every metric's collect() at once for a scrape,
 * so they share the statements in flight; the next scrape reads again.
 */
function current(): Promise<Snapshot | null> {
  if (snapshot) return snapshot;
  const s = sources;
  const value = s
    ? Promise.all([s.db.query<UsageRow>(usageQuery), s.db.query<StateRow>(stateQuery)]).then(([usage, [state]]) => ({ usage, state }))
    : Promise.resolve(null);
  snapshot = value;
  const done = () => {
    if (snapshot === value) snapshot = null;
  };
  value.then(done, done);
  return value;
}

/** A counter whose value is a sum stored in the database: set (not added) at each scrape. */
function storedCounter(name: string, help: string, pick: (r: UsageRow) => string | null) {
  return new Counter({
    name,
    help,
    labelNames: ['project', 'model'] as const,
    registers: [registry],
    async collect() {
      const s = await current();
      this.reset();
      for (const row of s?.usage ?? []) {
        const value = Number(pick(row) ?? 0);
        if (value > 0) this.inc({ project: row.project, model: row.model }, value);
      }
    },
  });
}

storedCounter('svc_llm_input_tokens_total', 'Input tokens of the stored LLM requests, by project id and model (from the database)', (r) => r.input);
storedCounter('svc_llm_output_tokens_total', 'Output tokens of the stored LLM requests, by project id and model (from the database)', (r) => r.output);
storedCounter('svc_llm_cache_read_tokens_total', 'Cache-read tokens of the stored LLM requests, by project id and model', (r) => r.cache_read);
storedCounter('svc_llm_cache_write_tokens_total', 'Cache-write tokens (5 min and 1 h) of the stored LLM requests, by project id and model', (r) => r.cache_write);
storedCounter('svc_llm_cost_usd_total', 'Cost in USD of the stored LLM requests with a price, by project id and model', (r) => r.cost);

/** A gauge read from the state snapshot; no sample while there is none (the value is null or not read yet). */
function stateGauge(name: string, help: string, pick: (s: StateRow) => number | boolean | null) {
  return new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      const s = await current();
      this.reset();
      const v = s ? pick(s.state) : null;
      if (v !== null && v !== undefined) this.set(Number(v));
    },
  });
}

stateGauge('svc_webhook_circuits_open', 'Outbound webhooks whose circuit is open (deliveries paused)', (s) => s.circuits_open);
stateGauge('svc_webhook_circuits_half_open', 'Outbound webhooks whose circuit is half-open (one trial delivery)', (s) => s.circuits_half_open);
stateGauge('svc_webhook_circuit_open_longest_seconds', 'How long the longest-open circuit has been open (0 when none is)', (s) => s.circuit_open_longest ?? 0);
stateGauge('svc_runners_registered', 'Paired runners that are not revoked', (s) => s.runners_registered);
stateGauge('svc_runners_offline', 'Paired runners that are offline (no socket, or silent for more than 60 s)', (s) => s.runners_offline);
stateGauge('svc_runner_offline_longest_seconds', 'How long the runner offline the longest has been silent (0 when none is offline)', (s) => s.runner_offline_longest ?? 0);
stateGauge('svc_runs_queued', 'Pool runs queued for a runner', (s) => s.runs_queued);
stateGauge('svc_run_queued_longest_seconds', 'How long the oldest queued pool run has waited (0 when none waits)', (s) => s.run_queued_longest ?? 0);
stateGauge('svc_audit_chain_ok', 'Result of the latest audit verification: 1 the chain verified, 0 it is broken (no sample before the first)', (s) => s.audit_ok);
stateGauge('svc_audit_last_verification_timestamp_seconds', 'When the latest audit verification started (Unix time)', (s) => s.audit_verified_at);
stateGauge('svc_audit_last_checkpoint_timestamp_seconds', 'When the latest audit checkpoint was made (Unix time)', (s) => s.audit_checkpoint_at);

new Gauge({
  name: 'svc_runners_connected',
  help: 'Runners whose WebSocket this replica holds (per replica: sum over the replicas for the instance)',
  registers: [registry],
  collect() {
    this.set(sources?.connectedRunners() ?? 0);
  },
});
