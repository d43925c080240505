// `svc-runner usage` flags and outputs (docs/runner.md "Usage"): wrong flags are exit 2 naming the flag;
// monthly and session JSON shapes; --since/--until/--runtime filter; the table without --json.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli, sandbox } from '../runner/_harness.ts';
import { writeFixtures } from './_fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-usage-cli-'));
const fx = writeFixtures(dir);
const sb = sandbox();
const env = { HOME: fx.home, CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome };
test.after(() => (rmSync(dir, { recursive: true, force: true }), sb.cleanup()));

test('bad flags: exit 2 with a message naming the flag', async () => {
  for (const [args, flag] of [
    [['usage', 'weekly'], 'weekly'],
    [['usage', 'daily', '--since', '2026-13-01'], '--since'],
    [['usage', 'daily', '--until', 'yesterday'], '--until'],
    [['usage', 'daily', '--tz', 'Mars/Base'], '--tz'],
    [['usage', 'daily', '--runtime', 'no-such-runtime'], '--runtime'],
    [['usage', 'daily', '--colour'], '--colour'],
    [['usage'], 'usage'],
  ] as const) {
    const r = await runCli(sb, [...args], env);
    assert.is(r.status, 2, args.join(' '));
    assert.ok(r.stderr.includes(flag), `${args.join(' ')}: ${r.stderr.split('\n')[0]}`);
  }
});

test('monthly, session, filters and the table', async () => {
  const m = JSON.parse((await runCli(sb, ['usage', 'monthly', '--json', '--tz', 'UTC'], env)).stdout);
  assert.ok(m.months.every((r: any) => r.month === '2026-01' && typeof r.inputTokens === 'number' && 'costUSD' in r));
  const d = JSON.parse((await runCli(sb, ['usage', 'daily', '--json', '--tz', 'UTC', '--since', '2026-01-21', '--until', '2026-01-21', '--runtime', 'codex'], env)).stdout);
  assert.equal(d.days.map((r: any) => [r.date, r.runtime, r.model]), [['2026-01-21', 'codex', 'gpt-5.1-codex-max']]);
  assert.equal(Object.keys(d.days[0]), ['date', 'runtime', 'model', 'inputTokens', 'outputTokens', 'cacheCreationTokens', 'cacheReadTokens', 'costUSD']);
  const s = JSON.parse((await runCli(sb, ['usage', 'session', '--json', '--runtime', 'claude'], env)).stdout);
  const s1 = s.sessions.find((r: any) => r.sessionId === '11111111-1111-4111-8111-111111111111');
  assert.ok(s1 && s1.project === '/work/app' && s1.firstAt < s1.lastAt);
  const t = await runCli(sb, ['usage', 'daily'], env);
  assert.is(t.status, 0);
  assert.match(t.stdout, /^Date +Runtime +Model/);
  assert.match(t.stderr, /skipped \d+ corrupt transcript line/);
});

test.run();
