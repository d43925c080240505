#!/usr/bin/env node
// Requests per hour the runner makes to the code host (issue 15, Figures): --projects projects (10),
// each with --issues open issues (5) and --pulls open pull requests (3) whose head commits have a check
// run and a commit status, polled at the default intervals (queue.pollSeconds 60 s, fleet.prPollSeconds
// 60 s → 60 queue polls and 60 pull request polls per project and hour).
//
// How: the runner's real collectors (runner/codehost/poller.ts, the CodeHost class the daemon runs)
// against the fake GitHub (test/fakes/github.ts, loopback, real ETags, Link pagination and rate-limit
// headers). The timers are not used: the benchmark runs --cycles poll cycles back to back (each cycle
// = one queue poll and one pull request poll of every project, as the daemon does once a minute at the
// defaults) and scales the requests counted per cycle to one hour (60 cycles). The first cycle (the
// baseline that fills the caches) is not counted. Two ways:
//   conditional     one CodeHost for all cycles, as the daemon: every GET carries If-None-Match
//   unconditional   a new CodeHost per cycle: its client keeps no ETags, so every GET is a full 200
// and two activity levels: quiet (nothing changes) and busy (each cycle, one pull request of one
// project gets a new head commit whose checks run and finish over the next cycles, and one issue is
// opened somewhere). "Counted" requests are the ones GitHub counts against the 5,000/hour limit of a
// token (everything but 304).
//
// Two more parts (issue #36, Figures), each explained in its own file:
//   tokens   installation tokens minted per hour for a busy project, one and two instance processes on
//            one PostgreSQL database, over simulated hours (bench/codehost-tokens.mjs)
//   queue    time from an `issues` App delivery to the queue row (GET /api/projects/:id/queue), p99,
//            read on the receiving server and on a second server process (bench/codehost-queue.mjs)
//
//   npm run bench:codehost -- [--only polls|tokens|queue] [--projects 10] [--issues 5] [--pulls 3] [--cycles 30]
//                             [--hours 3] [--every 5] [--repos 3] [--deliveries 300] [--warmup 20]
// Output: a table per part on stdout, then one JSON line with all figures.
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { CodeHost } from '../runner/codehost/poller.ts';
import { queueFigures } from './codehost-queue.mjs';
import { tokenFigures } from './codehost-tokens.mjs';
import { githubFake } from '../test/fakes/github.ts';
import { installGuards, machine, removeTempDir, table, tempDir, wholeOption } from './lib.mjs';

installGuards(1800);
const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    projects: { type: 'string', default: '10' },
    issues: { type: 'string', default: '5' },
    pulls: { type: 'string', default: '3' },
    cycles: { type: 'string', default: '30' },
    hours: { type: 'string', default: '3' },
    every: { type: 'string', default: '5' },
    repos: { type: 'string', default: '3' },
    deliveries: { type: 'string', default: '300' },
    warmup: { type: 'string', default: '20' },
  },
});
if (values.only && !['polls', 'tokens', 'queue'].includes(values.only)) throw new Error('--only: polls, tokens or queue');
const part = (name) => !values.only || values.only === name;
const PROJECTS = wholeOption('projects', values.projects, 1, 1000);
const ISSUES = wholeOption('issues', values.issues, 0, 10_000);
const PULLS = wholeOption('pulls', values.pulls, 0, 1000);
const CYCLES = wholeOption('cycles', values.cycles, 2, 10_000);
const PER_HOUR = 3600 / 60; // cycles per hour at the default 60 s intervals
const HOURS = wholeOption('hours', values.hours, 1, 48);
const EVERY = wholeOption('every', values.every, 1, 3600);
const REPOS = wholeOption('repos', values.repos, 1, 100);
const DELIVERIES = wholeOption('deliveries', values.deliveries, 10, 10_000);
const WARMUP = wholeOption('warmup', values.warmup, 0, 1000);

