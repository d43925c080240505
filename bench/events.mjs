#!/usr/bin/env node
// The event list on PostgreSQL (issue #39: "GET /api/events pages/s reading 100,000 events beside a bare
// SELECT … WHERE seq > $1 LIMIT 100 loop on the same table"), as ratios against the bare loop measured in
// the same run:
//   bare    one postgres.js connection in this process: select seq, body from catalogue_events
//           where seq > $1 order by seq limit 100, following the last seq until a page is empty
//   admin   GET /api/events?limit=100&after=<next> on the real dist/server.mjs with an instance admin's
//           personal API token, one keep-alive connection, each answer parsed for `next`, until next is null
//   viewer  the same as a project viewer (the rights condition: the projects it is a member of)
//   floor   the least an HTTP server can do for a page (bench/events-floor.mjs, a child process): node:http
//           and one postgres.js connection running the bare statement, no authentication or routing —
//           what an HTTP hop per page allows on this machine, beside the goal (admin ÷ bare ≥ 0.5)
// --events events (one project, envelopes of ~300 bytes like slot.checkpoint's) are loaded straight into
// catalogue_events of a fresh database, then VACUUM ANALYZE. Each pass reads them all once; per round the
// order of the three turns; medians of the rounds.
//
//   npm run bench:events -- [options]   (builds, then runs:)
//   node --import tsx bench/events.mjs [--events 100000] [--rounds 3] [--limit 100] [--database-url …]
//                                      [--profile-dir DIR: the server under node --cpu-prof; its top self-time functions are printed]
// Every process and database it makes is removed at the end, also on error or Ctrl-C.
// Output: progress on stderr, a table on stdout, then one JSON line.
import { mkdirSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { cpuProfileTop, createDatabase, DEFAULT_DATABASE_URL, spawnTracked, fmt, installGuards, machine, median, postgresVersion, redactUrl, requireBuild, round, startSvc, table, wholeOption } from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
    limit: { type: 'string', default: '100' },
    'database-url': { type: 'string', default: DEFAULT_DATABASE_URL },
    'profile-dir': { type: 'string' },
  },
  strict: true,
});
const EVENTS = wholeOption('events', opts.events, 100, 10_000_000);
const ROUNDS = wholeOption('rounds', opts.rounds, 1, 20);
const LIMIT = wholeOption('limit', opts.limit, 1, 500);
installGuards(1800);
requireBuild();
const log = (m) => process.stderr.write(`${m}\n`);

