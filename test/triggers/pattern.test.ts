// Value patterns are matched by RE2 (protocol/pattern.ts, issue #33): patterns that freeze a
// backtracking engine answer long values at once; what RE2 cannot compile is refused with its reason;
// the default pattern keeps its meaning; one payload's values get a bounded matching time in all.
// Timings are printed and asserted generously (this machine is shared): the figure wanted is < 50 ms.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as placeholders from '../../protocol/placeholders.ts';
import type { Template } from '../../protocol/placeholders.ts';
import { MAX_PATTERN_SIZE } from '../../protocol/pattern.ts';

// A namespace import: run against the code before RE2, each test fails on its own rather than the import.
const { DEFAULT_VALUE_PATTERN, MATCH_BUDGET_MS, compileValuePattern, parseTemplate, render, renderArgs, valuePatternProblem } = placeholders;

/** Patterns that take exponential time in a backtracking engine, with values that make them backtrack. */
export const HOSTILE: Record<string, (n: number) => string[]> = {
  '(a*)*$': (n) => ['a'.repeat(n), `${'a'.repeat(n - 1)}!`],
  '(x+x+)+y': (n) => ['x'.repeat(n), `${'x'.repeat(n - 1)}!`, `y${'x'.repeat(n - 1)}`],
  '(a|a)*b': (n) => ['a'.repeat(n), `${'a'.repeat(n - 1)}!`],
  '((a+))+': (n) => ['a'.repeat(n), `${'a'.repeat(n - 1)}!`],
};

const ms = <T>(f: () => T) => {
  const t = performance.now();
  const result = f();
  return { result, ms: performance.now() - t };
};

test('each hostile pattern compiles and answers a 10,000-character value in well under a second', () => {
  for (const [pattern, values] of Object.entries(HOSTILE)) {
    const compiled = compileValuePattern(pattern);
    assert.ok(compiled, `${pattern} compiles`);
    for (const value of values(10_000)) {
      const run = ms(() => compiled!.test(value));
      console.log(`  ${pattern} on ${value.length} characters (…${JSON.stringify(value.slice(-2))}): ${run.ms.toFixed(2)} ms → ${run.result}`);
      assert.ok(run.ms < 1000, `${pattern}: ${run.ms} ms`);
    }
  }
  // The verdicts are RE2's full match, the same as the old `^(?:pattern)$`.
  assert.ok(compileValuePattern('((a+))+')!.test('a'.repeat(10_000)));
  assert.not.ok(compileValuePattern('(a|a)*b')!.test('a'.repeat(10_000)));
  assert.ok(compileValuePattern('(a|a)*b')!.test(`${'a'.repeat(9_999)}b`));
});

test('what RE2 cannot compile is refused with its reason: backreferences, lookaround, bad syntax', () => {
  const cases: Record<string, RegExp> = {
    '(a)\\1': /invalid escape sequence: `\\1`/,
    '(?=a)': /unsupported Perl syntax: `\(\?=`/,
    '(?!a)': /unsupported Perl syntax: `\(\?!`/,
    '(?<=a)b': /invalid named capture/,
    '(': /missing closing \)/,
    '[a-': /missing closing \]/,
    'a{2,1}': /invalid repeat count/,
    'a++': /invalid nested repetition/,
  };
  for (const [pattern, reason] of Object.entries(cases)) {
    assert.is(compileValuePattern(pattern), null, pattern);
    const problem = valuePatternProblem(pattern) ?? '';
    assert.match(problem, /RE2/, pattern);
    assert.match(problem, reason, `${pattern}: ${problem}`);
  }
  assert.is(valuePatternProblem(DEFAULT_VALUE_PATTERN), null);
  // A trigger saved before RE2 with such a pattern refuses deliveries, naming the reason.
  const r = renderArgs(['x'], {}, '(a)\\1', []);
  assert.ok(!r.ok && r.reasons[0].field === 'valuePattern' && /invalid escape sequence/.test(r.reasons[0].message));
});

test('a pattern larger than the program limit is refused: its size bounds the cost of a value', () => {
  assert.ok(compileValuePattern('[a-z]{1,400}'), 'an ordinary bounded repeat fits');
  assert.is(compileValuePattern('.{0,500}.{0,500}'), null);
  assert.match(valuePatternProblem('.{0,500}.{0,500}') ?? '', new RegExp(`too large: it compiles to \\d+ instructions, at most ${MAX_PATTERN_SIZE}`));
});

