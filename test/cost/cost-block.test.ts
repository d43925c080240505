// The cost block in a pull request's description (docs/cost.md): only the text between the markers is
// rewritten; the rest of the description stays byte for byte; absent (or deleted) → appended after a blank
// line; CRLF descriptions keep CRLF; a null or empty description gets the block alone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COST_BLOCK_END, COST_BLOCK_START, costBlockText, rewriteCostBlock } from '../../protocol/cost-block.ts';

const T = 'This pull request cost $4.10 over 3 agent sessions.';

test('costBlockText: cost, sessions, models sorted once, tokens summed by kind', () => {
  const t = costBlockText({ costUsd: 4.1, sessions: 3, models: ['gpt-5', 'claude-sonnet-4-5', 'gpt-5'], inputTokens: 12345, outputTokens: 678, cacheWriteTokens: 10, cacheReadTokens: 2000 });
  assert.equal(t, 'This pull request cost $4.10 over 3 agent sessions (models claude-sonnet-4-5, gpt-5; tokens 12,345 input, 678 output, 10 cache write, 2,000 cache read).');
  assert.match(costBlockText({ costUsd: 0, sessions: 1, models: ['m'], inputTokens: 0, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0 }), /over 1 agent session \(model m;/);
});

test('absent: appended after a blank line, the rest untouched', () => {
  const d = '## Summary\n\nFixes #7.\n';
  const r = rewriteCostBlock(d, T);
  assert.ok(r.startsWith(d));
  assert.is(r, `${d}\n${COST_BLOCK_START}\n${T}\n${COST_BLOCK_END}\n`);
  assert.is(rewriteCostBlock('no newline', T), `no newline\n\n${COST_BLOCK_START}\n${T}\n${COST_BLOCK_END}\n`);
});

test('present: only the text between the markers changes; idempotent', () => {
  const before = 'Intro  \n\n';
  const after = '\n\ntrailing text <b>kept</b>\n  \n';
  const d = `${before}${COST_BLOCK_START}\nold text\nmore old\n${COST_BLOCK_END}${after}`;
  const r = rewriteCostBlock(d, T);
  assert.is(r, `${before}${COST_BLOCK_START}\n${T}\n${COST_BLOCK_END}${after}`);
  assert.is(rewriteCostBlock(r, T), r);
});

test('CRLF: the block takes CRLF, the rest untouched', () => {
  const d = 'a\r\nb\r\n';
  const r = rewriteCostBlock(d, T);
  assert.is(r, `a\r\nb\r\n\r\n${COST_BLOCK_START}\r\n${T}\r\n${COST_BLOCK_END}\r\n`);
  const again = rewriteCostBlock(r.replace(T, 'x'), T);
  assert.is(again, r);
});

test('null or empty description: the block alone', () => {
  const only = `${COST_BLOCK_START}\n${T}\n${COST_BLOCK_END}`;
  assert.is(rewriteCostBlock(null, T), only);
  assert.is(rewriteCostBlock(undefined, T), only);
  assert.is(rewriteCostBlock('', T), only);
});

test('a start marker without its end: treated as absent, appended (nothing of the person\'s text removed)', () => {
  const d = `x\n${COST_BLOCK_START}\nhalf\n`;
  const r = rewriteCostBlock(d, T);
  assert.ok(r.startsWith(d));
  assert.ok(r.endsWith(`${COST_BLOCK_START}\n${T}\n${COST_BLOCK_END}\n`));
  assert.is(rewriteCostBlock(r, 'new'), r.replace(T, 'new'));
});

test.run();