const dbInfo = await createDatabase(opts['database-url']);
// As in production: answers are not checked against their schemas (the test harness turns that on).
const PROFILE_DIR = opts['profile-dir'];
if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
const wrap = PROFILE_DIR ? ['/bin/sh', '-c', `exec "$0" --cpu-prof --cpu-prof-dir='${PROFILE_DIR}' "$@"`] : undefined;
const server = await startSvc({ admin: true, wrap, dbEnv: { DATABASE_URL: dbInfo.url }, env: { CHECK_ANSWERS: 'false' } });
const sql = postgres(dbInfo.url, { max: 1, onnotice: () => {} });
const floor = spawnTracked(process.execPath, [new URL('./events-floor.mjs', import.meta.url).pathname], { env: { ...process.env, DATABASE_URL: dbInfo.url } });
const floorPort = await new Promise((ok, fail) => {
  let out = '';
  floor.stdout.on('data', (c) => {
    out += c;
    const m = /listening (\d+)/.exec(out);
    if (m) ok(Number(m[1]));
  });
  floor.once('exit', (code) => fail(new Error(`the floor server exited (${code})`)));
});
try {
  const { makeUser, callAs } = await import('../test/helpers/users.ts');
  const runner = (await callAs(server, '/api/runners', { method: 'POST', json: { name: 'bench' } })).body.runner.id;
  const project = (await callAs(server, '/api/projects', { method: 'POST', json: { name: 'bench', repo: 'acme/bench', runnerId: runner, rootPath: '/srv/bench' } })).body.id;
  const viewer = await makeUser(server, 'viewer');
  if ((await callAs(server, `/api/projects/${project}/members/${viewer.id}`, { method: 'PUT', json: { role: 'viewer' } })).status !== 200) throw new Error('membership');

  log(`loading ${EVENTS} events…`);
  await sql`
    insert into catalogue_events (id, type, project_id, body)
    select 'evt_' || md5(n::text), 'slot.checkpoint', ${project},
           json_build_object('id', 'evt_' || md5(n::text), 'type', 'slot.checkpoint', 'ts', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                             'project', json_build_object('id', ${project}::text, 'repo', 'acme/bench'), 'slot', 'w1', 'issue', n,
                             'data', json_build_object('checkpoint', 'pr_open', 'summary', 'Opened the pull request for the login fix, checks running', 'pr', json_build_object('number', n, 'url', 'https://github.com/acme/bench/pull/' || n)))::text
      from generate_series(1, ${EVENTS}) n`;
  await sql`vacuum analyze catalogue_events`;

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const floorAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const getJson = (path, token, port = server.port) =>
    new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path, agent: port === server.port ? agent : floorAgent, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString())) : reject(new Error(`${path}: ${res.statusCode} ${Buffer.concat(chunks)}`))));
      });
      req.on('error', reject);
    });

  /** One pass over every event: { pages, seconds, events }. */
  const passes = {
    async bare() {
      let after = '0';
      let pages = 0;
      let events = 0;
      const t0 = process.hrtime.bigint();
      for (;;) {
        const rows = await sql`select seq, body from catalogue_events where seq > ${after}::bigint order by seq limit ${LIMIT}`;
        pages++;
        if (!rows.length) break;
        events += rows.length;
        after = String(rows[rows.length - 1].seq); // int8 arrives as text
      }
      return { pages, events, seconds: Number(process.hrtime.bigint() - t0) / 1e9 };
    },
    admin: () => api(server.admin.token),
    viewer: () => api(viewer.token),
    floor: () => api(null, floorPort),
  };
  async function api(token, port = server.port) {
    let after = null;
    let pages = 0;
    let events = 0;
    const t0 = process.hrtime.bigint();
    for (;;) {
      const path = port === server.port ? `/api/events?limit=${LIMIT}${after ? `&after=${after}` : ''}` : `/?limit=${LIMIT}${after ? `&after=${after}` : ''}`;
      const page = await getJson(path, token, port);
      pages++;
      events += page.events.length;
      if (page.next === null) break;
      after = page.next;
    }
    return { pages, events, seconds: Number(process.hrtime.bigint() - t0) / 1e9 };
  }

  await passes.bare(); // warm-up: the table in the buffer cache, the server's connections made
  await passes.admin();
  await passes.floor();
  const names = ['bare', 'admin', 'viewer', 'floor'];
  const perSecond = { bare: [], admin: [], viewer: [], floor: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    for (const name of order) {
      const p = await passes[name]();
      if (p.events !== EVENTS) throw new Error(`${name} read ${p.events} of ${EVENTS} events`);
      perSecond[name].push(p.pages / p.seconds);
      log(`round ${r + 1} ${name}: ${p.pages} pages in ${p.seconds.toFixed(2)} s (${(p.pages / p.seconds).toFixed(0)} pages/s)`);
    }
  }
  const m = Object.fromEntries(names.map((n) => [n, median(perSecond[n])]));
  const result = {
    bench: 'events',
    machine: machine(),
    postgres: await postgresVersion(dbInfo.url),
    databaseUrl: redactUrl(opts['database-url']),
    events: EVENTS,
    limit: LIMIT,
    rounds: ROUNDS,
    pagesPerSecond: { bare: round(m.bare, 0), admin: round(m.admin, 0), viewer: round(m.viewer, 0), floor: round(m.floor, 0) },
    ranges: Object.fromEntries(names.map((n) => [n, [round(Math.min(...perSecond[n]), 0), round(Math.max(...perSecond[n]), 0)]])),
    adminOverBareRatio: round(m.admin / m.bare, 3),
    viewerOverBareRatio: round(m.viewer / m.bare, 3),
    floorOverBareRatio: round(m.floor / m.bare, 3),
    adminOverFloorRatio: round(m.admin / m.floor, 3),
  };
  console.log(
    table([
      ['pass', 'pages/s (median)', 'range', '× bare'],
      ...names.map((n) => [n, fmt(m[n], 0), `${fmt(Math.min(...perSecond[n]), 0)}–${fmt(Math.max(...perSecond[n]), 0)}`, fmt(m[n] / m.bare, 3)]),
    ]),
  );
  agent.destroy();
  floorAgent.destroy();
  if (PROFILE_DIR) {
    await server.stop('SIGTERM'); // the profile is written when the server exits
    const file = readdirSync(PROFILE_DIR).filter((f) => f.endsWith('.cpuprofile')).sort().at(-1);
    if (file) {
      const top = await cpuProfileTop(join(PROFILE_DIR, file), 15);
      result.profile = { file: join(PROFILE_DIR, file), ...top };
      console.log(`\nprofile of the server (${fmt(top.samplesMs / 1000, 1)} s of samples):`);
      console.log(table([['self ms', '%', 'function', 'where'], ...top.top.map((t) => [t.selfMs, t.percent, t.fn, t.where])]));
    }
  }
  console.log(JSON.stringify(result));
} finally {
  floor.kill('SIGKILL');
  await sql.end({ timeout: 1 }).catch(() => {});
  await server.cleanup();
  await dbInfo.drop();
}
