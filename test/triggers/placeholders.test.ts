// Pure placeholder rules (spec: Limits "Placeholder", "Placeholder value", "Rendered args", "Paths used
// in placeholders"): each rule with its own cases, then a seeded property test over thousands of random
// templates and payloads.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { seeded as prng } from '../helpers/random.ts';
import {
  DEFAULT_VALUE_PATTERN,
  MAX_RENDERED_BYTES,
  checkTemplates,
  compileValuePattern,
  lookup,
  parseTemplate,
  renderArgs,
} from '../../protocol/placeholders.ts';
import type { Reason } from '../../protocol/placeholders.ts';

const render = (args: string[], payload: unknown, allowed: string[], pattern = DEFAULT_VALUE_PATTERN) => renderArgs(args, payload, pattern, allowed);
const codes = (r: ReturnType<typeof render>) => (r.ok ? [] : r.reasons.map((x: Reason) => `${x.field}:${x.code}`));

test('a placeholder is replaced by the value at its path; text around it is kept', () => {
  const r = render(['--ref={{payload.ref}}', 'issue #{{payload.issue.number}} by {{payload.user.login}}'], { ref: 'main', issue: { number: 42 }, user: { login: 'ann' } }, ['ref', 'issue.number', 'user.login']);
  assert.equal(r, { ok: true, args: ['--ref=main', 'issue #42 by ann'] });
});

test('args without placeholders pass through unchanged, braces alone included', () => {
  assert.equal(render(['plain', '{ a }', '}{', 'x{y}z', ''], {}, []), { ok: true, args: ['plain', '{ a }', '}{', 'x{y}z', ''] });
});

test('a numeric segment indexes an array; out of range or on a non-array is missing', () => {
  const payload = { commits: [{ id: 'a1' }, { id: 'b2' }], obj: { '0': 'zero-key' } };
  assert.equal(render(['{{payload.commits.1.id}}'], payload, ['commits.1.id']), { ok: true, args: ['b2'] });
  assert.equal(codes(render(['{{payload.commits.2.id}}'], payload, ['commits.2.id'])), ['args.0:missing']);
  assert.equal(codes(render(['{{payload.commits.first}}'], payload, ['commits.first'])), ['args.0:missing']);
  assert.equal(render(['{{payload.obj.0}}'], payload, ['obj.0']), { ok: true, args: ['zero-key'] }, 'a numeric key of an object is a key');
});

test('only own properties: __proto__, constructor, toString are missing unless the payload has them', () => {
  assert.equal(codes(render(['{{payload.constructor}}', '{{payload.toString}}'], {}, ['constructor', 'toString'])), ['args.0:missing', 'args.1:missing']);
  assert.equal(render(['{{payload.__proto__}}'], JSON.parse('{"__proto__":"own"}'), ['__proto__']), { ok: true, args: ['own'] });
});

test('placeholder syntax: exactly {{payload.<path>}} with 1–10 segments of [A-Za-z0-9_-]', () => {
  for (const ok of ['{{payload.a}}', '{{payload.A-b_9}}', `{{payload.${'s.'.repeat(9)}s}}`, 'x{{payload.a}}y{{payload.b}}']) assert.ok(parseTemplate(ok).ok, ok);
  const bad = [
    '{{payload}}', '{{payload.}}', '{{payload.a.}}', '{{payload..a}}', '{{ payload.a }}', '{{payload.a }}', '{{Payload.a}}', '{{event.a}}',
    '{{payload.a|upper}}', '{{payload.a || "x"}}', '{{payload.a + 1}}', '{{payload[0]}}', '{{payload.a b}}', '{{payload.é}}',
    `{{payload.${'s.'.repeat(10)}s}}`, '{{payload.a', 'payload.a}}', '{{', '}}', 'a{{b', 'a}}b', '{{{payload.a}}', '{{payload.a}}}}', '{{{{payload.a}}}}',
  ];
  for (const text of bad) assert.not.ok(parseTemplate(text).ok, text);
});

test('every placeholder path must be in allowedPaths (checked at save time and at render)', () => {
  const { reasons } = checkTemplates(['{{payload.a}}', 'x', '{{payload.b}}{{payload.c}}'], ['a', 'c']);
  assert.equal(reasons.map((r) => [r.field, r.code, r.path]), [['args.2', 'path_not_allowed', 'b']]);
  assert.equal(codes(render(['{{payload.b}}'], { b: 'x' }, ['a'])), ['args.0:path_not_allowed']);
});

