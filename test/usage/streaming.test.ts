// A 200 MB transcript is read in bounded memory (issue #14 "Bad input and faults"): the runner bundle's
// `usage daily --json` over it peaks under 150 MB RSS, measured in the child process itself.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BUNDLE, sandbox } from '../runner/_harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-usage-big-'));
const sb = sandbox();
test.after(() => {
  rmSync(dir, { recursive: true, force: true });
  sb.cleanup();
});

const SIZE = 200 * 1024 * 1024;

/** Writes ~200 MB: per request a user line with a large tool result and an assistant line with usage. */
async function generate(file: string): Promise<number> {
  const out = createWriteStream(file);
  const filler = 'x'.repeat(7_000);
  let written = 0, requests = 0;
  while (written < SIZE) {
    const ts = new Date(Date.UTC(2026, 0, 20) + requests * 1000).toISOString();
    const userLine = JSON.stringify({ type: 'user', sessionId: 's-big', version: '2.1.12', cwd: '/big', timestamp: ts, message: { role: 'user', content: [{ type: 'tool_result', content: filler }] } });
    const asst = JSON.stringify({ type: 'assistant', sessionId: 's-big', version: '2.1.12', cwd: '/big', gitBranch: 'main', timestamp: ts, requestId: `req_${requests}`, uuid: `u${requests}`, message: { id: `msg_${requests}`, model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: filler.slice(0, 500) }], usage: { input_tokens: 3, output_tokens: 10, cache_read_input_tokens: 1000, cache_creation_input_tokens: 100 } } });
    const chunk = `${userLine}\n${asst}\n`;
    written += Buffer.byteLength(chunk);
    requests++;
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return requests;
}

test('usage daily over a 200 MB transcript: every request counted, peak RSS under 150 MB', async () => {
  const config = join(dir, 'claude');
  mkdirSync(join(config, 'projects', '-big'), { recursive: true });
  const file = join(config, 'projects', '-big', 's-big.jsonl');
  const requests = await generate(file);
  assert.ok(statSync(file).size >= SIZE);
  const probe = join(dir, 'rss.mjs');
  writeFileSync(probe, "process.on('exit', () => process.stderr.write(`maxRSS_KB=${process.resourceUsage().maxRSS}\\n`));\n");
  const child = spawn(process.execPath, ['--import', probe, BUNDLE, 'usage', 'daily', '--json', '--tz', 'UTC'], { env: { ...sb.env, CLAUDE_CONFIG_DIR: config, CODEX_HOME: join(dir, 'none') }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '', stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = await once(child, 'close');
  assert.is(code, 0, stderr);
  const days = JSON.parse(stdout).days;
  assert.is(days.reduce((a: number, d: any) => a + d.outputTokens, 0), requests * 10);
  const kb = Number(/maxRSS_KB=(\d+)/.exec(stderr)?.[1]);
  assert.ok(kb > 0 && kb < 150 * 1024, `peak RSS ${Math.round(kb / 1024)} MB`);
});

test.run();
