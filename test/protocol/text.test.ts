// protocol/text.ts: the shortcut that lets the hub skip walking a frame for unstorable text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mayHoldUnstorable, unstorablePaths } from '../../protocol/text.ts';
import { seeded } from '../helpers/random.ts';

// Characters that matter here: U+0000, both halves of surrogate pairs alone and paired, other control
// characters JSON escapes as \u00XX, a backslash and a 'u', and ordinary and non-ASCII text.
const ALPHABET = ['\u0000', '\ud800', '\udc00', '\ud83d\ude00', '\u001b', '\u0001', '\\', 'u', '"', 'a', 'é', '✓', ' ', '\n'];

function randomString(rand: () => number): string {
  let s = '';
  for (let n = Math.floor(rand() * 8); n > 0; n--) s += ALPHABET[Math.floor(rand() * ALPHABET.length)];
  return s;
}

function randomValue(rand: () => number, depth = 0): unknown {
  const r = rand();
  if (depth > 3 || r < 0.4) return randomString(rand);
  if (r < 0.5) return Math.floor(rand() * 1e6);
  if (r < 0.75) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(rand() * 4) }, () => [randomString(rand), randomValue(rand, depth + 1)]));
}

test('JSON text without a \\u escape never parses into unstorable text (20,000 random values, keys included)', () => {
  const rand = seeded(17);
  let unstorable = 0;
  let skipped = 0;
  for (let i = 0; i < 20_000; i++) {
    const text = JSON.stringify({ v: randomValue(rand) });
    const found = unstorablePaths(JSON.parse(text));
    if (found.length) unstorable++;
    if (!mayHoldUnstorable(text)) {
      skipped++;
      assert.equal(found, [], text);
    }
  }
  // Both kinds occurred, so the property was exercised both ways.
  assert.ok(unstorable > 1000 && skipped > 1000, `unstorable ${unstorable}, skipped ${skipped}`);
});

test('the escapes that make unstorable text are seen; text decoded from bytes has none of them raw', () => {
  for (const text of ['{"a":"\\u0000"}', '{"\\ud800":1}', '{"a":"x\\udc00"}']) {
    assert.ok(mayHoldUnstorable(text), text);
    assert.is(unstorablePaths(JSON.parse(text)).length, 1, text);
  }
  // Bytes that are not UTF-8 (a lone surrogate's encoding, an overlong NUL) decode to U+FFFD, not to
  // a surrogate or U+0000: a frame decoded from bytes holds them only as escapes.
  const decoded = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0xc0, 0x80, 0x22, 0x7d]).toString('utf8');
  assert.not.ok(mayHoldUnstorable(decoded));
  assert.equal(unstorablePaths(JSON.parse(decoded)), []);
  // A frame holding a U+0000 character raw is not JSON at all.
  assert.throws(() => JSON.parse('{"a":"\u0000"}'));
});

test.run();
