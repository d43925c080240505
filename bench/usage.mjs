#!/usr/bin/env node
// Usage figures (docs/performance.md, "Usage: transcript scan and OTLP receiver"; issue #14 "Figures"),
// each beside a baseline measured in the same run:
//   scan   `svc-runner usage daily --json` (the real dist/svc-runner.mjs) over ~200 MiB of generated
//          Claude Code transcripts (subagent files, progress lines, streaming duplicates, resumed
//          sessions) and Codex rollouts, against `ccusage daily --json --offline` (the pinned dev
//          dependency's native binary, which node_modules/ccusage/src/cli.js execs) on the same files:
//          MiB/s and peak RSS of each, run in turns; both must report the same tokens (checked).
//          Beside them, the floor in Node (bench/usage-floor.mjs): the same files read and split into
//          lines, and that plus JSON.parse of every line that can carry usage.
//          Then one run of a source-mapped build of the same bundle under `node --cpu-prof`: the top
//          self-time functions.
//   otlp   log records/s on POST /v1/logs of the runner's receiver (runner/otlp.ts, with the daemon's
//          onRequests: spoolEvents, the recent-id filter and Spool.append into a temp dir), protobuf
//          bodies of 100 Claude Code api_request records (built with the receiver's generated code,
//          each request id unique), against a bare node:http server that reads the same bodies and
//          answers 200; also the receiver without the spool (decode and map only), as a diagnosis.
//          Each server in its own process; load from a raw-socket generator in another.
//
//   npm run bench:usage -- [options]   (builds, then runs:)
//   node --import tsx bench/usage.mjs [--only all|scan|otlp] [--mb 200] [--rounds 3] [--profile yes|no]
//                                     [--profile-dir DIR] [--seconds 10] [--warmup 3] [--connections 4]
//                                     [--keep-files DIR (generate there and keep them)]
//                                     [--profile-append DIR (a --cpu-prof of each after-append run there)]
//                                     [--also BUNDLE (another svc-runner.mjs, e.g. built at an earlier
//                                      commit, measured in the same rounds: before/after in one run)]
// Loopback only; bounded in time; every process and temp dir it makes is removed at the end, also on
// error or Ctrl-C. Output: progress on stderr, tables on stdout, then one JSON line.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { appendFileSync, chmodSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ROOT,
  captureOutput,
  cpuProfileTop,
  fmt,
  httpRequestBytes,
  installGuards,
  machine,
  median,
  percentile,
  rawHttpLoad,
  removeTempDir,
  round,
  runMeasured,
  spawnTracked,
  stopChild,
  table,
  tempDir,
  waitForPort,
  wholeOption,
} from './lib.mjs';

const { values: opts } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    only: { type: 'string', default: 'all' },
    mb: { type: 'string', default: '200' }, // MiB
    rounds: { type: 'string', default: '3' },
    profile: { type: 'string', default: 'yes' },
    'profile-dir': { type: 'string' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '4' },
    'keep-files': { type: 'string' },
    'profile-append': { type: 'string' },
    also: { type: 'string' },
    spool: { type: 'string' },
  },
  strict: true,
});

const RUNNER = join(ROOT, 'dist', 'svc-runner.mjs');
const RECORDS_PER_BODY = 100;
const log = (m) => process.stderr.write(`[bench:usage] ${m}\n`);

// ==== generated transcripts ===============================================================================

/** Deterministic PRNG (mulberry32). */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the a to of and in is for that with on as it this be are from by at or not file line value error test ' +
  'function const return import export if else async await new class type interface string number null ' +
  'undefined true false result request response server client config option path module build run check ' +
  'update change fix add remove refactor handle parse read write open close start stop retry timeout cache ' +
  'user token session project branch commit merge review issue pull query table index column row schema'
).split(' ');
const SPICE = ['é', '→', '“quoted”', '日本語', 'ü', '✓', '\t', '\\', '"', '<div>', '&&', '{}'];

/** Text blocks of many sizes (log-uniform, 60 B to 48 KB): prose, code, and command output. */
function textPool(rand, count = 400) {
  const pick = (list) => list[(rand() * list.length) | 0];
  const ident = () => `${pick(WORDS)}${pick(['', 'Id', 'Name', 'List', 'Count', '_v2', 'Map'])}`;
  const pool = [];
  for (let i = 0; i < count; i++) {
    const bytes = Math.round(60 * Math.exp(rand() * Math.log(48_000 / 60)));
    const kind = i % 3;
    let s = '';
    while (s.length < bytes) {
      if (kind === 0) s += `${pick(WORDS)}${rand() < 0.02 ? ` ${pick(SPICE)}` : ''}${rand() < 0.07 ? '.\n' : ' '}`;
      else if (kind === 1) s += `${'  '.repeat((rand() * 4) | 0)}const ${ident()} = await ${ident()}("${pick(WORDS)}/${pick(WORDS)}.ts", { ${ident()}: ${(rand() * 100) | 0} });\n`;
      else s += `${String((rand() * 9999) | 0).padStart(6)}\t${pick(WORDS)}_${pick(WORDS)}.ts:${(rand() * 400) | 0}: ${pick(WORDS)} ${pick(WORDS)} ${pick(SPICE)}\n`;
    }
    pool.push(s);
  }
  return pool;
}