test('values: string, number, boolean pass; null, object, array, missing refused', () => {
  assert.equal(render(['{{payload.s}}', '{{payload.n}}', '{{payload.f}}', '{{payload.t}}', '{{payload.z}}'], { s: 'x', n: -1.5, f: false, t: true, z: 0 }, ['s', 'n', 'f', 't', 'z']), {
    ok: true,
    args: ['x', '-1.5', 'false', 'true', '0'],
  });
  const r = render(['{{payload.a}}', '{{payload.b}}', '{{payload.c}}', '{{payload.d}}'], { a: null, b: {}, c: [1] }, ['a', 'b', 'c', 'd']);
  assert.equal(codes(r), ['args.0:not_scalar', 'args.1:not_scalar', 'args.2:not_scalar', 'args.3:missing']);
});

test('a number that JSON turns into Infinity is refused', () => {
  assert.equal(codes(render(['{{payload.n}}'], JSON.parse('{"n":1e400}'), ['n'])), ['args.0:not_scalar']);
});

test('values at most 500 characters once stringified (code points), checked before the pattern', () => {
  assert.ok(render(['{{payload.v}}'], { v: 'a'.repeat(500) }, ['v']).ok);
  assert.equal(codes(render(['{{payload.v}}'], { v: 'a'.repeat(501) }, ['v'])), ['args.0:too_long']);
  assert.ok(render(['{{payload.v}}'], { v: '😀'.repeat(500) }, ['v'], '.*').ok, '500 astral characters are 500 characters');
  assert.equal(codes(render(['{{payload.v}}'], { v: 1e21 }, ['v'], '.{0,3}')), ['args.0:pattern'], 'numbers are stringified first');
});

test('the default value pattern forbids backticks, $, parentheses, quotes, ;, |, &, angle brackets, newlines', () => {
  for (const ch of ['`', '$', '(', ')', '"', "'", ';', '|', '&', '<', '>', '\n', '\r', '\\', '{', '}', '*', '?', '!', '=', '%', '~', '[', ']', '\t']) {
    assert.equal(codes(render(['{{payload.v}}'], { v: `a${ch}b` }, ['v'])), ['args.0:pattern'], JSON.stringify(ch));
  }
  assert.ok(render(['{{payload.v}}'], { v: 'feature/x-1 v1.2: #7 @ann +ok, fine_ok' }, ['v']).ok);
});

test('a custom pattern must match the whole value; NUL and lone surrogates are refused whatever it says', () => {
  assert.equal(codes(render(['{{payload.v}}'], { v: 'abc1' }, ['v'], '[a-z]+')), ['args.0:pattern'], 'unanchored patterns still match the whole value');
  assert.ok(render(['{{payload.v}}'], { v: 'abc' }, ['v'], '[a-z]+').ok);
  assert.equal(codes(render(['{{payload.v}}'], { v: 'a\0b' }, ['v'], '[\\s\\S]*')), ['args.0:unstorable']);
  assert.equal(codes(render(['{{payload.v}}'], { v: 'a\ud800b' }, ['v'], '[\\s\\S]*')), ['args.0:unstorable']);
});

test('value patterns: what RE2 cannot compile does not compile (test/triggers/pattern.test.ts has the rest)', () => {
  assert.ok(compileValuePattern(DEFAULT_VALUE_PATTERN));
  for (const bad of ['(', '[a-', '(a)\\1', '(?=a)', 'a{2,1}']) assert.is(compileValuePattern(bad), null, bad);
  assert.equal(codes(render(['x'], {}, [], '(')), ['valuePattern:syntax']);
});

test('rendered args at most 4096 bytes of UTF-8 in all', () => {
  const v = 'a'.repeat(500);
  const args = Array.from({ length: 8 }, () => '{{payload.v}}'); // 4000 bytes
  assert.ok(render([...args, 'x'.repeat(96)], { v }, ['v']).ok);
  assert.equal(codes(render([...args, 'x'.repeat(97)], { v }, ['v'])), ['args:too_large']);
  assert.equal(codes(render(['é'.repeat(2049)], {}, [])), ['args:too_large'], 'bytes, not characters');
  const fixed = checkTemplates(['x'.repeat(MAX_RENDERED_BYTES + 1)], []);
  assert.equal(fixed.reasons.map((r) => r.code), ['too_large'], 'text alone over the limit is refused at save time');
});