test('the default pattern means exactly what it meant: every code point against the JavaScript pattern', () => {
  const re2 = compileValuePattern(DEFAULT_VALUE_PATTERN)!;
  const js = new RegExp(`^(?:${DEFAULT_VALUE_PATTERN})$`, 'u');
  const differ: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp += cp < 0x30000 ? 1 : 97) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    for (const v of [c, `ab${c}`, `${c}-1`]) if (re2.test(v) !== js.test(v)) differ.push(cp.toString(16));
  }
  assert.equal(differ, []);
  for (const ok of ['feature/x-1 v1.2: #7 @ann +ok, fine_ok', '']) assert.ok(re2.test(ok), ok);
  for (const bad of ['a;b', 'a$b', 'é', 'a\nb', '`x`', 'a|b']) assert.not.ok(re2.test(bad), bad);
});

test('ordinary patterns keep their meaning: the whole value must match, ASCII \\w \\d \\b', () => {
  const cases: [string, string, boolean][] = [
    ['[a-z]+', 'abc', true],
    ['[a-z]+', 'abc1', false], // unanchored patterns still match the whole value
    ['a|ab', 'ab', true],
    ['\\d{1,5}', '12345', true],
    ['\\d{1,5}', '١٢', false], // Arabic-Indic digits are not \d in either engine
    ['\\w+', 'naïve', false],
    ['\\bfoo\\b.*', 'foo bar', true],
    ['(?i)main', 'MAIN', true],
    ['\\p{L}+', 'été', true],
    ['.', '😀', true], // one code point, as in Unicode mode
    ['(?P<n>x)|(?<m>y)', 'y', true],
  ];
  for (const [pattern, value, want] of cases) {
    assert.is(compileValuePattern(pattern)!.test(value), want, `${pattern} on ${value}`);
    if (!pattern.includes('(?i)') && !pattern.includes('(?P')) assert.is(new RegExp(`^(?:${pattern})$`, 'u').test(value), want, `JS agrees: ${pattern}`);
  }
});

const templatesFor = (paths: string[]): Template[] => paths.map((p) => (parseTemplate(`{{payload.${p}}}`) as { ok: true; template: Template }).template);

test('one payload gets a bounded matching time: values beyond the budget are refused unchecked', () => {
  assert.is(typeof MATCH_BUDGET_MS, 'number');
  // A clock that says each match took 60 ms: a and b are matched (60, then 120 ms spent), c is not.
  let t = 0;
  const paths = ['a', 'b', 'c', 'd'];
  const payload = { a: 'x1', b: 'x2', c: 'x3', d: 'x1' };
  const r = render(templatesFor(paths), payload, compileValuePattern('x\\d')!, paths, () => (t += 60));
  assert.ok(!r.ok);
  if (r.ok) return;
  assert.equal(r.reasons.map((x) => `${x.field}:${x.code}`), ['args.2:pattern']);
  assert.match(r.reasons[0].message, /payload\.c was not checked: .* over 100 ms/);
  // d repeats a's value: its verdict is reused, not matched again, so it is not refused.

  // A real pattern that defeats RE2's DFA, on 100 distinct 500-character values (~4 s unbounded).
  const many = Array.from({ length: 100 }, (_, i) => `v${i}`);
  let seed = 7;
  const letter = () => 'ab '[(seed = (seed * 48271) % 2147483647) % 3];
  const values = Object.fromEntries(many.map((p) => [p, Array.from({ length: 500 }, letter).join('')]));
  const run = ms(() => render(templatesFor(many), values, compileValuePattern('(?:.{0,40}\\b){10}')!, many));
  const reasons = run.result.ok ? [] : run.result.reasons;
  console.log(`  100 values of 500 characters, a DFA-hostile pattern: ${run.ms.toFixed(0)} ms, ${reasons.filter((x) => /not checked/.test(x.message)).length} values unchecked`);
  assert.ok(run.ms < 2000, `${run.ms} ms`);
  assert.ok(reasons.some((x) => /not checked/.test(x.message)));
});

test.run();
