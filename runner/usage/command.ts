// `svc-runner usage daily|monthly|session [--json] [--since D] [--until D] [--tz ZONE] [--runtime R]`
// (docs/runner.md "Usage", docs/cost.md): tokens and cost from the local transcripts, no server needed,
// read with the same code as the ingest. Rows are per day (or month), runtime and model; sessions per
// runtime and session.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type mri from 'mri';
import { DEFAULT_PRICES } from '../../protocol/prices.ts';
import type { ModelPrice } from '../../protocol/prices.ts';
import { RUNTIMES } from '../../protocol/runtimes.ts';
import type { Runtime } from '../../protocol/usage.ts';
import { UsageError } from '../cli-options.ts';
import { configPath, stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';
import { usageDirs } from './dirs.ts';
import { requestCost, scanAll } from './scan.ts';
import type { ScannedRequest } from './scan.ts';
import { addCost, NO_FILE } from './groups.ts';
import type { Costs, GroupRow } from './groups.ts';

type Out = { write: (s: string) => unknown };

/** The usage index (scan-index.ts) in the runner's state directory. */
export const usageIndexPath = (env: Env) => join(stateDir(env), 'usage-index.json');

interface Tokens {
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
  costUSD: number | null;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const validDate = (s: string) => {
  const ms = DATE.test(s) ? Date.parse(`${s}T00:00:00Z`) : NaN;
  return Number.isFinite(ms) && new Date(ms).toISOString().startsWith(s);
};

function dateFlag(args: mri.Argv, name: string): string | undefined {
  const v = args[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !validDate(v)) throw new UsageError(`usage: --${name} must be a date YYYY-MM-DD`);
  return v;
}

const HOUR_MS = 3_600_000;

/**
 * A formatter giving YYYY-MM-DD in the zone. Formatting is slow next to reading a line, so the day is
 * kept per UTC hour when the hour's first and last millisecond fall on the same day there (then every
 * instant between does: leaving a day and coming back would take two clock changes within the hour);
 * otherwise (zones whose midnight falls inside a UTC hour, a change of clocks) each instant is formatted.
 * Without --tz the zone is the process's own (TZ), read through Date's local fields: the zone an
 * Intl.DateTimeFormat without timeZone uses, without building one (the first costs 15–25 ms, ICU's locale
 * data, on every `usage` run: docs/performance.md).
 */
export function dayIn(tz: string | undefined): (ms: number) => string {
  let format: (ms: number) => string;
  if (tz === undefined) {
    format = (ms) => {
      const d = new Date(ms);
      const m = d.getMonth() + 1, day = d.getDate();
      return `${d.getFullYear()}-${m < 10 ? '0' : ''}${m}-${day < 10 ? '0' : ''}${day}`;
    };
  } else {
    const f = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' });
    format = (ms) => {
      const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, x.value]));
      return `${p.year}-${p.month}-${p.day}`;
    };
  }
  const hours = new Map<number, string | null>();
  return (ms) => {
    const hour = Math.floor(ms / HOUR_MS);
    let day = hours.get(hour);
    if (day === undefined) {
      const first = format(hour * HOUR_MS);
      day = first === format(hour * HOUR_MS + HOUR_MS - 1) ? first : null;
      hours.set(hour, day);
    }
    return day ?? format(ms);
  };
}

function add(t: Tokens, r: { inputTokens: number; outputTokens: number; cacheWrite5mTokens: number; cacheWrite1hTokens: number; cacheReadTokens: number }, cost: number | null, priced: { unpriced: boolean }): void {
  t.inputTokens += r.inputTokens;
  t.outputTokens += r.outputTokens;
  t.cacheCreationTokens += r.cacheWrite5mTokens + r.cacheWrite1hTokens;
  t.cacheReadTokens += r.cacheReadTokens;
  if (cost === null) priced.unpriced = true;
  else t.costUSD = (t.costUSD ?? 0) + cost;
}

const zero = (): Tokens => ({ inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0, costUSD: 0 });

