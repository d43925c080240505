// The pieces of terminal.attach that need no tmux: decoding control mode's `%output` escapes, and the
// size bounds of the term.* frames.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_TERM_DATA, parseFrame, runnerFrame, serverFrame } from '../../protocol/frames.ts';
import { decodeOutput } from '../../runner/terminal.ts';

test('decodeOutput: octal escapes become bytes, everything else passes as latin1 bytes', () => {
  assert.equal([...decodeOutput('a\\015\\012b')], [0x61, 13, 10, 0x62]);
  assert.is(decodeOutput('\\134x').toString(), '\\x');
  assert.is(decodeOutput('\\033[31mred').toString(), '\x1b[31mred');
  // UTF-8 read as latin1 (one char per byte) comes back as the same bytes.
  assert.is(decodeOutput(Buffer.from('café ✓', 'utf8').toString('latin1')).toString('utf8'), 'café ✓');
  // A backslash not followed by three octal digits is itself.
  assert.is(decodeOutput('a\\9b\\01').toString(), 'a\\9b\\01');
});

test('term.* frames: channel shape and data size bounded', () => {
  const channel = 'abcdefgh12';
  const ok = (schema: typeof runnerFrame | typeof serverFrame, frame: object) => !('invalid' in (parseFrame(schema, JSON.stringify(frame)) as object));
  assert.ok(ok(runnerFrame, { type: 'term.output', channel, data: 'x'.repeat(MAX_TERM_DATA) }));
  assert.not.ok(ok(runnerFrame, { type: 'term.output', channel, data: 'x'.repeat(MAX_TERM_DATA + 1) }));
  assert.not.ok(ok(runnerFrame, { type: 'term.output', channel: 'short', data: 'x' }));
  assert.ok(ok(runnerFrame, { type: 'term.exit', channel, reason: 'detached' }));
  assert.ok(ok(serverFrame, { type: 'term.input', channel, data: 'ls\r' }));
  assert.not.ok(ok(serverFrame, { type: 'term.input', channel, data: '' }));
  assert.ok(ok(serverFrame, { type: 'term.resize', channel, cols: 80, rows: 24 }));
  assert.not.ok(ok(serverFrame, { type: 'term.resize', channel, cols: 80, rows: 100_000 }));
  assert.ok(ok(serverFrame, { type: 'term.close', channel }));
  assert.not.ok(ok(serverFrame, { type: 'term.close', channel, extra: 1 }));
});

test.run();
