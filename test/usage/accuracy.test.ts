// Accuracy against the reference tool (issue #14 item 5, docs/cost.md): on generated transcripts of both
// runtimes with every counting trap, the runner bundle's `usage daily --json` must give ccusage 20.0.20's
// token counts exactly, per day, runtime and model, and its cost within 0.5 %. Both paths: a full scan and a
// run from the usage index (runner/usage/scan-index.ts) must print the same.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, runCli, sandbox } from '../runner/_harness.ts';
import { writeFixtures } from './_fixtures.ts';

const CCUSAGE = join(ROOT, 'node_modules', 'ccusage', 'src', 'cli.js');
const dir = mkdtempSync(join(tmpdir(), 'svc-usage-acc-'));
const fx = writeFixtures(dir);
const sb = sandbox();
const env = { HOME: fx.home, CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome };
test.after(() => {
  rmSync(dir, { recursive: true, force: true });
  sb.cleanup();
});

interface Row { inputTokens: number; outputTokens: number; cacheCreationTokens: number; cacheReadTokens: number; cost: number }

function ccusage(args: string[]): any {
  const r = spawnSync(process.execPath, [CCUSAGE, ...args, '--json', '--offline'], {
    env: { PATH: process.env.PATH, XDG_CONFIG_HOME: join(fx.home, '.config'), TZ: 'UTC', ...env },
    encoding: 'utf8',
  });
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** ccusage's rows: Claude per day and model (breakdowns); Codex per day and model (tokens) and per day (cost). */
function reference(tz: string) {
  const claude = new Map<string, Row>();
  for (const d of ccusage(['claude', 'daily', '--timezone', tz]).daily) {
    for (const b of d.modelBreakdowns) claude.set(`${d.date} ${b.modelName}`, { inputTokens: b.inputTokens, outputTokens: b.outputTokens, cacheCreationTokens: b.cacheCreationTokens, cacheReadTokens: b.cacheReadTokens, cost: b.cost });
  }
  const codex = new Map<string, Row>();
  const codexDayCost = new Map<string, number>();
  for (const d of ccusage(['codex', 'daily', '--timezone', tz]).daily) {
    codexDayCost.set(d.date, d.costUSD);
    for (const [model, m] of Object.entries<any>(d.models)) codex.set(`${d.date} ${model}`, { inputTokens: m.inputTokens, outputTokens: m.outputTokens, cacheCreationTokens: m.cacheCreationTokens, cacheReadTokens: m.cacheReadTokens, cost: NaN });
  }
  return { claude, codex, codexDayCost };
}

/** Both paths: a full scan (--rescan, which writes the index) and then a run from the index, which must print the same bytes. */
async function ours(tz: string) {
  const r = await runCli(sb, ['usage', 'daily', '--json', '--tz', tz, '--rescan'], { ...env, SVC_USAGE_STATS: '1' });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /"mode":"full","reason":"--rescan"/);
  const indexed = await runCli(sb, ['usage', 'daily', '--json', '--tz', tz], { ...env, SVC_USAGE_STATS: '1' });
  assert.is(indexed.status, 0, indexed.stderr);
  const stats = JSON.parse(indexed.stderr.split('\n').find((l) => l.startsWith('{"usageIndex"'))!).usageIndex;
  assert.equal({ mode: stats.mode, whole: stats.whole, appended: stats.appended, written: stats.written }, { mode: 'indexed', whole: 0, appended: 0, written: false }, 'the second run reads no transcript');
  assert.ok(stats.reused > 5, 'files taken from the index');
  assert.is(indexed.stdout, r.stdout, 'indexed = full scan, byte for byte');
  assert.ok(stats.output, 'no file changed, the same arguments: the stored report');
  // Without the stored report: the stored requests; without those too: the lines from the index, deduplicated again.
  const state = join(sb.env.XDG_STATE_HOME, 'svc');
  rmSync(join(state, 'usage-index.output.json'));
  const fromRows = await runCli(sb, ['usage', 'daily', '--json', '--tz', tz], { ...env, SVC_USAGE_STATS: '1' });
  assert.match(fromRows.stderr, /"mode":"indexed".*"whole":0.*"result":true/);
  assert.is(fromRows.stdout, r.stdout, 'from the stored requests = full scan, byte for byte');
  rmSync(join(state, 'usage-index.output.json'));
  rmSync(join(state, 'usage-index.result.json'));
  const fromLines = await runCli(sb, ['usage', 'daily', '--json', '--tz', tz], { ...env, SVC_USAGE_STATS: '1' });
  assert.match(fromLines.stderr, /"mode":"indexed".*"whole":0.*"result":false/);
  assert.is(fromLines.stdout, r.stdout, 'from the index lines = full scan, byte for byte');
  // An append: each Claude transcript's last line taken off, the index written (full scan), the line put back.
  // New message ids are merged into the stored requests without the full dedup, a known one takes the full
  // path: either way the bytes of the full scan (which the tests compare with ccusage).
  let merged = 0;
  const claudeFiles = fx.claudeConfigDir.split(',').flatMap((d) => (readdirSync(d, { recursive: true }) as string[]).filter((f) => f.endsWith('.jsonl')).map((f) => join(d, f)));
  for (const file of claudeFiles) {
    const text = readFileSync(file, 'utf8');
    const cut = text.lastIndexOf('\n', text.length - 2) + 1;
    if (cut <= 0) continue;
    writeFileSync(file, text.slice(0, cut));
    assert.is((await runCli(sb, ['usage', 'daily', '--json', '--tz', tz, '--rescan'], env)).status, 0);
    writeFileSync(file, text.slice(cut), { flag: 'a' });
    const appended = await runCli(sb, ['usage', 'daily', '--json', '--tz', tz], { ...env, SVC_USAGE_STATS: '1' });
    if (/"merged":true/.test(appended.stderr)) merged++;
    assert.is(appended.stdout, r.stdout, `after an append to ${file} (${appended.stderr.trim()}) = full scan, byte for byte`);
  }
  assert.ok(merged > 0, 'some appends merged');
  const days: any[] = JSON.parse(r.stdout).days;
  const by = (rt: string) => new Map(days.filter((d) => d.runtime === rt).map((d) => [`${d.date} ${d.model}`, d]));
  return { claude: by('claude'), codex: by('codex'), days };
}