export async function usageCommand(args: mri.Argv, env: Env, out: Out, err: Out): Promise<number> {
  const report = String(args._[1]);
  if (!['daily', 'monthly', 'session'].includes(report)) throw new UsageError(`usage: the report is daily, monthly or session, not '${report}'`);
  if (args.json !== undefined && typeof args.json !== 'boolean') throw new UsageError('usage: --json takes no value');
  const since = dateFlag(args, 'since');
  const until = dateFlag(args, 'until');
  if (since && until && since > until) throw new UsageError('usage: --since is after --until');
  let tz: string | undefined;
  if (args.tz !== undefined) {
    if (typeof args.tz !== 'string' || args.tz === '') throw new UsageError('usage: --tz needs a time zone, e.g. UTC or Europe/Berlin');
    try {
      new Intl.DateTimeFormat('en-CA', { timeZone: args.tz });
    } catch {
      throw new UsageError(`usage: --tz '${args.tz}' is not a known time zone`);
    }
    tz = args.tz;
  }
  let runtimes = new Set<Runtime>(RUNTIMES);
  if (args.runtime !== undefined) {
    if (!RUNTIMES.includes(args.runtime)) throw new UsageError(`usage: --runtime is ${RUNTIMES.slice(0, -1).join(', ')} or ${RUNTIMES.at(-1)}`);
    runtimes = new Set([args.runtime as Runtime]);
  }
  // runner.json's profiles may name more transcript dirs; without the file there are none, and the config's
  // schemas (zod) are not even loaded: they were a third of `usage`'s start-up (docs/performance.md).
  const config = configPath(env);
  const profiles = existsSync(config) ? (await import('../config.ts')).loadConfig(config).config.profiles : [];
  const prices = DEFAULT_PRICES;
  const workerBytes = env.SVC_USAGE_WORKER_BYTES !== undefined && /^\d+$/.test(env.SVC_USAGE_WORKER_BYTES) ? Number(env.SVC_USAGE_WORKER_BYTES) : undefined; // tests and benchmarks
  if (args.rescan !== undefined && typeof args.rescan !== 'boolean') throw new UsageError('usage: --rescan takes no value');
  // The same report with the same arguments and no transcript changed is the same text (scan-index.ts).
  // Without --tz the days are the process's zone's: its name and offsets (January, July) are in the key.
  const localZone = tz === undefined ? `${String(new Date(0)).slice(25)} ${String(new Date(15_552_000_000)).slice(25)}` : null;
  const outputKey = JSON.stringify([report, args.json === true, since ?? null, until ?? null, tz ?? null, localZone, [...runtimes].sort()]);
  const index = { path: usageIndexPath(env), rescan: args.rescan === true, outputKey, groups: report !== 'session' };
  const scan = await scanAll(usageDirs(env, profiles), prices, runtimes, { rules: report === 'session' ? 'session' : 'daily', workerBytes, sessions: report === 'session', index });
  const day = dayIn(tz);
  const inRange = (d: string) => (!since || d >= since) && (!until || d <= until);
  const monthly = report === 'monthly';
  // After an append, the stored report's sums take the new requests (groups.ts).
  const sums = { day, inRange, monthly, prices };
  let rows = scan.partial ? addRequests(new Map(scan.partial.groups.rows.map((g) => [`${g[0]}\u0000${g[1]}\u0000${g[2]}`, fromGroup(g)])), scan.partial.added, sums, true) : null;
  if (env.SVC_USAGE_STATS === '1') err.write(`${JSON.stringify({ usageIndex: scan.index })}\n`); // tests and benchmarks
  if (scan.corrupt) err.write(`svc-runner: skipped ${scan.corrupt} corrupt transcript line(s)\n`);
  if (scan.output !== undefined) {
    out.write(scan.output);
    return 0;
  }
  const write = out.write.bind(out);
  let groups: GroupRow[] | undefined;
  out = { write: (text: string) => (scan.saveOutput?.(text, groups), write(text)) };

  if (report === 'session') {
    // ccusage's session report: Claude sessions are kept or dropped whole by the day of their last activity;
    // Codex requests are filtered by their own day (as in daily). A session without tokens is not listed.
    const rows = new Map<string, Tokens & { runtime: string; sessionId: string; project: string; firstAt: string; lastAt: string; lastMs: number; models: string[]; unpriced: boolean }>();
    const meta = new Map(scan.sessions.map((s) => [`${s.runtime}\u0000${s.sessionId}`, s]));
    for (const s of scan.requests) {
      if (s.request.runtime === 'codex' && !inRange(day(s.ms))) continue;
      const key = `${s.request.runtime}\u0000${s.session}`;
      let row = rows.get(key);
      const at = s.request.at;
      if (!row) {
        const m = meta.get(`${s.request.runtime}\u0000${s.request.sessionId}`);
        row = { runtime: s.request.runtime, sessionId: s.request.sessionId ?? s.session, project: m?.project ?? '', firstAt: at, lastAt: at, lastMs: s.ms, models: [], ...zero(), unpriced: false };
        rows.set(key, row);
      }
      if (at < row.firstAt) row.firstAt = at;
      if (at > row.lastAt) (row.lastAt = at), (row.lastMs = s.ms);
      if (!row.models.includes(s.reportModel)) row.models.push(s.reportModel);
      add(row, s.request, requestCost(s.request, prices), row);
    }
    for (const [key, r] of rows) {
      if ((r.runtime === 'claude' && !inRange(day(r.lastMs))) || r.inputTokens + r.outputTokens + r.cacheCreationTokens + r.cacheReadTokens === 0) rows.delete(key);
    }
    const sessions = [...rows.values()].sort((a, b) => (a.lastAt < b.lastAt ? -1 : a.lastAt > b.lastAt ? 1 : 0)).map((r) => ({
      sessionId: r.sessionId, runtime: r.runtime, project: r.project, firstAt: r.firstAt, lastAt: r.lastAt, models: r.models.sort(),
      inputTokens: r.inputTokens, outputTokens: r.outputTokens, cacheCreationTokens: r.cacheCreationTokens, cacheReadTokens: r.cacheReadTokens, costUSD: r.unpriced ? null : round(r.costUSD),
    }));
    if (args.json) out.write(JSON.stringify({ sessions }, null, 2) + '\n');
    else out.write(table(['Session', 'Runtime', 'Project', 'Last', 'Models'], sessions.map((s) => [s.sessionId, s.runtime, s.project, s.lastAt.slice(0, 16).replace('T', ' '), s.models.join(', ')]), sessions));
    return 0;
  }

  rows ??= addRequests(new Map(), scan.requests, sums, false);
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const sorted = [...rows.values()].sort((a, b) => cmp(a.period, b.period) || cmp(a.runtime, b.runtime) || cmp(a.model, b.model));
  groups = sorted.map((r) => [r.period, r.runtime, r.model, r.inputTokens, r.outputTokens, r.cacheCreationTokens, r.cacheReadTokens, r.costUSD ?? 0, r.unpriced ? 1 : 0, r.runs, r.costs]);
  const field = monthly ? 'month' : 'date';
  const items = sorted.map((r) => ({
    [field]: r.period, runtime: r.runtime, model: r.model,
    inputTokens: r.inputTokens, outputTokens: r.outputTokens, cacheCreationTokens: r.cacheCreationTokens, cacheReadTokens: r.cacheReadTokens, costUSD: r.unpriced ? null : round(r.costUSD),
  }));
  if (args.json) out.write(JSON.stringify(monthly ? { months: items } : { days: items }, null, 2) + '\n');
  else out.write(table([monthly ? 'Month' : 'Date', 'Runtime', 'Model'], sorted.map((r) => [r.period, r.runtime, r.model]), items as unknown as Tokens[]));
  return 0;
}