const B62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const B64 = B62 + '+/';
const randomText = (rand, alphabet, n) => {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[(rand() * alphabet.length) | 0];
  return s;
};
const uuid = (rand) => {
  const h = randomText(rand, '0123456789abcdef', 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20)}`;
};

const CLAUDE_MODELS = [['claude-opus-4-5-20251101', 0.5], ['claude-sonnet-4-5-20250929', 0.85], ['claude-haiku-4-5-20251001', 1]];
const TOOLS = ['Read', 'Bash', 'Edit', 'Grep', 'Glob', 'Write', 'TodoWrite'];
const DAY = 86_400_000;
const START = Date.UTC(2026, 9, 1); // 2026-10-01: 50 days of sessions

/**
 * Writes Claude Code transcripts (~85 %) and Codex rollouts (~15 %) totalling about `mb` MB under `root`;
 * deterministic. Returns the environment that points both tools at them, and what was written.
 */
function generate(root, mb) {
  const rand = prng(14);
  const pool = textPool(rand);
  const pick = (list) => list[(rand() * list.length) | 0];
  const block = () => pick(pool);
  const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const target = mb * 1024 * 1024;
  const claudeTarget = target * 0.85;
  const home = join(root, 'home');
  const claudeDir = join(root, 'claude');
  const codexHome = join(root, 'codex');
  mkdirSync(home, { recursive: true });
  const stats = { bytes: 0, files: 0, claudeFiles: 0, subagentFiles: 0, codexFiles: 0, lines: 0, claudeRequests: 0, codexTokenCounts: 0, resumed: 0 };
  const writeLines = (path, lines) => {
    mkdirSync(join(path, '..'), { recursive: true });
    const text = lines.join('\n') + '\n';
    writeFileSync(path, text);
    stats.bytes += Buffer.byteLength(text);
    stats.files++;
    stats.lines += lines.length;
  };

  // ---- Claude Code --------------------------------------------------------------------------------------
  const projects = Array.from({ length: 12 }, (_, i) => {
    const cwd = `/home/dev/src/${pick(WORDS)}-${pick(WORDS)}-${i}`;
    return { cwd, dir: cwd.replace(/[^A-Za-z0-9]/g, '-'), last: null };
  });
  const model = () => {
    const r = rand();
    return CLAUDE_MODELS.find(([, p]) => r < p)[0];
  };
  /** One API call's lines: one per content block (streaming), each with the call's message id and usage. */
  const call = (common, at, m, sidechain, allowTool) => {
    const usage = { input_tokens: between(1, 12), cache_creation_input_tokens: 0, cache_read_input_tokens: between(8_000, 160_000), cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 }, output_tokens: between(20, 2_500), service_tier: 'standard' };
    const c5 = rand() < 0.7 ? between(0, 6_000) : 0;
    const c1 = rand() < 0.2 ? between(0, 8_000) : 0;
    Object.assign(usage, { cache_creation_input_tokens: c5 + c1, cache_creation: { ephemeral_5m_input_tokens: c5, ephemeral_1h_input_tokens: c1 } });
    const blocks = [];
    if (rand() < 0.3) blocks.push({ type: 'thinking', thinking: block().slice(0, 3_000), signature: randomText(rand, B64, between(300, 1_500)) });
    if (rand() < 0.6) blocks.push({ type: 'text', text: block().slice(0, 2_000) });
    const tool = allowTool && rand() < 0.8 ? pick(TOOLS) : null;
    const toolId = `toolu_01${randomText(rand, B62, 22)}`;
    if (tool) blocks.push({ type: 'tool_use', id: toolId, name: tool, input: tool === 'Bash' ? { command: `npm test -- ${pick(WORDS)}`, description: 'Run the tests' } : { file_path: `${common.cwd}/src/${pick(WORDS)}.ts` } });
    if (!blocks.length) blocks.push({ type: 'text', text: block().slice(0, 400) });
    const id = `msg_01${randomText(rand, B62, 22)}`;
    const requestId = `req_011C${randomText(rand, B62, 20)}`;
    const lines = blocks.map((b, i) => ({
      parentUuid: uuid(rand),
      isSidechain: sidechain,
      userType: 'external',
      cwd: common.cwd,
      sessionId: common.sessionId,
      version: '2.1.12',
      gitBranch: common.branch,
      ...(common.agentId ? { agentId: common.agentId } : {}),
      message: { model: m, id, type: 'message', role: 'assistant', content: [b], stop_reason: i === blocks.length - 1 ? (tool ? 'tool_use' : 'end_turn') : null, stop_sequence: null, usage },
      requestId,
      type: 'assistant',
      uuid: uuid(rand),
      timestamp: new Date(at + i * 40).toISOString(),
    }));
    return { lines, tool, toolId, requestId };
  };
  const toolResult = (common, at, toolId, tool, sidechain) => {
    const content = block();
    return {
      parentUuid: uuid(rand),
      isSidechain: sidechain,
      userType: 'external',
      cwd: common.cwd,
      sessionId: common.sessionId,
      version: '2.1.12',
      gitBranch: common.branch,
      type: 'user',
      message: { role: 'user', content: [{ tool_use_id: toolId, type: 'tool_result', content }] },
      uuid: uuid(rand),
      timestamp: new Date(at).toISOString(),
      toolUseResult: tool === 'Bash' ? { stdout: content, stderr: '', interrupted: false, isImage: false } : { type: 'text', file: { filePath: `${common.cwd}/src/x.ts`, content, numLines: content.split('\n').length, startLine: 1, totalLines: 400 } },
    };
  };

  let claudeBytes = 0;
  let s = 0;
  while (claudeBytes < claudeTarget) {
    const project = projects[s++ % projects.length];
    const sessionId = uuid(rand);
    const common = { cwd: project.cwd, sessionId, branch: pick(['main', 'main', 'fix-tests', `issue-${between(1, 99)}`]) };
    let at = START + Math.floor(rand() * 50 * DAY);
    const lines = [];
    const push = (o) => lines.push(typeof o === 'string' ? o : JSON.stringify(o));
    if (rand() < 0.3) push({ type: 'summary', summary: block().slice(0, 80), leafUuid: uuid(rand) });
    // A resumed session begins with a copy of the project's previous session's lines.
    if (project.last && rand() < 0.08) {
      stats.resumed++;
      for (const l of project.last.slice(0, between(10, 200))) push(l.split(project.lastSession).join(sessionId));
    }
    const turns = Math.round(Math.exp(rand() * Math.log(120)));
    for (let t = 0; t < turns; t++) {
      push({ parentUuid: null, isSidechain: false, userType: 'external', cwd: common.cwd, sessionId, version: '2.1.12', gitBranch: common.branch, type: 'user', message: { role: 'user', content: block().slice(0, 600) }, uuid: uuid(rand), timestamp: new Date((at += between(5_000, 600_000))).toISOString() });
      if (rand() < 0.2) push({ type: 'file-history-snapshot', messageId: uuid(rand), snapshot: { messageId: uuid(rand), trackedFileBackups: {}, timestamp: new Date(at).toISOString() }, isSnapshotUpdate: false });
      const calls = between(1, 8);
      for (let k = 0; k < calls; k++) {
        const m = model();
        const c = call(common, (at += between(2_000, 40_000)), m, false, k < calls - 1);
        for (const l of c.lines) push(l);
        stats.claudeRequests++;
        if (!c.tool) continue;
        if (c.tool === 'Bash' && rand() < 0.3) push({ type: 'progress', sessionId, version: '2.1.12', cwd: common.cwd, data: { type: 'bash_progress', output: block().slice(0, 1_000) }, toolUseID: c.toolId, uuid: uuid(rand), timestamp: new Date((at += 1_000)).toISOString() });
        // A subagent (Task): its own file, and a progress line in the parent per message it writes.
        if (rand() < 0.04) {
          const agentId = randomText(rand, '0123456789abcdef', 8);
          const sub = { ...common, agentId };
          const subLines = [];
          for (let j = between(2, 12); j > 0; j--) {
            const sc = call(sub, (at += between(2_000, 20_000)), 'claude-haiku-4-5-20251001', true, j > 1);
            for (const l of sc.lines) {
              subLines.push(JSON.stringify(l));
              push({ type: 'progress', sessionId, version: '2.1.12', cwd: common.cwd, data: { type: 'agent_progress', agentId, message: { type: 'assistant', timestamp: l.timestamp, requestId: l.requestId, isSidechain: true, message: l.message, uuid: l.uuid } }, parentToolUseID: c.toolId, uuid: uuid(rand), timestamp: new Date(at).toISOString() });
            }
            stats.claudeRequests++;
            if (sc.tool) subLines.push(JSON.stringify(toolResult(sub, (at += 500), sc.toolId, sc.tool, true)));
          }
          const path = join(claudeDir, 'projects', project.dir, sessionId, 'subagents', `agent-${agentId}.jsonl`);
          const before = stats.bytes;
          writeLines(path, subLines);
          claudeBytes += stats.bytes - before;
          stats.subagentFiles++;
        }
        push(toolResult(common, (at += between(200, 30_000)), c.toolId, c.tool, false));
      }
      // Now and then a line cut mid-write (an agent killed while writing; the next line follows it).
      if (rand() < 0.01) push(JSON.stringify({ type: 'assistant', message: { usage: { input_tokens: 1 } }, text: block() }).slice(0, 200));
    }
    const before = stats.bytes;
    writeLines(join(claudeDir, 'projects', project.dir, `${sessionId}.jsonl`), lines);
    claudeBytes += stats.bytes - before;
    stats.claudeFiles++;
    project.last = lines;
    project.lastSession = sessionId;
  }

  // ---- Codex --------------------------------------------------------------------------------------------
  while (stats.bytes < target) {
    const id = `019a${randomText(rand, '0123456789abcdef', 4)}-${randomText(rand, '0123456789abcdef', 4)}-7${randomText(rand, '0123456789abcdef', 3)}-8${randomText(rand, '0123456789abcdef', 3)}-${randomText(rand, '0123456789abcdef', 12)}`;
    let at = START + Math.floor(rand() * 50 * DAY);
    const iso = () => new Date(at).toISOString();
    const cwd = pick(projects).cwd;
    const lines = [];
    const line = (type, payload) => lines.push(JSON.stringify({ timestamp: iso(), type, payload }));
    line('session_meta', { id, timestamp: iso(), cwd, originator: 'codex_cli_rs', cli_version: '0.58.0', instructions: pool[3].slice(0, 8_000), source: 'cli', model_provider: 'openai', git: { commit_hash: randomText(rand, '0123456789abcdef', 40), branch: 'main', repository_url: 'git@example.com:me/app.git' } });
    const total = { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0, reasoning_output_tokens: 0, total_tokens: 0 };
    const codexModel = pick(['gpt-5-codex', 'gpt-5.1-codex-max', 'gpt-5.1-codex-max', 'gpt-5']);
    for (let t = Math.round(Math.exp(rand() * Math.log(60))); t > 0; t--) {
      at += between(10_000, 900_000);
      line('turn_context', { cwd, approval_policy: 'on-request', sandbox_policy: { type: 'workspace-write', network_access: false }, model: codexModel, effort: 'medium', summary: 'auto' });
      const prompt = block().slice(0, 600);
      line('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text: prompt }] });
      line('event_msg', { type: 'user_message', message: prompt, images: [] });
      for (let k = between(1, 6); k > 0; k--) {
        at += between(2_000, 60_000);
        line('response_item', { type: 'reasoning', summary: [{ type: 'summary_text', text: block().slice(0, 300) }], content: null, encrypted_content: randomText(rand, B64, between(800, 4_000)) });
        line('event_msg', { type: 'agent_reasoning', text: block().slice(0, 300) });
        const callId = `call_${randomText(rand, B62, 24)}`;
        line('response_item', { type: 'function_call', name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', `rg ${pick(WORDS)} src`], workdir: cwd }), call_id: callId });
        line('response_item', { type: 'function_call_output', call_id: callId, output: JSON.stringify({ output: block(), metadata: { exit_code: 0, duration_seconds: rand() } }) });
        const input = between(5_000, 120_000), cached = Math.floor(input * rand() * 0.9), output = between(50, 3_000), reasoning = Math.floor(output * rand() * 0.6);
        const last = { input_tokens: input, cached_input_tokens: cached, output_tokens: output, reasoning_output_tokens: reasoning, total_tokens: input + output };
        for (const key of Object.keys(total)) total[key] += last[key];
        const tc = { type: 'token_count', info: { total_token_usage: { ...total }, last_token_usage: last, model_context_window: 272_000 }, rate_limits: { primary: { used_percent: between(1, 90), window_minutes: 300, resets_at: 1_763_483_205 }, secondary: null } };
        line('event_msg', tc);
        stats.codexTokenCounts++;
        // Codex repeats a token_count now and then (the same totals: not a new request).
        if (rand() < 0.1) line('event_msg', tc);
      }
      const answer = block().slice(0, 1_500);
      line('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer }] });
      line('event_msg', { type: 'agent_message', message: answer });
    }
    const day = JSON.parse(lines[0]).timestamp.slice(0, 10).split('-');
    const stamp = JSON.parse(lines[0]).timestamp.slice(0, 19).replace(/:/g, '-');
    writeLines(join(codexHome, 'sessions', ...day, `rollout-${stamp}-${id}.jsonl`), lines);
    stats.codexFiles++;
  }
  const env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), CLAUDE_CONFIG_DIR: claudeDir, CODEX_HOME: codexHome, TZ: 'UTC', LANG: 'C', PATH: process.env.PATH ?? '/usr/bin:/bin' };
  return { env, stats };
}

// ==== scan: ours against ccusage ==========================================================================

/** ccusage's native binary, as node_modules/ccusage/src/cli.js resolves and execs it. */
function ccusageBinary() {
  const require = createRequire(join(ROOT, 'node_modules', 'ccusage', 'src', 'cli.js'));
  const name = { 'linux-x64': 'ccusage-linux-x64', 'linux-arm64': 'ccusage-linux-arm64', 'darwin-x64': 'ccusage-darwin-x64', 'darwin-arm64': 'ccusage-darwin-arm64' }[`${process.platform}-${process.arch}`];
  if (!name) throw new Error(`no ccusage native binary for ${process.platform}-${process.arch}`);
  const bin = require.resolve(`@ccusage/${name}/bin/ccusage`);
  // npm unpacks it without its execute bit; the wrapper sets it before its first exec, and so do we.
  if ((statSync(bin).mode & 0o111) === 0) chmodSync(bin, 0o755);
  const pinned = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'ccusage', 'package.json'), 'utf8')).version;
  const version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim().replace(/^ccusage\s+/, '');
  if (version !== pinned) log(`WARNING: the native binary is ccusage ${version}, the wrapper is ${pinned}`);
  return { bin, version };
}

/** Tokens per `date model` and the total cost, from either tool's daily JSON. */
function ourRows(stdout) {
  const rows = new Map();
  let cost = 0;
  for (const d of JSON.parse(stdout).days) {
    const k = `${d.date} ${d.model}`;
    const r = rows.get(k) ?? { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 };
    r.input += d.inputTokens;
    r.output += d.outputTokens;
    r.cacheWrite += d.cacheCreationTokens;
    r.cacheRead += d.cacheReadTokens;
    rows.set(k, r);
    cost += d.costUSD ?? 0;
  }
  return { rows, cost };
}
function ccusageRows(stdout) {
  const rows = new Map();
  let cost = 0;
  for (const d of JSON.parse(stdout).daily) {
    for (const b of d.modelBreakdowns) {
      const k = `${d.period ?? d.date} ${b.modelName}`;
      const r = rows.get(k) ?? { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 };
      r.input += b.inputTokens;
      r.output += b.outputTokens;
      r.cacheWrite += b.cacheCreationTokens;
      r.cacheRead += b.cacheReadTokens;
      rows.set(k, r);
    }
    cost += d.totalCost ?? d.costUSD ?? 0;
  }
  return { rows, cost };
}
const sum = (rows) => [...rows.values()].reduce((a, r) => ({ input: a.input + r.input, output: a.output + r.output, cacheWrite: a.cacheWrite + r.cacheWrite, cacheRead: a.cacheRead + r.cacheRead }), { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 });

function compare(ours, theirs) {
  const keys = new Set([...ours.rows.keys(), ...theirs.rows.keys()]);
  const differing = [...keys].filter((k) => JSON.stringify(ours.rows.get(k)) !== JSON.stringify(theirs.rows.get(k)));
  return {
    rows: ours.rows.size,
    ccusageRows: theirs.rows.size,
    differingRows: differing.length,
    firstDiffering: differing.slice(0, 3).map((k) => ({ key: k, ours: ours.rows.get(k) ?? null, ccusage: theirs.rows.get(k) ?? null })),
    tokens: sum(ours.rows),
    ccusageTokens: sum(theirs.rows),
    costUSD: round(ours.cost, 4),
    ccusageCostUSD: round(theirs.cost, 4),
    costRelDiff: round(Math.abs(ours.cost - theirs.cost) / Math.max(theirs.cost, 1e-9), 6),
  };
}

/** The largest Claude transcript under the first config dir (the one the appends grow). */
function largestClaudeFile(claudeDirs) {
  const files = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.jsonl')) files.push([statSync(p).size, p]);
    }
  };
  walk(join(claudeDirs.split(',')[0], 'projects'));
  return files.sort((a, b) => b[0] - a[0])[0][1];
}

/** About `bytes` of the file's own lines as new calls: message, request and line ids made unique per round. */
function freshLines(file, round, bytes) {
  const out = [];
  let size = 0;
  for (const l of readFileSync(file, 'utf8').split('\n')) {
    if (!l || size >= bytes) continue;
    const t = l.replace(/"(id|requestId|uuid|parentUuid)":"([^"]+)"/g, (_, k, v) => `"${k}":"${v}-a${round}"`);
    out.push(t);
    size += Buffer.byteLength(t) + 1;
  }
  return out.join('\n') + '\n';
}

async function scanBench() {
  const ccu = ccusageBinary();
  const root = opts['keep-files'] ?? tempDir('svc-bench-usage-');
  mkdirSync(root, { recursive: true });
  log(`generating ~${MB} MiB of transcripts in ${root}…`);
  const t0 = performance.now();
  const { env, stats } = generate(root, MB);
  const mbytes = stats.bytes / 1024 / 1024;
  log(`generated ${fmt(mbytes, 1)} MiB in ${stats.files} files (${stats.claudeFiles} Claude sessions, ${stats.subagentFiles} subagent files, ${stats.codexFiles} Codex rollouts) in ${fmt((performance.now() - t0) / 1000, 1)} s`);

  const runBundle = (bundle, flags = []) => runMeasured(process.execPath, [bundle, 'usage', 'daily', '--json', ...flags], { env, cwd: root });
  // ours: a full scan (--rescan: what a first run does, index write included); indexed: the next run, nothing
  // changed; appended: a run after ~1 MiB of new Claude lines was appended to one transcript (issue #41 part 2).
  const runOurs = () => runBundle(RUNNER, ['--rescan']);
  const runIndexed = () => runBundle(RUNNER);
  const appendTarget = largestClaudeFile(env.CLAUDE_CONFIG_DIR);
  let appendRound = 0;
  const runAppended = async () => {
    appendFileSync(appendTarget, freshLines(appendTarget, ++appendRound, 1 << 20));
    // What the run did (SVC_USAGE_STATS=1): merged into the stored requests, or the full dedup and why.
    const prof = opts['profile-append'] ? ['--cpu-prof', `--cpu-prof-dir=${opts['profile-append']}`] : [];
    const r = await runMeasured(process.execPath, [...prof, RUNNER, 'usage', 'daily', '--json'], { env: { ...env, SVC_USAGE_STATS: '1' }, cwd: root });
    const line = (r.stderr ?? '').split('\n').find((l) => l.startsWith('{"usageIndex"'));
    r.usageIndex = line ? JSON.parse(line).usageIndex : null;
    return r;
  };
  const runTheirs = () => runMeasured(ccu.bin, ['daily', '--json', '--offline'], { env, cwd: root });
  // The floor in Node (bench/usage-floor.mjs): the same files read and split into lines, then also the
  // lines that can carry usage JSON.parse'd; what any exact scan in JavaScript does at least.
  const runFloor = (mode) => runMeasured(process.execPath, [join(ROOT, 'bench', 'usage-floor.mjs'), mode], { env, cwd: root });
  const check = (name, r) => {
    if (r.code !== 0) throw new Error(`${name} exited with ${r.code}:\n${r.stderr.slice(0, 2000)}`);
    return r;
  };
  // Warm-up (page cache, and the outputs compared).
  log('warm-up: svc-runner usage daily --json, then ccusage daily --json --offline');
  const wOurs = check('svc-runner', await runOurs());
  const wTheirs = check('ccusage', await runTheirs());
  const sanity = compare(ourRows(wOurs.stdout), ccusageRows(wTheirs.stdout));
  log(`sanity: ${sanity.rows} day×model rows (ccusage ${sanity.ccusageRows}), ${sanity.differingRows} differ; cost ${sanity.costUSD} vs ${sanity.ccusageCostUSD}`);
  check('floor read', await runFloor('read'));
  check('floor parse', await runFloor('parse'));
  const also = opts.also ? check(`svc-runner (${opts.also})`, await runBundle(opts.also)) : null;
  if (also && also.stdout !== wOurs.stdout) log(`WARNING: ${opts.also} does not print what dist/svc-runner.mjs prints`);
  const rounds = [];
  for (let r = 1; r <= ROUNDS; r++) {
    // Alternate which goes first, so drift and cache state favour neither.
    // indexed and appended run right after ours (its --rescan leaves the index they read).
    const order = r % 2 ? ['ours', 'indexed', 'appended', 'floorParse', 'ccusage', 'floorRead', 'also'] : ['also', 'floorRead', 'ccusage', 'floorParse', 'ours', 'indexed', 'appended'];
    const got = {};
    const run = { ours: runOurs, indexed: runIndexed, appended: runAppended, ccusage: runTheirs, also: () => runBundle(opts.also), floorRead: () => runFloor('read'), floorParse: () => runFloor('parse') };
    for (const who of order) {
      if (who === 'also' && !also) continue;
      got[who] = check(who, await run[who]());
    }
    const measured = (g) => ({ seconds: round(g.seconds, 3), cpuSeconds: round(g.cpuSeconds, 2), mbPerSecond: round(mbytes / g.seconds, 1), maxRssMiB: round(g.maxRssKiB / 1024, 1) });
    const row = {
      round: r,
      order,
      ours: { seconds: round(got.ours.seconds, 3), cpuSeconds: round(got.ours.cpuSeconds, 2), mbPerSecond: round(mbytes / got.ours.seconds, 1), maxRssMiB: round(got.ours.maxRssKiB / 1024, 1) },
      ccusage: { seconds: round(got.ccusage.seconds, 3), cpuSeconds: round(got.ccusage.cpuSeconds, 2), mbPerSecond: round(mbytes / got.ccusage.seconds, 1), maxRssMiB: round(got.ccusage.maxRssKiB / 1024, 1) },
      ...(got.also ? { also: { seconds: round(got.also.seconds, 3), cpuSeconds: round(got.also.cpuSeconds, 2), mbPerSecond: round(mbytes / got.also.seconds, 1), maxRssMiB: round(got.also.maxRssKiB / 1024, 1) } } : {}),
      indexed: measured(got.indexed),
      appended: { ...measured(got.appended), merged: got.appended.usageIndex?.merged === true, fallback: got.appended.usageIndex?.fallback ?? null },
      floorRead: measured(got.floorRead),
      floorParse: measured(got.floorParse),
      loadavg1: round(os.loadavg()[0], 2),
    };
    if (row.also) Object.assign(row.also, { ratio: round(row.also.mbPerSecond / row.ccusage.mbPerSecond, 3), cpuRatio: round(got.ccusage.cpuSeconds / got.also.cpuSeconds, 3) });
    row.ratio = round(row.ours.mbPerSecond / row.ccusage.mbPerSecond, 3);
    // MB per CPU second, ours ÷ ccusage: the work each does, less sensitive to the machine's other load.
    row.cpuRatio = round(got.ccusage.cpuSeconds / got.ours.cpuSeconds, 3);
    // ccusage's seconds ÷ ours: how many times faster than ccusage's run (goal ≥ 2 for both, #41).
    row.indexedSpeedup = round(got.ccusage.seconds / got.indexed.seconds, 3);
    row.appendedSpeedup = round(got.ccusage.seconds / got.appended.seconds, 3);
    row.floorRatio = round(row.floorParse.mbPerSecond / row.ccusage.mbPerSecond, 3); // Node's floor ÷ ccusage
    row.oursOverFloor = round(row.ours.mbPerSecond / row.floorParse.mbPerSecond, 3);
    rounds.push(row);
    if (row.also) log(`round ${r}: ${opts.also} ${row.also.seconds} s, ${row.also.cpuSeconds} CPU s (${row.also.mbPerSecond} MiB/s, ${row.also.maxRssMiB} MiB); ratio ${row.also.ratio}, per CPU s ${row.also.cpuRatio}`);
    log(`round ${r}: indexed ${row.indexed.seconds} s (${row.indexed.cpuSeconds} CPU s, ${row.indexed.maxRssMiB} MiB), after 1 MiB appended ${row.appended.seconds} s (merged: ${row.appended.merged}${row.appended.fallback ? `, ${row.appended.fallback}` : ''}); ccusage ÷ indexed ${row.indexedSpeedup}, ÷ appended ${row.appendedSpeedup}`);
    log(`round ${r}: svc-runner ${row.ours.seconds} s, ${row.ours.cpuSeconds} CPU s (${row.ours.mbPerSecond} MiB/s, ${row.ours.maxRssMiB} MiB), ccusage ${row.ccusage.seconds} s, ${row.ccusage.cpuSeconds} CPU s (${row.ccusage.mbPerSecond} MiB/s, ${row.ccusage.maxRssMiB} MiB); ratio ${row.ratio}, per CPU s ${row.cpuRatio}; floor (read ${row.floorRead.seconds} s, + parse ${row.floorParse.seconds} s) ÷ ccusage ${row.floorRatio}, svc-runner ÷ floor ${row.oursOverFloor}; load ${row.loadavg1}`);
  }

  // The index after the appends prints what a full scan prints, and both what ccusage prints.
  const afterIndexed = check('svc-runner (indexed)', await runIndexed());
  const afterFull = check('svc-runner --rescan', await runOurs());
  const afterSanity = { indexedEqualsFull: afterIndexed.stdout === afterFull.stdout, ...compare(ourRows(afterIndexed.stdout), ccusageRows(check('ccusage', await runTheirs()).stdout)) };
  log(`after the appends: indexed = full scan: ${afterSanity.indexedEqualsFull}; ${afterSanity.rows} rows (ccusage ${afterSanity.ccusageRows}), ${afterSanity.differingRows} differ`);

  let profile = null;
  if (opts.profile === 'yes') {
    // The same bundle (esbuild.config.mjs's runner build) with a source map, so functions are placed in runner/.
    const dir = opts['profile-dir'] ?? tempDir('svc-bench-cpuprof-');
    mkdirSync(dir, { recursive: true });
    const { buildRunner } = await import('../esbuild.config.mjs');
    const outfile = join(dir, 'svc-runner.mjs');
    await buildRunner({ outfile, sourcemap: true });
    log('profile: the source-mapped bundle under --cpu-prof…');
    const p = check('svc-runner --cpu-prof', await runMeasured(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, outfile, 'usage', 'daily', '--json'], { env, cwd: root }));
    // One profile per thread: CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile, the main thread is 0.
    const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort((a, b) => Number(a.split('.')[4]) - Number(b.split('.')[4]));
    if (!files.length) throw new Error(`no .cpuprofile in ${dir}`);
    const [file, ...workers] = files;
    profile = { seconds: round(p.seconds, 2), file: opts['profile-dir'] ? join(dir, file) : null, ...(await cpuProfileTop(join(dir, file), 15)) };
    if (workers.length) profile.worker = { file: opts['profile-dir'] ? join(dir, workers[0]) : null, ...(await cpuProfileTop(join(dir, workers[0]), 12)) };
    if (!opts['profile-dir']) removeTempDir(dir);
  }
  if (!opts['keep-files']) removeTempDir(root);

  const stat = (f) => {
    const v = rounds.map(f);
    return { median: median(v), min: Math.min(...v), max: Math.max(...v) };
  };
  return {
    generated: { ...stats, mb: round(mbytes, 1) },
    ccusage: { version: ccu.version, binary: ccu.bin.replace(`${ROOT}/`, '') },
    peakFrom: wOurs.peakFrom,
    sanity,
    afterSanity,
    rounds,
    summary: {
      ours: { mbPerSecond: stat((r) => r.ours.mbPerSecond), maxRssMiB: stat((r) => r.ours.maxRssMiB), seconds: stat((r) => r.ours.seconds), cpuSeconds: stat((r) => r.ours.cpuSeconds) },
      ccusage: { mbPerSecond: stat((r) => r.ccusage.mbPerSecond), maxRssMiB: stat((r) => r.ccusage.maxRssMiB), seconds: stat((r) => r.ccusage.seconds), cpuSeconds: stat((r) => r.ccusage.cpuSeconds) },
      ratio: stat((r) => r.ratio),
      cpuRatio: stat((r) => r.cpuRatio),
      floorRead: { mbPerSecond: stat((r) => r.floorRead.mbPerSecond), maxRssMiB: stat((r) => r.floorRead.maxRssMiB), seconds: stat((r) => r.floorRead.seconds), cpuSeconds: stat((r) => r.floorRead.cpuSeconds) },
      floorParse: { mbPerSecond: stat((r) => r.floorParse.mbPerSecond), maxRssMiB: stat((r) => r.floorParse.maxRssMiB), seconds: stat((r) => r.floorParse.seconds), cpuSeconds: stat((r) => r.floorParse.cpuSeconds) },
      indexed: { seconds: stat((r) => r.indexed.seconds), cpuSeconds: stat((r) => r.indexed.cpuSeconds), maxRssMiB: stat((r) => r.indexed.maxRssMiB) },
      appended: { seconds: stat((r) => r.appended.seconds), cpuSeconds: stat((r) => r.appended.cpuSeconds), maxRssMiB: stat((r) => r.appended.maxRssMiB) },
      indexedSpeedup: stat((r) => r.indexedSpeedup),
      appendedSpeedup: stat((r) => r.appendedSpeedup),
      floorRatio: stat((r) => r.floorRatio),
      oursOverFloor: stat((r) => r.oursOverFloor),
      ...(also
        ? {
            also: { bundle: opts.also, mbPerSecond: stat((r) => r.also.mbPerSecond), maxRssMiB: stat((r) => r.also.maxRssMiB), seconds: stat((r) => r.also.seconds), cpuSeconds: stat((r) => r.also.cpuSeconds) },
            alsoRatio: stat((r) => r.also.ratio),
            alsoCpuRatio: stat((r) => r.also.cpuRatio),
          }
        : {}),
      rssRatio: stat((r) => r.ours.maxRssMiB / r.ccusage.maxRssMiB),
    },
    profile,
  };
}

// ==== OTLP: the receiver against a bare server =============================================================

/** The child that serves /v1/logs as the daemon does (runner/daemon.ts startOtlp), spool or none. */
async function receiverRole() {
  const { OtlpReceiver, RecentIds, spoolEvents } = await import('../runner/otlp.ts');
  const { Spool } = await import('../runner/spool.ts');
  const dir = opts.spool;
  const spool = dir && dir !== 'none' ? new Spool(dir, 'bench-runner') : null;
  const recent = new RecentIds();
  let records = 0;
  const receiver = new OtlpReceiver({
    port: 0,
    codexExperimental: false,
    onRequests: (requests) => {
      records += requests.length;
      if (!spool) return;
      const events = recent.unseen(spoolEvents(requests, 'bench'));
      if (events.length === 0) return;
      spool.append(events);
      for (const e of events) recent.add(e.id);
    },
  });
  const port = await receiver.listen();
  console.log(`listening port=${port}`);
  process.on('SIGTERM', () => {
    process.stderr.write(`records=${records}\n`);
    receiver.close().then(() => process.exit(0));
  });
}

/** The baseline: read the body, answer 200 with an empty protobuf ExportLogsServiceResponse. */
function bareRole() {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      Buffer.concat(chunks);
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
      res.end();
    });
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => console.log(`listening port=${server.address().port}`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

const PLACEHOLDER = 'QQQQQQQQQQ'; // 10 digits of the request counter go here in every request id

/** The load generator child: the template body with each request's counter written into its ids. */
async function loadRole() {
  const job = JSON.parse(process.env.BENCH_LOAD);
  const template = readFileSync(job.template);
  const at = [];
  for (let i = template.indexOf(PLACEHOLDER); i !== -1; i = template.indexOf(PLACEHOLDER, i + 1)) at.push(i);
  const body = Buffer.from(template);
  const headers = { 'content-type': 'application/x-protobuf' };
  const request = (n) => {
    const digits = String(job.base + n).padStart(10, '0');
    for (const i of at) body.write(digits, i, 'latin1');
    return httpRequestBytes('POST', '/v1/logs', job.port, headers, body);
  };
  const r = await rawHttpLoad({ port: job.port, connections: job.connections, seconds: job.seconds, request, maxRequests: job.maxRequests });
  process.stdout.write(JSON.stringify({ requests: r.requests, seconds: r.seconds, statuses: r.statuses, errors: r.errors, p50Ms: percentile(r.latencies, 50), p99Ms: percentile(r.latencies, 99) }) + '\n');
  process.exit(0);
}

/** 100 Claude Code api_request records (attributes as Claude Code sends them) as one protobuf body. */
async function templateBody() {
  const { create, toBinary } = await import('@bufbuild/protobuf');
  const { ExportLogsServiceRequestSchema } = await import('../runner/otlp/gen/logs_service_pb.ts');
  const kv = (key, v) => ({ key, value: { value: typeof v === 'string' ? { case: 'stringValue', value: v } : Number.isInteger(v) ? { case: 'intValue', value: BigInt(v) } : { case: 'doubleValue', value: v } } });
  const t = 1_763_632_800_000n * 1_000_000n;
  const records = Array.from({ length: RECORDS_PER_BODY }, (_, i) => ({
    timeUnixNano: t + BigInt(i) * 1_000_000n,
    observedTimeUnixNano: t + BigInt(i) * 1_000_000n + 500_000n,
    severityNumber: 9,
    body: { value: { case: 'stringValue', value: 'claude_code.api_request' } },
    attributes: [
      kv('user.id', 'c0ffee'.repeat(10) + 'abcd'),
      kv('session.id', 'bench-session-0000-0000-000000000001'),
      kv('organization.id', '9f8e7d6c-aaaa-bbbb-cccc-000000000002'),
      kv('user.email', 'dev.person@example.test'),
      kv('user.account_uuid', '1b2c3d4e-aaaa-bbbb-cccc-000000000001'),
      kv('terminal.type', 'tmux'),
      kv('event.name', 'api_request'),
      kv('event.timestamp', new Date(Number(t / 1_000_000n) + i).toISOString()),
      kv('event.sequence', i + 1),
      kv('prompt.id', 'prompt-0001'),
      kv('model', i % 3 ? 'claude-opus-4-5-20251101' : 'claude-haiku-4-5-20251001'),
      kv('input_tokens', 3 + i),
      kv('output_tokens', 250 + i),
      kv('cache_read_tokens', 40_000 + i),
      kv('cache_creation_tokens', 900 + i),
      kv('cost_usd', 0.0213 + i / 1e5),
      kv('duration_ms', 3_000 + i),
      kv('request_id', `req_011C${PLACEHOLDER}${String(i).padStart(3, '0')}bench`),
      kv('client_request_id', `client-${PLACEHOLDER}-${i}`),
      kv('speed', 'normal'),
      kv('query_source', 'repl_main_thread'),
      kv('effort', 'medium'),
    ],
  }));
  const message = create(ExportLogsServiceRequestSchema, {
    resourceLogs: [
      {
        resource: { attributes: [kv('service.name', 'claude-code'), kv('service.version', '2.1.12'), kv('os.type', 'linux'), kv('host.arch', 'amd64'), kv('svc.project', 'proj-bench'), kv('svc.slot', 'w1'), kv('svc.issue', '14')] },
        scopeLogs: [{ scope: { name: 'com.anthropic.claude_code.events', version: '2.1.12' }, logRecords: records }],
      },
    ],
  });
  return Buffer.from(toBinary(ExportLogsServiceRequestSchema, message));
}

async function otlpBench() {
  const work = tempDir('svc-bench-otlp-');
  const template = join(work, 'body.bin');
  const bodyBytes = await templateBody();
  writeFileSync(template, bodyBytes);
  const spoolDir = join(work, 'spool');
  const servers = {};
  const start = async (name, args) => {
    const child = captureOutput(spawnTracked(process.execPath, ['--import', 'tsx', import.meta.filename, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: work, TZ: 'UTC' } }));
    servers[name] = { child, port: await waitForPort(child, 30_000, /listening port=(\d+)/) };
  };
  let base = 0;
  const load = async (name, seconds, maxRequests = 1_000_000) => {
    const { port } = servers[name];
    const child = captureOutput(spawnTracked(process.execPath, [import.meta.filename, '--role', 'load'], { env: { PATH: process.env.PATH, BENCH_LOAD: JSON.stringify({ port, template, base, connections: CONNECTIONS, seconds, maxRequests }) } }));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 60) * 1000);
    const code = await child.exited;
    clearTimeout(timer);
    if (code !== 0) throw new Error(`load generator (${name}) ended with ${code}:\n${child.log}`);
    const r = JSON.parse(out.trim().split('\n').pop());
    base += r.requests + 10;
    const ok = r.statuses[200] ?? 0;
    return { ...r, ok, other: r.requests - ok, recordsPerSecond: (ok * RECORDS_PER_BODY) / r.seconds, p50Ms: round(r.p50Ms, 2), p99Ms: round(r.p99Ms, 2) };
  };
  // Events in the spool dir: one file per append since 0.17 (its event count is in its name), one per event before.
  const spooled = () => readdirSync(spoolDir).reduce((sum, n) => { const m = /^\d{13}\.\d{8}\.[a-z0-9]{6}(?:\.(\d+)\.jsonl|\.json)$/.exec(n); return sum + (m ? Number(m[1] ?? 1) : 0); }, 0);
  const clearSpool = () => {
    for (const n of readdirSync(spoolDir)) rmSync(join(spoolDir, n), { force: true, recursive: true });
  };
  const rounds = [];
  try {
    mkdirSync(spoolDir, { recursive: true });
    await start('bare', ['--role', 'bare']);
    await start('decode', ['--role', 'receiver', '--spool', 'none']);
    await start('spool', ['--role', 'receiver', '--spool', spoolDir]);
    log(`OTLP: body ${bodyBytes.length} B (${RECORDS_PER_BODY} records), ${CONNECTIONS} connections; bare :${servers.bare.port}, receiver :${servers.decode.port}, receiver+spool :${servers.spool.port} (spool in ${spoolDir})`);
    // Each answers one request right, then a warm-up.
    for (const name of ['bare', 'decode', 'spool']) {
      const r = await load(name, 5, 1);
      if (r.ok !== 1) throw new Error(`${name}: expected one 200, got ${JSON.stringify(r.statuses)}`);
    }
    if (spooled() !== RECORDS_PER_BODY) throw new Error(`the receiver spooled ${spooled()} events for one body of ${RECORDS_PER_BODY} records`);
    if (WARMUP) for (const name of ['bare', 'decode', 'spool']) await load(name, WARMUP);
    for (let r = 1; r <= ROUNDS; r++) {
      const row = { round: r };
      for (const name of ['bare', 'decode', 'spool']) {
        clearSpool();
        row[name] = await load(name, SECONDS);
        if (name === 'spool') {
          row.spool.spooledEvents = spooled();
          // one file (and one fsync) per store: bodies that arrive together share one (runner/otlp.ts)
          row.spool.spoolWrites = readdirSync(spoolDir).filter((n) => !n.startsWith('.')).length;
          row.spool.bodiesPerWrite = round(row.spool.ok / Math.max(1, row.spool.spoolWrites), 2);
        }
        log(`round ${r} ${name.padEnd(6)} ${fmt(row[name].recordsPerSecond, 0)} records/s (${row[name].ok} bodies, other ${row[name].other}, errors ${row[name].errors}); p50 ${fmt(row[name].p50Ms)} ms p99 ${fmt(row[name].p99Ms)} ms${name === 'spool' ? `; ${row.spool.spooledEvents} events spooled in ${row.spool.spoolWrites} writes (${row.spool.bodiesPerWrite} bodies per fsync)` : ''}`);
      }
      row.ratios = { spoolOverBare: round(row.spool.recordsPerSecond / row.bare.recordsPerSecond, 3), decodeOverBare: round(row.decode.recordsPerSecond / row.bare.recordsPerSecond, 3) };
      rounds.push(row);
    }
  } finally {
    for (const s of Object.values(servers)) await stopChild(s.child, 5_000);
    removeTempDir(work);
  }
  const problems = Object.values(servers).flatMap((s) => s.child.log.split('\n').filter((l) => / (WARN|ERROR) /.test(l))).slice(0, 10);
  const stat = (f) => {
    const v = rounds.map(f);
    return { median: median(v), min: Math.min(...v), max: Math.max(...v) };
  };
  return {
    bodyBytes: bodyBytes.length,
    recordsPerBody: RECORDS_PER_BODY,
    connections: CONNECTIONS,
    seconds: SECONDS,
    spoolFilesystem: fsOf(os.tmpdir()),
    rounds,
    problems,
    summary: {
      bare: { recordsPerSecond: stat((r) => r.bare.recordsPerSecond), p50Ms: stat((r) => r.bare.p50Ms), p99Ms: stat((r) => r.bare.p99Ms) },
      decode: { recordsPerSecond: stat((r) => r.decode.recordsPerSecond), p50Ms: stat((r) => r.decode.p50Ms), p99Ms: stat((r) => r.decode.p99Ms) },
      spool: { recordsPerSecond: stat((r) => r.spool.recordsPerSecond), p50Ms: stat((r) => r.spool.p50Ms), p99Ms: stat((r) => r.spool.p99Ms), bodiesPerWrite: stat((r) => r.spool.bodiesPerWrite) },
      spoolOverBare: stat((r) => r.ratios.spoolOverBare),
      decodeOverBare: stat((r) => r.ratios.decodeOverBare),
      spooledEqualsAccepted: rounds.every((r) => r.spool.spooledEvents === r.spool.ok * RECORDS_PER_BODY),
    },
  };
}

/** The file system type of a directory (from /proc/mounts: the longest mount point above it). */
function fsOf(dir) {
  try {
    const mounts = readFileSync('/proc/mounts', 'utf8').trim().split('\n').map((l) => l.split(' '));
    const m = mounts.filter(([, point]) => dir === point || dir.startsWith(point.endsWith('/') ? point : `${point}/`)).sort((a, b) => b[1].length - a[1].length)[0];
    return m ? `${m[2]} (${m[0]} on ${m[1]})` : 'unknown';
  } catch {
    return 'unknown';
  }
}

// ==== main ================================================================================================

const whole = (name, min = 1, max = Infinity) => wholeOption(name, opts[name], min, max);
const MB = whole('mb', 1, 4096);
const ROUNDS = whole('rounds', 1, 20);
const SECONDS = whole('seconds', 1, 600);
const WARMUP = whole('warmup', 0, 600);
const CONNECTIONS = whole('connections', 1, 256);

async function main() {
  if (opts.role === 'receiver') return receiverRole();
  if (opts.role === 'bare') return bareRole();
  if (opts.role === 'load') return loadRole();
  if (!['all', 'scan', 'otlp'].includes(opts.only)) {
    process.stderr.write(`--only must be all, scan or otlp (got ${opts.only})\n`);
    process.exit(2);
  }
  if (!['yes', 'no'].includes(opts.profile)) {
    process.stderr.write(`--profile must be yes or no (got ${opts.profile})\n`);
    process.exit(2);
  }
  try {
    statSync(RUNNER);
  } catch {
    process.stderr.write(`${RUNNER} is missing: run \`npm run build\` first\n`);
    process.exit(2);
  }
  const doScan = opts.only !== 'otlp';
  const doOtlp = opts.only !== 'scan';
  // Generation ~1 s per 10 MB; each scan run well under a minute at 200 MB on this machine.
  installGuards(120 + (doScan ? MB * 0.5 + (ROUNDS + 2) * 2 * 60 : 0) + (doOtlp ? (ROUNDS * 3 + 6) * (SECONDS + WARMUP + 20) : 0));
  const m = machine();
  const runnerHash = (await import('node:crypto')).createHash('sha256').update(readFileSync(RUNNER)).digest('hex').slice(0, 12);
  log(`machine: nproc=${m.nproc} ${m.cpu}, node ${m.node}; load average ${m.loadavg1}; dist/svc-runner.mjs ${runnerHash}`);
  const scan = doScan ? await scanBench() : null;
  const otlp = doOtlp ? await otlpBench() : null;
  const loadEnd = round(os.loadavg()[0], 2);

  const cell = (s, d = 0) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;
  console.log(`usage: commit ${m.commit}, dist/svc-runner.mjs ${runnerHash}; nproc=${m.nproc} node=${m.node} ${m.cpu}; load average ${m.loadavg1} at start, ${loadEnd} at end`);
  if (scan) {
    const g = scan.generated;
    console.log(`\ntranscript scan: ${g.mb} MiB (${g.bytes} bytes) in ${g.files} files (${g.claudeFiles} Claude sessions + ${g.subagentFiles} subagent files, ${g.codexFiles} Codex rollouts; ${g.lines} lines, ${g.claudeRequests} Claude API calls, ${g.codexTokenCounts} Codex token counts); ${ROUNDS} round(s), median (range); peak RSS from ${scan.peakFrom}`);
    console.log(
      table([
        ['command', 'MiB/s', 'seconds', 'CPU seconds', 'peak RSS MiB'],
        ['svc-runner usage daily --json', cell(scan.summary.ours.mbPerSecond, 1), cell(scan.summary.ours.seconds, 2), cell(scan.summary.ours.cpuSeconds, 2), cell(scan.summary.ours.maxRssMiB, 1)],
        [`ccusage ${scan.ccusage.version} daily --json --offline`, cell(scan.summary.ccusage.mbPerSecond, 1), cell(scan.summary.ccusage.seconds, 2), cell(scan.summary.ccusage.cpuSeconds, 2), cell(scan.summary.ccusage.maxRssMiB, 1)],
        ['svc-runner ÷ ccusage (MiB/s, MiB per CPU s; goal ≥ 1)', cell(scan.summary.ratio, 3), '', cell(scan.summary.cpuRatio, 3), cell(scan.summary.rssRatio, 2)],
        ['svc-runner usage daily --json, second run (index)', '', cell(scan.summary.indexed.seconds, 3), cell(scan.summary.indexed.cpuSeconds, 2), cell(scan.summary.indexed.maxRssMiB, 1)],
        ['  … after 1 MiB appended', '', cell(scan.summary.appended.seconds, 3), cell(scan.summary.appended.cpuSeconds, 2), cell(scan.summary.appended.maxRssMiB, 1)],
        ['ccusage seconds ÷ second run, ÷ after append (goal ≥ 2)', '', `${cell(scan.summary.indexedSpeedup, 2)}, ${cell(scan.summary.appendedSpeedup, 2)}`, '', ''],
        ['minimal Node: read and split lines (usage-floor read)', cell(scan.summary.floorRead.mbPerSecond, 1), cell(scan.summary.floorRead.seconds, 2), cell(scan.summary.floorRead.cpuSeconds, 2), cell(scan.summary.floorRead.maxRssMiB, 1)],
        ['minimal Node: + JSON.parse of usage lines (… parse)', cell(scan.summary.floorParse.mbPerSecond, 1), cell(scan.summary.floorParse.seconds, 2), cell(scan.summary.floorParse.cpuSeconds, 2), cell(scan.summary.floorParse.maxRssMiB, 1)],
        ['minimal Node (parse) ÷ ccusage', cell(scan.summary.floorRatio, 3), '', '', ''],
        ['svc-runner ÷ minimal Node (parse)', cell(scan.summary.oursOverFloor, 3), '', '', ''],
        ...(scan.summary.also
          ? [
              [`${scan.summary.also.bundle} usage daily --json`, cell(scan.summary.also.mbPerSecond, 1), cell(scan.summary.also.seconds, 2), cell(scan.summary.also.cpuSeconds, 2), cell(scan.summary.also.maxRssMiB, 1)],
              [`  ÷ ccusage`, cell(scan.summary.alsoRatio, 3), '', cell(scan.summary.alsoCpuRatio, 3), ''],
            ]
          : []),
      ]),
    );
    console.log(`after the appends: indexed run = full scan byte for byte: ${scan.afterSanity.indexedEqualsFull ? 'yes' : 'NO'}; ${scan.afterSanity.differingRows} of ${scan.afterSanity.rows} rows differ from ccusage`);
    const s = scan.sanity;
    console.log(`same totals: ${s.differingRows === 0 && s.rows === s.ccusageRows ? 'yes' : 'NO'} — ${s.rows} day×model rows (ccusage ${s.ccusageRows}), ${s.differingRows} differing; tokens in ${s.tokens.input} out ${s.tokens.output} cache write ${s.tokens.cacheWrite} cache read ${s.tokens.cacheRead}; cost $${s.costUSD} vs ccusage $${s.ccusageCostUSD} (relative difference ${s.costRelDiff})`);
    if (scan.profile) {
      console.log(`\nprofile of svc-runner usage daily --json (${scan.profile.seconds} s under --cpu-prof, ${fmt(scan.profile.samplesMs / 1000, 2)} s of samples):`);
      console.log(table([['self %', 'self ms', 'function', 'where'], ...scan.profile.top.map((t) => [fmt(t.percent, 1), fmt(t.selfMs, 0), t.fn, t.where])]));
      if (scan.profile.worker) {
        console.log(`\nits worker thread (${fmt(scan.profile.worker.samplesMs / 1000, 2)} s of samples):`);
        console.log(table([['self %', 'self ms', 'function', 'where'], ...scan.profile.worker.top.map((t) => [fmt(t.percent, 1), fmt(t.selfMs, 0), t.fn, t.where])]));
      }
    }
  }
  if (otlp) {
    console.log(`\nOTLP POST /v1/logs: protobuf bodies of ${otlp.recordsPerBody} api_request records (${otlp.bodyBytes} B), ${otlp.connections} keep-alive connections, ${otlp.seconds} s per pass, ${ROUNDS} round(s), median (range); spool on ${otlp.spoolFilesystem}`);
    console.log(
      table([
        ['target', 'records/s', 'p50 ms', 'p99 ms'],
        ['bare node:http, reads the body (baseline)', cell(otlp.summary.bare.recordsPerSecond), cell(otlp.summary.bare.p50Ms, 2), cell(otlp.summary.bare.p99Ms, 2)],
        ['receiver + spool (as the daemon)', cell(otlp.summary.spool.recordsPerSecond), cell(otlp.summary.spool.p50Ms, 2), cell(otlp.summary.spool.p99Ms, 2)],
        ['receiver, decode and map only', cell(otlp.summary.decode.recordsPerSecond), cell(otlp.summary.decode.p50Ms, 2), cell(otlp.summary.decode.p99Ms, 2)],
      ]),
    );
    console.log(`receiver + spool ÷ bare: ${cell(otlp.summary.spoolOverBare, 3)}; decode only ÷ bare: ${cell(otlp.summary.decodeOverBare, 3)}; bodies per spool write (fsync): ${cell(otlp.summary.spool.bodiesPerWrite, 2)}; every accepted record spooled once: ${otlp.summary.spooledEqualsAccepted ? 'yes' : 'NO'}; WARN/ERROR lines: ${otlp.problems.length}`);
  }
  console.log(JSON.stringify({ bench: 'usage', command: ['node --import tsx bench/usage.mjs', ...process.argv.slice(2)].join(' '), machine: m, runner: runnerHash, loadavg1End: loadEnd, scan, otlp }));
}

await main();