const close = (a: number, b: number) => Math.abs(a - b) <= 0.005 * Math.max(Math.abs(a), Math.abs(b)) + 1e-12;
const tokens = (r: any) => ({ inputTokens: r.inputTokens, outputTokens: r.outputTokens, cacheCreationTokens: r.cacheCreationTokens, cacheReadTokens: r.cacheReadTokens });

for (const tz of ['UTC', 'America/New_York', 'Asia/Tokyo']) {
  test(`usage daily --json equals ccusage per day, runtime and model (--tz ${tz})`, async () => {
    const ref = reference(tz);
    const got = await ours(tz);
    // Claude: the same rows, the same tokens, the same cost (a model ccusage cannot price: ours is null).
    assert.equal([...got.claude.keys()].sort(), [...ref.claude.keys()].sort(), 'claude rows');
    for (const [key, want] of ref.claude) {
      const row = got.claude.get(key)!;
      assert.equal(tokens(row), tokens(want), `claude ${key} tokens`);
      if (row.costUSD === null) assert.is(want.cost, 0, `claude ${key}: unpriced here, priced by ccusage`);
      else assert.ok(close(row.costUSD, want.cost), `claude ${key} cost ${row.costUSD} vs ${want.cost}`);
    }
    assert.equal([...got.codex.keys()].sort(), [...ref.codex.keys()].sort(), 'codex rows');
    for (const [key, want] of ref.codex) assert.equal(tokens(got.codex.get(key)), tokens(want), `codex ${key} tokens`);
    for (const [date, want] of ref.codexDayCost) {
      const sum = got.days.filter((d) => d.runtime === 'codex' && d.date === date).reduce((a, d) => a + d.costUSD, 0);
      assert.ok(close(sum, want), `codex ${date} cost ${sum} vs ${want}`);
    }
  });
}

