// Accuracy against the reference tool (issue #14 item 5, docs/cost.md): on generated transcripts of both
// runtimes with every counting trap, the runner bundle's `usage daily --json` must give ccusage 20.0.20's
// token counts exactly, per day, runtime and model, and its cost within 0.5 %.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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

async function ours(tz: string) {
  const r = await runCli(sb, ['usage', 'daily', '--json', '--tz', tz], env);
  assert.is(r.status, 0, r.stderr);
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

test('the fixtures exercise what they claim: fast, above-200k, unknown model, gpt-5 fallback, several days', async () => {
  const got = await ours('UTC');
  const models = new Set(got.days.map((d) => d.model));
  for (const m of ['claude-opus-4-6-fast', 'claude-sonnet-4-5-20250929', 'claude-unknown-9', 'gpt-5', 'gpt-5.4', 'gpt-5.1-codex-max']) assert.ok(models.has(m), m);
  assert.is(got.claude.get('2026-01-22 claude-unknown-9')!.costUSD, null);
  assert.ok(new Set(got.days.map((d) => d.date)).size >= 4);
});

test.run();
