// `npm ci` on the oldest Node the README names installs every package without an "unsupported engine"
// warning: each engines.node range in package-lock.json admits package.json's minimum (README, Quick start).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../helpers/db.ts';

type Version = [number, number, number];
const parse = (v: string): Version => {
  // `x` or `*` in a part (`>=0.6.x`, tsscmp's) is its lowest value, as npm's semver reads it in a lower bound.
  const m = /^v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/.exec(v.trim());
  if (!m) throw new Error(`not a version: "${v}"`);
  const part = (p: string | undefined) => (p === undefined || p === 'x' || p === '*' ? 0 : Number(p));
  return [Number(m[1]), part(m[2]), part(m[3])];
};
const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** The range forms npm packages use for engines.node: `>=X`, `^X`, `X - Y`, and `||` between them. */
function satisfies(version: Version, range: string): boolean {
  return range.split('||').some((alt) => {
    const a = alt.trim();
    if (a === '*' || a === '') return true;
    const ge = /^>=\s*(\S+)$/.exec(a);
    if (ge) return cmp(version, parse(ge[1])) >= 0;
    const caret = /^\^\s*(\S+)$/.exec(a);
    if (caret) {
      const low = parse(caret[1]);
      return version[0] === low[0] && cmp(version, low) >= 0;
    }
    throw new Error(`engines range form not understood: "${a}" (teach this test, do not drop the check)`);
  });
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
const minimum = parse(/^>=\s*(\S+)$/.exec(pkg.engines.node)![1]);

test('the range reader: >=, ^ and ||', () => {
  assert.ok(satisfies([20, 6, 0], '^18.19.0 || >=20.6.0'));
  assert.not.ok(satisfies([20, 5, 0], '^18.19.0 || >=20.6.0'));
  assert.not.ok(satisfies([20, 19, 0], '>=22.15.0'));
  assert.ok(satisfies([20, 6, 0], '>=0.6.x'));
  assert.not.ok(satisfies([0, 5, 9], '>=0.6.x'));
});

test(`every locked package supports Node ${minimum.join('.')}, the README's minimum`, () => {
  const refused = Object.entries(lock.packages as Record<string, { engines?: { node?: string } }>)
    .filter(([, p]) => typeof p.engines?.node === 'string' && !satisfies(minimum, p.engines.node))
    .map(([name, p]) => `${name} (${p.engines!.node})`);
  assert.equal(refused, []);
});

test('the README names the same minimum as package.json', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  assert.ok(readme.includes(`Node.js ${minimum[0]}.${minimum[1]} or newer`), `README says "Node.js ${minimum[0]}.${minimum[1]} or newer"`);
});

test.run();