test('Codex fast mode: a config.toml asking for the priority tier prices every rollout of that home as ccusage does', async () => {
  const fastHome = join(dir, 'codex-fast');
  cpSync(fx.codexHome, fastHome, { recursive: true });
  writeFileSync(join(fastHome, 'config.toml'), 'model = "gpt-5.4"\n# service_tier = "flex"\nservice_tier = \'priority\'  # the fast tier\n');
  const fastEnv = { ...env, CODEX_HOME: fastHome };
  const want = new Map<string, number>();
  const r = spawnSync(process.execPath, [CCUSAGE, 'codex', 'daily', '--json', '--offline', '--timezone', 'UTC'], { env: { PATH: process.env.PATH, TZ: 'UTC', ...fastEnv }, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  for (const d of JSON.parse(r.stdout).daily) want.set(d.date, d.costUSD);
  const fast = await runCli(sb, ['usage', 'daily', '--json', '--tz', 'UTC', '--runtime', 'codex'], fastEnv);
  assert.is(fast.status, 0, fast.stderr);
  const standard = (await ours('UTC')).days.filter((d) => d.runtime === 'codex');
  const days: any[] = JSON.parse(fast.stdout).days;
  assert.equal(days.map(tokens), standard.map(tokens), 'the same tokens');
  let fastDays = 0;
  for (const [date, cost] of want) {
    const sum = days.filter((d) => d.date === date).reduce((a, d) => a + d.costUSD, 0);
    const base = standard.filter((d) => d.date === date).reduce((a, d) => a + d.costUSD, 0);
    assert.ok(close(sum, cost), `codex ${date} fast cost ${sum} vs ccusage ${cost}`);
    fastDays += sum > base * 1.5 ? 1 : 0;
  }
  // gpt-5.4 has a multiplier (2×) in ccusage 20.0.20's table; the other models have none, so they cost the same.
  assert.is(fastDays, 1, 'one day (gpt-5.4) costs more in the fast tier');
  writeFileSync(join(fastHome, 'config.toml'), 'service_tier = "breakfast"\nservice_tier_override = "fast"\n');
  const off = await runCli(sb, ['usage', 'daily', '--json', '--tz', 'UTC', '--runtime', 'codex'], fastEnv);
  assert.equal(JSON.parse(off.stdout).days, standard, 'no priority tier asked: standard prices');
});

test("usage session --json follows ccusage's session report: per session the same tokens, --since by the last activity", async () => {
  let whole: ReturnType<typeof tokens> | undefined;
  for (const since of [undefined, '2026-01-21', '2026-01-22']) {
    const flags = since ? ['--since', since.replaceAll('-', '')] : [];
    const want = new Map<string, ReturnType<typeof tokens>>();
    for (const r of ccusage(['claude', 'session', '--timezone', 'UTC', ...flags]).sessions) want.set(`claude ${r.sessionId}`, tokens(r));
    for (const r of ccusage(['codex', 'session', '--timezone', 'UTC', ...flags]).sessions) want.set(`codex ${r.sessionId.split('-').slice(-5).join('-')}`, tokens(r));
    const r = await runCli(sb, ['usage', 'session', '--json', '--tz', 'UTC', ...(since ? ['--since', since] : [])], env);
    assert.is(r.status, 0, r.stderr);
    const got = new Map<string, ReturnType<typeof tokens>>(JSON.parse(r.stdout).sessions.map((s: any) => [`${s.runtime} ${s.sessionId}`, tokens(s)]));
    assert.equal([...got.keys()].sort(), [...want.keys()].sort(), `sessions (since ${since})`);
    for (const [k, w] of want) assert.equal(got.get(k), w, `${k} (since ${since})`);
    // A Claude session last active on the 21st keeps its requests of the 20th (daily would drop them).
    if (!since) whole = got.get('claude 11111111-1111-4111-8111-111111111111');
    if (since === '2026-01-21') assert.equal(got.get('claude 11111111-1111-4111-8111-111111111111'), whole, 'whole session kept');
    if (since === '2026-01-22') assert.not.ok(got.has('claude 11111111-1111-4111-8111-111111111111'), 'last active before --since: dropped whole');
  }
});

test('two threads (SVC_USAGE_WORKER_BYTES=0 forces the worker on these small files) give the same output byte for byte', async () => {
  for (const args of [['daily', '--json', '--tz', 'Asia/Tokyo'], ['monthly', '--json'], ['session', '--json', '--since', '2026-01-21'], ['daily']]) {
    const one = await runCli(sb, ['usage', ...args, '--rescan'], env);
    const two = await runCli(sb, ['usage', ...args, '--rescan'], { ...env, SVC_USAGE_WORKER_BYTES: '0' });
    assert.is(one.status, 0, one.stderr);
    assert.is(two.status, 0, two.stderr);
    assert.is(two.stdout, one.stdout, args.join(' '));
    assert.is(two.stderr, one.stderr, 'the same corrupt-line count');
  }
});

test('the fixtures exercise what they claim: fast, above-200k, unknown model, gpt-5 fallback, several days', async () => {
  const got = await ours('UTC');
  const models = new Set(got.days.map((d) => d.model));
  for (const m of ['claude-opus-4-6-fast', 'claude-sonnet-4-5-20250929', 'claude-unknown-9', 'gpt-5', 'gpt-5.4', 'gpt-5.1-codex-max']) assert.ok(models.has(m), m);
  assert.is(got.claude.get('2026-01-22 claude-unknown-9')!.costUSD, null);
  assert.ok(new Set(got.days.map((d) => d.date)).size >= 4);
});

test.run();
