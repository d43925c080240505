// Derives the prices ccusage (pinned dev dependency) uses offline, by running it on generated transcripts with
// known token counts, one session per (model, term). Prints USD per million tokens as JSON. Used to seed
// protocol/prices.ts DEFAULT_PRICES (docs/cost.md). Run: node scripts/probe-ccusage-prices.mjs
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLI = new URL('../node_modules/ccusage/src/cli.js', import.meta.url).pathname;
const claudeModels = process.argv[2]?.split(',') ?? [
  'claude-opus-4-8', 'claude-opus-4-7', 'claude-opus-4-6', 'claude-opus-4-5', 'claude-opus-4-1', 'claude-opus-4',
  'claude-sonnet-4-6', 'claude-sonnet-4-5', 'claude-sonnet-4', 'claude-haiku-4-5', 'claude-3-7-sonnet', 'claude-3-5-sonnet', 'claude-3-5-haiku',
  'claude-3-opus', 'claude-3-haiku',
];
const codexModels = process.argv[3]?.split(',') ?? [
  'gpt-5', 'gpt-5-codex', 'gpt-5-mini', 'gpt-5-nano', 'gpt-5.1', 'gpt-5.1-codex', 'gpt-5.1-codex-max', 'gpt-5.1-codex-mini',
  'gpt-5.2', 'gpt-5.2-codex', 'gpt-5.3-codex', 'gpt-5.4', 'gpt-5.5', 'codex-mini-latest', 'o3', 'o4-mini', 'gpt-4.1',
];
const root = mkdtempSync(join(tmpdir(), 'ccprobe-'));
const run = (args, env) => JSON.parse(execFileSync(process.execPath, [CLI, ...args, '--json', '--offline'], { env: { PATH: process.env.PATH, HOME: root, TZ: 'UTC', ...env }, encoding: 'utf8' }));
const N = 100_000, BIG = 1_200_000;

// Claude: one file per probe.
const cdir = join(root, 'claude', 'projects', 'p');
mkdirSync(cdir, { recursive: true });
const zero = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 } };
const terms = {
  input: (n) => ({ ...zero, input_tokens: n }),
  output: (n) => ({ ...zero, output_tokens: n }),
  cacheWrite5m: (n) => ({ ...zero, cache_creation_input_tokens: n, cache_creation: { ephemeral_5m_input_tokens: n, ephemeral_1h_input_tokens: 0 } }),
  cacheWrite1h: (n) => ({ ...zero, cache_creation_input_tokens: n, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: n } }),
  cacheRead: (n) => ({ ...zero, cache_read_input_tokens: n }),
};
let i = 0;
for (const model of claudeModels) {
  const probes = [];
  for (const [term, usage] of Object.entries(terms)) {
    probes.push([`${term}.base`, usage(N)], [`${term}.big`, usage(BIG)]);
  }
  probes.push(['fast', { ...terms.input(N), speed: 'fast' }]);
  for (const [name, usage] of probes) {
    i++;
    const line = { type: 'assistant', sessionId: `s${i}`, version: '2.1.12', timestamp: '2026-01-20T12:00:00.000Z', requestId: `req_${i}`, message: { model, id: `msg_${i}`, usage } };
    writeFileSync(join(cdir, `${model}~${name}.jsonl`), JSON.stringify(line) + '\n');
  }
}
const out = { claude: {}, codex: {} };
for (const s of run(['claude', 'session', '--mode', 'calculate'], { CLAUDE_CONFIG_DIR: join(root, 'claude') }).sessions) {
  const [model, name] = s.sessionId.split('~');
  (out.claude[model] ??= {})[name] = s.totalCost;
}
const perM = (x, n) => Math.round((x / n) * 1e6 * 1e6) / 1e6;
const claudeOut = {};
for (const [model, c] of Object.entries(out.claude)) {
  const p = { model };
  for (const term of Object.keys(terms)) {
    p[term] = perM(c[`${term}.base`], N);
    const above = perM(c[`${term}.big`] - (200_000 * p[term]) / 1e6, BIG - 200_000);
    if (Math.abs(above - p[term]) > 1e-9) (p.above200k ??= {})[term] = above;
  }
  p.fastMultiplier = c['input.base'] ? Math.round((c.fast / c['input.base']) * 1e6) / 1e6 : null;
  claudeOut[model] = p;
}

// Codex: one rollout per probe, priced per session.
const xdir = join(root, 'codex', 'sessions', '2026', '01', '20');
mkdirSync(xdir, { recursive: true });
const cterms = { input: [N, 0, 0], cacheRead: [N, N, 0], output: [0, 0, N], inputBig: [BIG, 0, 0], cacheReadBig: [BIG, BIG, 0], outputBig: [0, 0, BIG] };
for (const model of codexModels) {
  for (const [name, [inp, cached, output]] of Object.entries(cterms)) {
    const u = { input_tokens: inp, cached_input_tokens: cached, output_tokens: output, reasoning_output_tokens: 0, total_tokens: inp + output };
    const lines = [
      { timestamp: '2026-01-20T12:00:00.000Z', type: 'turn_context', payload: { cwd: '/w', model } },
      { timestamp: '2026-01-20T12:00:01.000Z', type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: u, last_token_usage: u } } },
    ];
    writeFileSync(join(xdir, `${model}~${name}.jsonl`), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  }
}
const codexCost = (speed) => {
  const r = {};
  for (const s of run(['codex', 'session', '--speed', speed], { CODEX_HOME: join(root, 'codex') }).sessions) {
    const [model, name] = s.sessionId.split('/').pop().split('~');
    (r[model] ??= {})[name] = s.costUSD;
  }
  return r;
};
const std = codexCost('standard'), fast = codexCost('fast');
const codexOut = {};
for (const [model, c] of Object.entries(std)) {
  const input = perM(c.input, N), cacheRead = perM(c.cacheRead, N), output = perM(c.output, N);
  const p = { model, input, output, cacheWrite5m: 0, cacheWrite1h: 0, cacheRead };
  for (const [term, base] of [['input', input], ['cacheRead', cacheRead], ['output', output]]) {
    const above = perM(c[`${term}Big`] - (200_000 * base) / 1e6, BIG - 200_000);
    if (Math.abs(above - base) > 1e-9) (p.above200k ??= {})[term] = above;
  }
  p.fastMultiplier = c.input ? Math.round((fast[model].input / c.input) * 1e6) / 1e6 : null;
  codexOut[model] = p;
}
console.log(JSON.stringify({ claude: claudeOut, codex: codexOut }, null, 1));
rmSync(root, { recursive: true, force: true });