async function scenario(conditional, busy) {
  const gh = await githubFake();
  const dir = tempDir('svc-bench-codehost-');
  try {
    const projects = [];
    for (let p = 0; p < PROJECTS; p++) {
      const repo = `org/repo${p}`;
      const r = gh.repo(repo);
      for (let i = 0; i < ISSUES; i++) r.issues.push({ number: r.next++, title: `issue ${i}`, body: '', labels: [], state: 'open' });
      for (let i = 0; i < PULLS; i++) {
        const pr = gh.addPull(repo, { title: `pull ${i}`, head: `b${i}` });
        r.checkRuns[pr.sha] = [{ name: 'test', status: 'completed', conclusion: 'success' }];
        r.statuses[pr.sha] = [{ context: 'ci/lint', state: 'success' }];
      }
      projects.push({ id: `p${p}`, root: `/nowhere/p${p}`, repo });
    }
    const config = { profiles: [], codehost: { apiUrl: gh.url }, queue: { pollSeconds: 60 }, fleet: { prPollSeconds: 60 } };
    const env = { XDG_STATE_HOME: dir, HOME: dir, GH_TOKEN: gh.token, PATH: '' };
    const events = [];
    const make = () => new CodeHost({ config, env, projects: () => projects, append: (e) => events.push(...e) });
    let host = make();
    let counted = { all: 0, charged: 0 };
    let changing = [];
    for (let c = 0; c < CYCLES; c++) {
      if (!conditional) host = make();
      if (busy && c > 0) {
        // The previous cycle's new head commits finish their checks; one more pull request gets a new head.
        for (const [repo, sha] of changing) gh.repo(repo).checkRuns[sha] = [{ name: 'test', status: 'completed', conclusion: c % 3 ? 'success' : 'failure' }];
        const repo = `org/repo${c % PROJECTS}`;
        const pr = gh.repo(repo).pulls[c % PULLS];
        if (pr) {
          pr.sha = createHash('sha1').update(`${repo}${c}`).digest('hex');
          gh.repo(repo).checkRuns[pr.sha] = [{ name: 'test', status: 'in_progress', conclusion: null }];
          changing = [[repo, pr.sha]];
        }
        const r = gh.repo(`org/repo${(c * 7) % PROJECTS}`);
        r.issues.push({ number: r.next++, title: `new ${c}`, body: '', labels: [], state: 'open' });
      }
      const before = gh.requests.length;
      await host.pollQueue();
      await host.pollPulls();
      if (c === 0) continue;
      const cycle = gh.requests.slice(before);
      counted.all += cycle.length;
      counted.charged += cycle.filter((r) => r.status !== 304).length;
    }
    const n = CYCLES - 1;
    return { conditional, busy, requestsPerCycle: counted.all / n, requestsPerHour: Math.round((counted.all / n) * PER_HOUR), chargedPerHour: Math.round((counted.charged / n) * PER_HOUR), events: events.filter((e) => e.kind.startsWith('pr.')).length };
  } finally {
    await gh.close();
    removeTempDir(dir);
  }
}

const out = { bench: 'codehost', machine: machine() };
if (part('polls')) {
  const results = [];
  for (const busy of [false, true]) for (const conditional of [true, false]) results.push(await scenario(conditional, busy));
  console.log(table([['activity', 'requests', 'requests/cycle', 'requests/hour', 'counted/hour (not 304)', 'of 5,000/h'], ...results.map((r) => [r.busy ? 'busy' : 'quiet', r.conditional ? 'conditional' : 'unconditional', r.requestsPerCycle.toFixed(1), r.requestsPerHour, r.chargedPerHour, `${((r.chargedPerHour / 5000) * 100).toFixed(1)} %`])]));
  Object.assign(out, { projects: PROJECTS, issues: ISSUES, pulls: PULLS, cycles: CYCLES, method: 'requests per poll cycle × 60 (default 60 s intervals)', results });
}
if (part('tokens')) {
  const tokens = await tokenFigures({ hours: HOURS, every: EVERY, repos: REPOS });
  console.log(`\ninstallation tokens, ${REPOS} repositories, a command per repository every ${EVERY} s per instance, ${HOURS} simulated hours, tokens valid 60 min`);
  console.log(table([['instances', 'commands', 'failed', 'tokens minted', 'refreshes per repository per hour (after its first mint)', 'least time between two mints of a repository', 'baseline: commands per repository per hour', 'answers not matching GitHub'], ...tokens.map((t) => [t.instances, t.commands, t.failed, t.minted, t.refreshesPerRepoPerHour, `${t.minMinutesBetweenMints} min`, t.commandsPerRepoPerHour, t.mismatches])]));
  out.tokens = tokens;
}
if (part('queue')) {
  const queue = await queueFigures({ deliveries: DELIVERIES, warmup: WARMUP, log: (m) => process.stderr.write(`${m}\n`) });
  const row = (label, s) => [label, `${s.p50} ms`, `${s.p99} ms`, `${s.max} ms`];
  console.log(`\nissues delivery → queue row, ${DELIVERIES} sequential deliveries, PostgreSQL ${queue.postgres}`);
  console.log(table([['', 'p50', 'p99', 'max'], ...['here', 'replica'].flatMap((k) => [row(`delivery → row in GET …/queue (${k === 'here' ? 'the receiving server' : 'another server process'})`, queue[k].deliveryToRow), row('… the hook’s 202', queue[k].deliveryTo202), row('baseline: one GET …/queue', queue[k].queueRead)])]));
  out.queue = queue;
}
console.log(JSON.stringify(out));