type Group = Tokens & { period: string; runtime: string; model: string; unpriced: boolean; runs: number[]; costs: Costs };

const fromGroup = ([period, runtime, model, inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, costUSD, unpriced, runs, costs]: GroupRow): Group =>
  ({ period, runtime, model, inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, costUSD, unpriced: unpriced === 1, runs, costs });

/**
 * Adds requests (in scan order) to the daily or monthly sums, keeping each priced one's cost with its
 * transcript's index. `stored`: the sums hold requests of any transcript already (after an append), so each
 * new cost is put in scan order among them and the touched groups' costs summed again in that order.
 */
function addRequests(
  rows: Map<string, Group>,
  requests: readonly ScannedRequest[],
  { day, inRange, monthly, prices }: { day: (ms: number) => string; inRange: (d: string) => boolean; monthly: boolean; prices: readonly ModelPrice[] },
  stored: boolean,
): Map<string, Group> {
  const touched = new Set<Group>();
  for (const s of requests) {
    const d = day(s.ms);
    if (!inRange(d)) continue;
    const period = monthly ? d.slice(0, 7) : d;
    const key = `${period}\u0000${s.request.runtime}\u0000${s.reportModel}`;
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { period, runtime: s.request.runtime, model: s.reportModel, ...zero(), unpriced: false, runs: [], costs: [] }));
    const cost = requestCost(s.request, prices);
    add(row, s.request, cost, row);
    if (cost === null) continue;
    addCost(row, s.file ?? NO_FILE, cost, stored);
    touched.add(row);
  }
  if (stored) {
    for (const row of touched) {
      let c = 0;
      for (let i = 0; i < row.costs.length; i++) c += row.costs[i]!;
      row.costUSD = c;
    }
  }
  return rows;
}

const round = (x: number | null) => (x === null ? null : Math.round(x * 1e9) / 1e9);
const n = (x: number) => x.toLocaleString('en-US');
const usd = (x: number | null) => (x === null ? 'no price' : `$${x.toFixed(x < 1 ? 4 : 2)}`);

/** A plain aligned table with the token and cost columns and a total line. */
function table(head: string[], lead: string[][], t: Tokens[]): string {
  const headers = [...head, 'Input', 'Output', 'Cache write', 'Cache read', 'Cost (USD)'];
  const body = lead.map((l, i) => [...l, n(t[i].inputTokens), n(t[i].outputTokens), n(t[i].cacheCreationTokens), n(t[i].cacheReadTokens), usd(t[i].costUSD)]);
  const sum = t.reduce((a, r) => ({ i: a.i + r.inputTokens, o: a.o + r.outputTokens, w: a.w + r.cacheCreationTokens, r: a.r + r.cacheReadTokens, c: a.c + (r.costUSD ?? 0), u: a.u || r.costUSD === null }), { i: 0, o: 0, w: 0, r: 0, c: 0, u: false });
  const total = ['Total', ...head.slice(1).map(() => ''), n(sum.i), n(sum.o), n(sum.w), n(sum.r), `$${sum.c.toFixed(2)}${sum.u ? ' + unpriced' : ''}`];
  const all = [headers, ...body, total];
  const widths = headers.map((_, c) => Math.max(...all.map((r) => r[c].length)));
  const fmt = (r: string[]) => r.map((cell, c) => (c < head.length ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ').trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  if (!body.length) return 'No usage found.\n';
  return [fmt(headers), rule, ...body.map(fmt), rule, fmt(total)].join('\n') + '\n';
}