test('every reason is reported, not only the first', () => {
  const r = render(['{{payload.a}}', '{{payload.b}}{{payload.c}}'], { a: '$x', b: null }, ['a', 'b', 'c']);
  assert.equal(codes(r), ['args.0:pattern', 'args.1:not_scalar', 'args.1:missing']);
});

test('lookup walks 10,000-deep payloads without recursion (only up to 10 segments are followed)', () => {
  let deep: unknown = 'bottom';
  for (let i = 0; i < 10_000; i++) deep = { a: deep };
  assert.equal(lookup(deep, 'a.a.a'), { found: true, value: ((deep as any).a.a.a) });
  assert.equal(codes(render(['{{payload.a.a}}'], deep, ['a.a'])), ['args.0:not_scalar']);
});

// ---- property test ----

test('property: 5,000 seeded random templates × payloads never throw, never exceed a limit, never pass a character outside the pattern', () => {
  const rnd = prng(20240613);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const alphabet = ['a', 'Z', '0', '_', '-', '.', ' ', '{', '}', '{{', '}}', '$', '`', '(', ';', '|', '\n', 'é', '😀', '\0', '\ud800', '"', '#', '/', ':', '@', '+', ','];
  const keys = ['a', 'b', 'c', '0', '1', '__proto__', 'x-y', 'Z_9'];
  const randomText = (max: number) => Array.from({ length: Math.floor(rnd() * max) }, () => pick(alphabet)).join('');
  const randomValue = (depth: number): unknown => {
    const k = rnd();
    if (depth > 3 || k < 0.35) return randomText(rnd() < 0.05 ? 700 : 20);
    if (k < 0.45) return Math.floor(rnd() * 1e6) * (rnd() < 0.5 ? -1 : 1) / (rnd() < 0.5 ? 1 : 7);
    if (k < 0.5) return rnd() < 0.5;
    if (k < 0.55) return null;
    if (k < 0.75) return Array.from({ length: Math.floor(rnd() * 4) }, () => randomValue(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, () => [pick(keys), randomValue(depth + 1)]));
  };
  const randomPath = () => Array.from({ length: 1 + Math.floor(rnd() * (rnd() < 0.1 ? 13 : 4)) }, () => pick(keys)).join('.');
  const patterns = [DEFAULT_VALUE_PATTERN, '[a-z0-9]*', '.*', '[\\s\\S]*', '\\d+', '(', '(a+)+'];
  let fired = 0;
  let refused = 0;
  for (let i = 0; i < 5000; i++) {
    const paths = Array.from({ length: 1 + Math.floor(rnd() * 4) }, randomPath);
    const args = Array.from({ length: Math.floor(rnd() * 6) }, () =>
      Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => (rnd() < 0.5 ? `{{payload.${pick(paths)}}}` : randomText(rnd() < 0.05 ? 2000 : 10))).join(''),
    );
    const allowed = paths.filter(() => rnd() < 0.8);
    const pattern = pick(patterns);
    const payload = randomValue(0);
    let result;
    try {
      result = renderArgs(args, payload, pattern, allowed);
    } catch (err) {
      assert.unreachable(`threw on case ${i}: ${String(err)}`);
      return;
    }
    if (!result.ok) {
      refused++;
      assert.ok(result.reasons.length > 0);
      continue;
    }
    fired++;
    const compiled = compileValuePattern(pattern)!;
    assert.ok(result.args.reduce((n, a) => n + Buffer.byteLength(a), 0) <= MAX_RENDERED_BYTES, `case ${i}: rendered too large`);
    // Every substituted value matched the pattern and the limits: re-derive each from the template.
    args.forEach((template, n) => {
      const parsed = parseTemplate(template);
      assert.ok(parsed.ok);
      if (!parsed.ok) return;
      let rebuilt = '';
      for (const part of parsed.template) {
        if (typeof part === 'string') rebuilt += part;
        else {
          assert.ok(allowed.includes(part.path), `case ${i}: path not allowed got through`);
          const value = String(lookup(payload, part.path).found ? (lookup(payload, part.path) as { value: unknown }).value : '');
          assert.ok(compiled.test(value), `case ${i}: ${JSON.stringify(value)} is outside ${pattern}`);
          assert.ok([...value].length <= 500);
          assert.not.match(value, /\0/);
          rebuilt += value;
        }
      }
      assert.is(result.args[n], rebuilt);
    });
  }
  assert.ok(fired > 200 && refused > 200, `both outcomes exercised (fired ${fired}, refused ${refused})`);
});

test.run();
