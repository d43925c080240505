#!/usr/bin/env node
// GET /metrics (issue #39 part 3; docs/operations.md, Metrics): how long one scrape takes on an instance
// with --runners runners (all connected, so the runners gauges and the hub are as in production) and
// --projects projects with --requests LLM requests spread over them and their models (the token and cost
// counters are sums over llm_requests, read at every scrape). Goal: < 50 ms.
// Baseline, same run: GET /health (no database) on the same server, scraped in turns with /metrics;
// the ratio is median /metrics ÷ median /health.
//
//   npm run bench:metrics
//   node --import tsx bench/metrics.mjs [--runners 100] [--projects 50] [--requests 20000] [--scrapes 200]
//   SVC_TEST_DB=postgres … on PostgreSQL (a fresh database at TEST_DATABASE_URL), else PGlite.
// Loopback only; every process and database it makes is removed at the end.
// Output: progress on stderr, a table on stdout, then one JSON line with all figures.
import { parseArgs } from 'node:util';
import { send, tok, transcriptReq, uid } from '../test/helpers/usage-events.ts';
import { connect, pairRunner } from '../test/helpers/wsclient.ts';
import { installGuards, machine, median, percentile, round, startSvc, table, wholeOption } from './lib.mjs';

const { values: opt } = parseArgs({
  options: {
    runners: { type: 'string', default: '100' },
    projects: { type: 'string', default: '50' },
    requests: { type: 'string', default: '20000' },
    scrapes: { type: 'string', default: '200' },
  },
  strict: true,
});
const N = {
  runners: wholeOption('runners', opt.runners, 1, 1000),
  projects: wholeOption('projects', opt.projects, 1, 1000),
  requests: wholeOption('requests', opt.requests, 0, 1_000_000),
  scrapes: wholeOption('scrapes', opt.scrapes, 10, 100_000),
};
const TOKEN = 'bench-metrics-token-0123456789';
const MODELS = ['claude-sonnet-4-5', 'claude-haiku-4-5', 'gpt-5', 'some-unpriced-model'];
const log = (m) => process.stderr.write(`[bench:metrics] ${m}\n`);

installGuards(1800);
const server = await startSvc({ admin: true, env: { METRICS_TOKEN: TOKEN } });
try {
  log(`pairing and connecting ${N.runners} runners`);
  const runners = [];
  for (let i = 0; i < N.runners; i++) runners.push(await pairRunner(server.api, server.url, `bench-${i}`));
  const sockets = runners.map((r) => connect(server.url, r.token));
  await Promise.all(sockets.map((s) => s.next('welcome', 60_000)));
  log(`making ${N.projects} projects`);
  const projects = [];
  for (let i = 0; i < N.projects; i++) {
    const name = `bench-${i}-${uid()}`;
    const res = await server.api('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: runners[i % runners.length].runnerId, rootPath: `/srv/${name}` } });
    if (res.status !== 201) throw new Error(`project: ${res.status} ${await res.text()}`);
    projects.push((await res.json()).id);
  }
  log(`storing ${N.requests} LLM requests through the hub`);
  for (let done = 0; done < N.requests; ) {
    const n = Math.min(100, N.requests - done);
    const batch = Array.from({ length: n }, (_, k) => {
      const i = done + k;
      return transcriptReq('claude', `s-${i % 500}`, MODELS[i % MODELS.length], `req_${uid()}`, tok(1000 + i, 200), { project: projects[i % projects.length] });
    });
    await send(sockets[(done / 100) % sockets.length | 0], batch);
    done += n;
  }

  const timed = async (path, headers) => {
    const t0 = performance.now();
    const res = await fetch(`${server.url}${path}`, { headers });
    const body = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
    return { ms, bytes: body.length, body };
  };
  const auth = { authorization: `Bearer ${TOKEN}` };
  const first = await timed('/metrics', auth);
  if (!first.body.includes(`svc_runners_connected ${N.runners}`)) throw new Error('the scrape does not show every runner connected');
  for (let i = 0; i < 10; i++) await Promise.all([timed('/metrics', auth), timed('/health')]); // warm-up
  log(`${N.scrapes} scrapes of /metrics and /health, in turns`);
  const m = [];
  const h = [];
  for (let i = 0; i < N.scrapes; i++) {
    m.push((await timed('/metrics', auth)).ms);
    h.push((await timed('/health')).ms);
  }
  m.sort((a, b) => a - b);
  h.sort((a, b) => a - b);
  const fig = (xs) => ({ p50Ms: round(median(xs), 2), p95Ms: round(percentile(xs, 95), 2), maxMs: round(xs[xs.length - 1], 2) });
  const result = {
    machine: machine(),
    database: process.env.SVC_TEST_DB === 'postgres' ? 'postgres' : 'pglite',
    setup: { ...N, exposition: { bytes: first.bytes, lines: first.body.split('\n').length } },
    metrics: fig(m),
    health: fig(h),
    ratios: { metricsOverHealthP50: round(median(m) / median(h), 2), metricsOverHealthP95: round(percentile(m, 95) / percentile(h, 95), 2) },
    goal: { p50UnderMs: 50, met: median(m) < 50 },
  };
  console.log(
    table([
      ['', 'p50 ms', 'p95 ms', 'max ms'],
      ['GET /metrics', result.metrics.p50Ms, result.metrics.p95Ms, result.metrics.maxMs],
      ['GET /health (baseline)', result.health.p50Ms, result.health.p95Ms, result.health.maxMs],
      ['ratio', result.ratios.metricsOverHealthP50, result.ratios.metricsOverHealthP95, ''],
    ]),
  );
  console.log(JSON.stringify(result));
  for (const s of sockets) s.ws.close();
} finally {
  await server.cleanup();
}
